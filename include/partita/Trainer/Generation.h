//===- Generation.h - Text from a trained model, with a KV cache -*- C++
//-*-===//
//
// `partita generate` and the rollouts of reinforcement learning: a prefill
// program runs the prompts once and returns every layer's keys and values;
// a decode program then takes one token per row and the caches, writes the
// new position into them and returns the next token's logits. Both are
// compiled for the run's mesh and rules like any program (rows over the
// batch axes, key/value heads over the model axis) and run on the emulated
// devices, the caches staying as device blocks between steps
// (docs/Training.md, "Generation").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRAINER_GENERATION_H
#define PARTITA_TRAINER_GENERATION_H

#include "partita/Runtime/Training/Sampling.h"
#include "partita/Trainer/Trainer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace partita {

/// One batch's generation.
struct GeneratedRows {
  /// Per prompt: its new tokens.
  std::vector<std::vector<int32_t>> tokens;
  /// With keepLogits, per prompt and new token: the logits it was drawn
  /// from (the model's, before the temperature).
  std::vector<std::vector<std::vector<float>>> logits;
  /// Wall time of the prefill and of the decode steps; decode steps run.
  double prefillSeconds = 0, decodeSeconds = 0;
  int64_t decodeSteps = 0;
};

/// A model's prefill and decode programs, compiled for a layout, with its
/// parameters on the devices.
class Generator {
public:
  /// Compiles the programs of `model`'s config (gpt, unrolled) for its
  /// mesh, rules and devices, `model.config.batch` rows per run.
  static Expected<std::unique_ptr<Generator>> create(Session &session,
                                                     const TrainRequest &model);
  /// Hands the parameters (global arrays in the train step's order) to
  /// the devices, laid out as each program takes them.
  Status setParameters(const std::vector<HostArray> &params);
  /// Generates after each of `prompts` (at most rows() of them; each at
  /// least one token, shorter than the sequence). `firstIndex` is the
  /// first prompt's index for the draws.
  Expected<GeneratedRows>
  generate(const std::vector<std::vector<int32_t>> &prompts,
           const SamplingOptions &sampling, int64_t firstIndex,
           bool keepLogits = false);
  int64_t rows() const { return config.batch; }
  int64_t sequence() const { return config.seq; }
  const Executable &prefill() const { return prefillProgram; }
  const Executable &decode() const { return decodeProgram; }
  /// The parameter blocks it keeps on the host (every device's).
  int64_t heldBytes() const;
  /// "KV cache: 2 layers x keys and values [8, 64, 4, 16] f32, 256.0 KiB
  /// in all, 32.0 KiB per device (rows over data, heads over model)".
  std::string describeCache() const;

private:
  Generator() = default;
  Status run(const Executable &program,
             const std::vector<std::vector<HostArray>> &params,
             std::vector<std::vector<HostArray>> &dataBlocks,
             std::vector<std::vector<HostArray>> &outputs);
  ModelConfig config;
  Executable prefillProgram, decodeProgram;
  /// Each program's parameter blocks, by device then parameter.
  std::vector<std::vector<HostArray>> prefillParams, decodeParams;
  /// Which program inputs are parameters (in order).
  std::vector<size_t> prefillParamIndex, decodeParamIndex;
};

/// `partita generate`: what was asked.
struct GenerateRequest {
  /// The model and layout (the checkpoint's model, the flags' mesh).
  TrainRequest model;
  std::string checkpoint, prompts, output;
  SamplingOptions sampling;
  /// Compare every cached logit with the uncached forward pass on one
  /// device.
  bool check = false;
};

/// Loads the checkpoint, generates after every prompt and writes 'prompt |
/// new tokens' lines; with `check`, fails when a cached decode step's
/// logits differ from the whole-sequence forward pass's.
Status generateText(const GenerateRequest &request);

} // namespace partita

#endif // PARTITA_TRAINER_GENERATION_H
