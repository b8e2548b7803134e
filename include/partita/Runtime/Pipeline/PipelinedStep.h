//===- PipelinedStep.h - A train step cut into pipeline stages --*- C++ -*-===//
//
// What the compiler hands the runtime for pipeline parallelism
// (docs/Pipeline.md): per stage, an SPMD program for the forward pass of one
// micro-batch, one for its backward pass (with the weight gradients split
// off into a third when the schedule wants them apart), and the stage's
// optimizer step; where each program's inputs come from; and the schedule
// that orders the micro-batches' work on each pipeline rank. No MLIR: the
// runtime runs it from this description alone.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEP_H
#define PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEP_H

#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Runtime/Program/Executable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

/// The programs of a stage, per micro-batch (Update runs once per step).
enum class StageProgramKind : uint8_t { Forward, Backward, WeightGrad };

/// "forward", "backward" or "weight_grad" (file names, step.json, messages).
const char *stageProgramName(StageProgramKind kind);

/// Where one input of a stage program comes from.
struct StageInput {
  enum class Kind : uint8_t {
    /// The stage's parameter `index` (input `index` of its update program).
    Param,
    /// The micro-batch's rows of the step's data input `index`.
    Data,
    /// Output `index` of `program` of `stage`, for the same micro-batch:
    /// an activation sent from an earlier stage, a gradient sent back from
    /// a later one, or what this stage's forward pass saved for its
    /// backward pass.
    Output,
    /// The loss's cotangent, 1 / micro-batches (the last stage's backward).
    Seed,
    /// The stage's gradient sum `index` over the micro-batches so far
    /// (zeros before the first).
    Accumulator,
  };
  Kind kind = Kind::Param;
  int32_t stage = 0;
  StageProgramKind program = StageProgramKind::Forward;
  int32_t index = 0;
};

/// One program of a stage and the sources of its inputs.
struct StageProgram {
  Executable executable;
  /// One per executable input.
  std::vector<StageInput> inputs;
  /// Per executable output: the accumulator it replaces, or -1.
  std::vector<int32_t> accumulatorOf;
  /// False for a program with nothing to do (a first stage's input
  /// gradient); the runtime skips it.
  bool present = true;
};

/// A stage of the pipeline: a contiguous part of the model, an SPMD
/// program over its pipeline rank's sub-mesh.
struct PipelineStage {
  StageProgram forward, backward, weightGrad;
  /// The stage's optimizer step, a train step (TrainLoop.h's layout): its
  /// first inputs are the stage's parameters; its data inputs are the
  /// gradient sums, one per parameter.
  Executable update;
  /// Under gradient clipping (docs/Pipeline.md, "Clipping"): the program
  /// that takes the stage's gradient sums (as the update does) and returns
  /// their Σ g² as an f32 scalar, and the update's input that takes the sum
  /// over every stage (-1: no clipping).
  Executable norm;
  int32_t normInput = -1;
  /// Index among the whole model's parameters of each stage parameter (the
  /// order of the non-pipelined train step's inputs).
  std::vector<int64_t> paramIndex;
  /// FLOPs of the stage's forward pass for one micro-batch.
  int64_t forwardFlops = 0;
  /// Names of the layers (or ops) the stage holds, for the report.
  std::string summary;
};

/// A pipelined train step.
struct PipelinedStep {
  std::vector<PipelineStage> stages;
  PipelineSchedule schedule;
  /// The step's data inputs (the whole batch; micro-batch i takes rows i,
  /// i + M, i + 2M, ... as the non-pipelined step's accumulation loop does).
  std::vector<std::vector<int64_t>> dataShapes;
  std::vector<DType> dataTypes;
  /// The loss of one micro-batch: output `lossOutput` of the last stage's
  /// forward program.
  int32_t lossOutput = 0;
  /// Devices per pipeline rank (each rank's sub-mesh).
  int64_t devicesPerRank = 1;
};

} // namespace partita

#endif // PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEP_H
