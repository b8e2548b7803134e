//===- PipelineRun.h - Running a pipelined train step -----------*- C++ -*-===//
//
// Runs a PipelinedStep on emulated CPU devices (docs/Pipeline.md): one
// thread per pipeline rank works through its schedule in order, running
// each stage program as an SPMD program on the rank's devices and waiting
// for the activations and gradients other ranks send; after the last
// micro-batch every stage applies its optimizer step to its own
// parameters. Every action is timed, so the measured timeline, bubbles and
// activation memory come out of the same run. Under mpirun the ranks are
// dealt out to the processes (PipelinePeers.h).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PIPELINE_PIPELINERUN_H
#define PARTITA_RUNTIME_PIPELINE_PIPELINERUN_H

#include "partita/Runtime/Pipeline/PipelinePeers.h"
#include "partita/Runtime/Pipeline/PipelinedStep.h"
#include "partita/Runtime/Training/Checkpoint.h"

#include <functional>
#include <memory>
#include <vector>

namespace partita {

/// What one pipelined step did.
struct PipelineStepResult {
  /// The mean of the micro-batches' losses.
  double loss = 0;
  double seconds = 0;
  /// Every action with its start and end in seconds from the step's start.
  ScheduleTimeline timeline;
  /// Per rank: the most bytes it held at once of values kept for a later
  /// program (activations saved for the backward pass, activations and
  /// gradients sent on and not yet used).
  std::vector<int64_t> peakHeldBytes;
};

/// Runs one stage program of pipeline rank `rank` on that rank's devices:
/// global inputs in, global outputs out. A partial-sum input must go whole
/// to its group's first member (PartialInputs::FirstMember), or rounding
/// noise enters the fed-back gradient sums. Default: CPU device threads.
using PipelineProgramRunner = std::function<Expected<std::vector<HostArray>>(
    const Executable &program, const std::vector<HostArray> &inputs,
    int rank)>;

/// A pipelined train step with its parameters and optimizer state.
class PipelineRunner {
public:
  /// Parameters start as the non-pipelined train step's with the same
  /// `seed` (randomInput by the whole model's parameter index); optimizer
  /// state at zero. Fails when the step's programs do not fit together.
  /// With `peers` (kept, not owned) this process runs only its own ranks
  /// and holds only their stages' parameters; the process count must
  /// divide the pipeline ranks.
  static Expected<std::unique_ptr<PipelineRunner>>
  create(const PipelinedStep &step, uint64_t seed,
         PipelinePeers *peers = nullptr);

  /// Runs step `stepNumber` (the optimizer's step count) on `data`, the
  /// step's data inputs holding the whole batch, each program through
  /// `run` (empty: CPU device threads). With peers every process must
  /// call it with the same data; process 0's result describes the whole
  /// step (the loss, every rank's timeline and peak), the others' only
  /// their own ranks. `learningRate` is the step's rate where the updates
  /// take it as an input (compiled for a schedule: learning rate 0).
  Expected<PipelineStepResult> runStep(int64_t stepNumber,
                                       const std::vector<HostArray> &data,
                                       const PipelineProgramRunner &run = {},
                                       double learningRate = 0);

  /// The mean loss of the model with the current parameters on `data` (a
  /// step's data inputs): the stages' forward programs only, in the
  /// schedule's order, nothing kept for a backward pass and the parameters
  /// left as they are. With peers every process must call it; process 0's
  /// result is the loss.
  Expected<double> evaluate(const std::vector<HostArray> &data,
                            const PipelineProgramRunner &run = {});

  /// The parameters, in the whole model's order (with peers, those of
  /// other processes' stages are empty).
  std::vector<HostArray> parameters() const;

  /// This process's stages' parameters, gradient buffers and optimizer
  /// state as checkpoint values (whole arrays), keyed as the non-pipelined
  /// train step keys them: "param/i" and "grad/i" by the whole model's
  /// parameter index i, "opt_state/(m·P + i)" for state group m of P
  /// parameters. A checkpoint moves between pipelined and non-pipelined
  /// layouts (docs/Training.md, "Checkpoints").
  std::vector<CheckpointValue> checkpointValues() const;
  /// Loads `checkpoint` into this process's stages (with `onlyRole`, that
  /// role's tensors only). Errors name the checkpoint and the tensor.
  Status loadCheckpoint(const CheckpointInfo &checkpoint,
                        const std::string &onlyRole = "");

  /// Bytes of parameters, gradient buffers and optimizer state each rank's
  /// devices hold between steps (per device).
  std::vector<int64_t> persistentBytesPerDevice() const;

  ~PipelineRunner();

private:
  PipelineRunner() = default;
  struct State;
  /// One step's run (PipelineRun.cpp).
  struct StepRun;
  std::unique_ptr<State> state;
};

} // namespace partita

#endif // PARTITA_RUNTIME_PIPELINE_PIPELINERUN_H
