//===- Sampling.h - Choosing the next token ---------------------*- C++ -*-===//
//
// Generation's host side, without MLIR: how the next token is drawn from a
// row of logits (greedy, temperature, top-k, nucleus), the draws as a pure
// function of (seed, prompt, step) so that any batch, mesh or device count
// draws the same, and the prompt files `partita generate` reads
// (docs/Training.md, "Generation").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TRAINING_SAMPLING_H
#define PARTITA_RUNTIME_TRAINING_SAMPLING_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

/// How the next token is chosen from its logits.
struct SamplingOptions {
  /// New tokens per row, at most (a row also stops at `eos`, and where
  /// the model's sequence length ends).
  int64_t maxNewTokens = 16;
  /// 0: greedy (the most likely token; the lowest id among ties). Else the
  /// logits are divided by it before the softmax.
  double temperature = 0;
  /// Sample among the `topK` most likely tokens only (0: all).
  int64_t topK = 0;
  /// Then among the fewest most likely tokens whose probabilities sum to
  /// at least `topP` (nucleus sampling; 1: all).
  double topP = 1;
  /// Every draw is a function of (seed, the prompt's index, the new
  /// token's index): the same for any batch size, mesh or device count.
  uint64_t seed = 0;
  /// A token that ends its row (-1: none).
  int64_t eos = -1;
};

/// The next token from `logits` (one row, `count` values) by `sampling`,
/// `uniform` in [0, 1) its draw.
int32_t chooseToken(const float *logits, int64_t count,
                    const SamplingOptions &sampling, double uniform);

/// The draw for prompt `prompt`'s new token `step` under `seed`, in [0, 1).
double samplingUniform(uint64_t seed, int64_t prompt, int64_t step);

/// Prompts from a file: one per line, token ids separated by spaces; a '|'
/// ends the prompt (the rest of the line is ignored, so SFT and preference
/// data serve). Errors name the file and line.
Expected<std::vector<std::vector<int32_t>>>
readPrompts(const std::string &path, int64_t vocab, int64_t seq);

} // namespace partita

#endif // PARTITA_RUNTIME_TRAINING_SAMPLING_H
