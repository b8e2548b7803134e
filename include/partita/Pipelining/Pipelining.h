//===- Pipelining.h - Cutting a train step into pipeline stages -*- C++ -*-===//
//
// Pipeline parallelism (docs/Pipeline.md): a loss function is cut into
// stages, each a contiguous part of the model that runs as an SPMD program
// on the sub-mesh of one pipeline rank. Each stage's forward and backward
// passes (and, for zero-bubble schedules, its weight gradients) become
// separate programs, sliced out of the stage's gradient function, so that
// a schedule can interleave micro-batches; the optimizer step of each stage
// is the train-step builder's. The result is a PipelinedStep the runtime
// runs without MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PIPELINING_PIPELINING_H
#define PARTITA_PIPELINING_PIPELINING_H

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Runtime/Pipeline/PipelinedStep.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Autodiff.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <vector>

namespace partita {

/// The attribute that puts a top-level op of a loss function in a stage.
constexpr const char *kStageAttrName = "partita.stage";

/// Which stage each top-level op of a loss function belongs to.
struct StageAssignment {
  int stages = 0;
  /// The body's ops (terminator excluded), in order, and each one's stage.
  /// Ops without operands (constants, iota) are copied into every stage
  /// that uses them; their entry is the stage of their first user.
  std::vector<mlir::Operation *> ops;
  std::vector<int> stageOf;
  /// Forward FLOPs of each stage.
  std::vector<int64_t> flops;
  /// True when `partita.stage` annotations placed the ops.
  bool annotated = false;
};

/// Places `loss`'s ops in `stages` stages. With `partita.stage` annotations
/// on top-level ops, those say where (an op without one joins the op
/// before it); otherwise whole layers (ops named `layerN.…`, with what
/// comes before the first layer and after the last as units of their own,
/// or single ops when nothing is named) are cut into contiguous stages
/// minimizing the largest stage's FLOPs. Errors are emitted at the op (or
/// the function) and returned as an empty message: a stage with no ops, an
/// annotation out of range or inside a region (it cannot cut a loop or a
/// manual computation), an op using a value from a later stage, fewer units
/// than stages.
Expected<StageAssignment> assignStages(mlir::func::FuncOp loss, int stages);

/// Writes the assignment onto the ops as `partita.stage` attributes (what
/// `partita gen --pp` shows).
void annotateStages(const StageAssignment &assignment);

/// How to compile a pipelined train step.
struct PipelineCompileOptions {
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int ranks = 2;
  int virtualStages = 1;
  int64_t microBatches = 1;
  /// The optimizer and the activation checkpointing policy of each stage's
  /// backward pass (its micro-batch field is not used).
  TrainStepOptions optimizer;
  /// Rules, cost model and how far to compile each stage program (the
  /// mesh is the loss module's: one pipeline rank's sub-mesh).
  PipelineOptions passes;
  LoweringOptions lowering;
  /// The devices of one pipeline rank (its sub-mesh); 1 compiles each
  /// program unpartitioned.
  int64_t devicesPerRank = 1;
  /// When set, each stage program is also written there, as the module the
  /// passes start from (`<function>.mlir`), to be compiled or run alone.
  std::string programsDirectory;
};

/// Compiles the loss function `loss` (its module's mesh is one rank's
/// sub-mesh; its data arguments hold one micro-batch) into a pipelined
/// train step. Diagnostics go to the context's handler; the returned
/// message is empty when they were emitted there.
Expected<PipelinedStep> compilePipelined(mlir::func::FuncOp loss,
                                         const PipelineCompileOptions &options);

} // namespace partita

#endif // PARTITA_PIPELINING_PIPELINING_H
