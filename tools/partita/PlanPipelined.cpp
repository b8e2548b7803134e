//===- PlanPipelined.cpp - What a pipelined layout costs, for partita plan ===//
//
// A layout with pipeline parallelism is compiled as `partita train --pp`
// compiles it (1F1B, one stage per rank) and costed from its programs: each
// stage's forward and backward for one micro-batch priced like any
// compiled step (StepCost.h), plus the activations and gradients it sends to
// the next rank, run through the schedule's simulation; the optimizer step
// of the slowest stage after it. Memory per device is an estimate: the
// stage's state (its update program's arena), the largest of its other
// programs' arenas, and the activations the simulated schedule holds at
// once (docs/Planning.md, "Pipeline parallelism").
//
//===----------------------------------------------------------------------===//

#include "PlanPipelined.h"
#include "TrainSupport.h"

#include "partita/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace partita;
using namespace partita::cli;

namespace {

/// Bytes one device of a stage's rank keeps per micro-batch between the
/// forward and backward passes: its forward program's outputs, local.
double localActivationBytes(const PipelineStage &stage) {
  double bytes = 0;
  const Executable &forward = stage.forward.executable;
  for (const ExecutableValue &output : forward.outputs)
    bytes += static_cast<double>(forward.slots[output.slot].bytes());
  return bytes;
}

} // namespace

FirstError::FirstError(mlir::MLIRContext &context)
    : handler(&context, [this](mlir::Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error &&
            first.empty())
          first = diagnostic.str();
        return mlir::success();
      }) {}

std::string FirstError::message() const {
  return first.empty() ? std::string("(no message)") : first;
}

Expected<PipelinedEstimate> partita::cli::estimatePipelined(
    const PipelinedRequest &request,
    const std::function<std::pair<double, double>(const Executable &)>
        &seconds) {
  Session session;
  // Layouts compile side by side, one per core: no pool per context.
  session.context.disableMultithreading();
  FirstError firstError(session.context);
  auto failure = [&](const std::string &what) {
    return Status::error(what + ": " + firstError.message());
  };
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, request.microConfig, request.rankMesh);
  if (!module)
    return failure("does not build");
  mlir::func::FuncOp loss;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    if (function.isPublic())
      loss = function;
  if (!loss)
    return Status::error("does not build: no loss function");
  PipelineCompileOptions options;
  options.schedule = ScheduleKind::OneFOneB;
  options.ranks = static_cast<int>(request.ranks);
  options.virtualStages = 1;
  options.microBatches = request.microBatches;
  options.optimizer.optimizer = TrainOptimizer::AdamW;
  options.optimizer.learningRate = 1e-3;
  options.optimizer.remat = request.remat;
  options.passes.rules = request.rules;
  options.passes.interconnectFile = request.interconnectFile;
  options.passes.trainOptimizer = TrainOptimizer::None;
  options.devicesPerRank = request.rankMesh.numDevices();
  options.passes.stage =
      options.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  Expected<PipelinedStep> step = compilePipelined(loss, options);
  if (!step)
    return failure("does not compile");

  // Per stage: its actions' costs with and without communication (sends
  // to the next rank and collectives inside the rank).
  double perDevice = static_cast<double>(options.devicesPerRank);
  auto send = [&](double globalBytes) {
    if (globalBytes <= 0)
      return 0.0;
    return request.pipeLink.latencyUs * 1e-6 +
           globalBytes / perDevice / (request.pipeLink.bandwidthGBps * 1e9);
  };
  std::vector<PipeCosts> total, computeOnly;
  PipelinedEstimate estimate;
  double update = 0, updateCompute = 0;
  for (size_t s = 0; s < step->stages.size(); ++s) {
    const PipelineStage &stage = step->stages[s];
    StageTraffic traffic = stageTraffic(*step, static_cast<int>(s));
    auto cost = [&](const StageProgram &program) {
      return program.present ? seconds(program.executable)
                             : std::pair<double, double>{0, 0};
    };
    auto [forwardCompute, forwardComm] = cost(stage.forward);
    auto [backwardCompute, backwardComm] = cost(stage.backward);
    auto [gradCompute, gradComm] = cost(stage.weightGrad);
    PipeCosts withComm, alone;
    withComm.forward = forwardCompute + forwardComm + send(traffic.forward);
    withComm.backward =
        backwardCompute + backwardComm + send(traffic.backward);
    withComm.weightGrad = gradCompute + gradComm;
    alone.forward = forwardCompute;
    alone.backward = backwardCompute;
    alone.weightGrad = gradCompute;
    total.push_back(withComm);
    computeOnly.push_back(alone);
    auto [updateC, updateComm] = seconds(stage.update);
    update = std::max(update, updateC + updateComm);
    updateCompute = std::max(updateCompute, updateC);
    for (const StageProgram *program :
         {&stage.forward, &stage.backward, &stage.weightGrad})
      if (program->present)
        for (const auto &entry :
             profileExecutable(program->executable).collectives)
          estimate.collectives += static_cast<int64_t>(
              entry.second.count * static_cast<double>(request.microBatches));
  }
  Expected<ScheduleTimeline> timeline =
      simulateSchedule(step->schedule, total);
  Expected<ScheduleTimeline> computeTimeline =
      simulateSchedule(step->schedule, computeOnly);
  if (!timeline || !computeTimeline)
    return Status::error("the schedule does not simulate: " +
                         (timeline ? computeTimeline.status()
                                   : timeline.status())
                             .message());
  double stepSeconds = timeline->makespan + update;
  estimate.computeSeconds = computeTimeline->makespan + updateCompute;
  estimate.commSeconds = std::max(stepSeconds - estimate.computeSeconds, 0.0);
  estimate.bubble = timeline->bubbleFraction;
  // Memory: the largest rank's state, working arena and activations held.
  for (size_t s = 0; s < step->stages.size(); ++s) {
    const PipelineStage &stage = step->stages[s];
    int rank = step->schedule.rankOfStage(static_cast<int>(s));
    double state = static_cast<double>(stage.update.allocatedBytes());
    double work = 0;
    for (const StageProgram *program :
         {&stage.forward, &stage.backward, &stage.weightGrad})
      if (program->present)
        work = std::max(
            work, static_cast<double>(program->executable.allocatedBytes()));
    int held = rank < static_cast<int>(timeline->peakInFlight.size())
                   ? timeline->peakInFlight[rank]
                   : 0;
    double inFlight = held * localActivationBytes(stage);
    if (state + work + inFlight > estimate.memory) {
      estimate.memory = state + work + inFlight;
      estimate.byRole = {{"state", static_cast<int64_t>(state)},
                         {"program", static_cast<int64_t>(work)},
                         {"in_flight", static_cast<int64_t>(inFlight)}};
    }
  }
  return estimate;
}
