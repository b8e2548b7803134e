//===- PlanPipelined.h - What a pipelined layout costs ----------*- C++ -*-===//
//
// partita plan's figures for a layout with pipeline parallelism
// (docs/Planning.md, "Pipeline parallelism").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_PLANPIPELINED_H
#define PARTITA_PLANNING_PLANPIPELINED_H

#include "partita/Planning/StepCost.h"

#include "partita/Models/Models.h"
#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/Diagnostics.h"

#include <functional>
#include <map>
#include <string>

namespace partita {

/// While alive, keeps the first error a compile in `context` reports and
/// prints none (plan compiles many layouts; their failures are listed).
class FirstError {
public:
  explicit FirstError(mlir::MLIRContext &context);
  /// The first error's text, or "(no message)".
  std::string message() const;

private:
  std::string first;
  mlir::ScopedDiagnosticHandler handler;
};

/// A pipelined layout: `ranks` pipeline ranks of `rankMesh` each, a
/// schedule over `microBatches` micro-batches of `microConfig.batch`
/// sequences.
struct PipelinedRequest {
  ModelConfig microConfig;
  Mesh rankMesh;
  int64_t ranks = 2;
  int64_t microBatches = 2;
  /// 1F1B, zero-bubble (ZB-H1) or interleaved with `virtualStages` chunks
  /// per rank.
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int64_t virtualStages = 1;
  Remat remat = Remat::None;
  std::string rules;
  /// The per-axis links the passes cost collectives with (the rank's
  /// axes).
  std::shared_ptr<const Interconnect> interconnect;
  /// The link between neighbouring ranks.
  AxisLink pipeLink;
};

struct PipelinedEstimate {
  double memory = 0; // bytes per device, estimated
  double computeSeconds = 0, commSeconds = 0;
  double bubble = 0; // the simulated schedule's idle fraction
  int64_t collectives = 0;
  std::map<std::string, int64_t> byRole;
};

/// Prices one compiled program: (compute, communication) seconds.
using ProgramSeconds =
    std::function<std::pair<double, double>(const Executable &)>;

/// What one stage of a compiled pipelined step costs and holds.
struct StageFigures {
  /// Its actions for one micro-batch: with communication (collectives
  /// inside the rank, sends to the next rank) and computing alone.
  PipeCosts total, computeOnly;
  /// Its optimizer step, with communication and computing alone.
  double update = 0, updateCompute = 0;
  /// Bytes per device: the state (the update program's arena), the
  /// largest other program's arena, and one micro-batch's activations kept
  /// for the backward pass.
  double state = 0, work = 0, activationBytes = 0;
  /// Collectives per micro-batch.
  double collectives = 0;
  /// Of `total`: sending activations to the next rank (forward) and
  /// gradients to the previous one (backward).
  double sendForward = 0, sendBackward = 0;
};

/// Compiles `request` and returns its stages' figures, stage by stage.
Expected<std::vector<StageFigures>>
compileStageFigures(const PipelinedRequest &request,
                    const ProgramSeconds &seconds);

/// The step of `stages` (`virtualStages` per rank, stage s on rank s mod
/// ranks) under `schedule` over `microBatches`: the schedule simulated with
/// the stages' costs, the slowest rank's updates after it; memory the
/// largest rank's state (its stages'), working arena (its largest program)
/// and activations the simulation holds at once (at its stages' largest
/// per micro-batch).
Expected<PipelinedEstimate>
estimateFromStages(const std::vector<StageFigures> &stages,
                   ScheduleKind schedule, int64_t virtualStages,
                   int64_t microBatches);

/// Compiles `request` and estimates its step.
Expected<PipelinedEstimate> estimatePipelined(const PipelinedRequest &request,
                                              const ProgramSeconds &seconds);

/// The `stages` stages of a pipeline of `layersPerStage` layers each, from
/// two 2-rank compiles of the same layout with `screenLayers` and one more
/// layers per stage (`shallow`, `deeper`): every figure is a constant plus
/// one per layer; the first and last stages are as compiled (the
/// embedding, the head and the loss), the ones between as a middle stage
/// compiled (interleaved: a rank's second chunk), else the smaller of the
/// two ends (docs/Planning.md, "Screening").
std::vector<StageFigures>
extrapolateStages(const std::vector<StageFigures> &shallow,
                  const std::vector<StageFigures> &deeper, double screenLayers,
                  double layersPerStage, int64_t stages);

} // namespace partita

#endif // PARTITA_PLANNING_PLANPIPELINED_H
