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
// once (docs/Planning.md, "Pipeline parallelism"). A deep model's layout is
// screened from two 2-rank compiles at one and two layers per stage, every
// stage figure extrapolated as a constant plus one per layer
// (extrapolateStages).
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/PlanPipelined.h"
#include "partita/Planning/PipelineFigures.h"

#include "partita/Driver/Session.h"

#include "partita/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace partita;

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

Expected<std::vector<StageFigures>>
partita::compileStageFigures(const PipelinedRequest &request,
                             const ProgramSeconds &seconds) {
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
  options.schedule = request.schedule;
  options.ranks = static_cast<int>(request.ranks);
  options.virtualStages = static_cast<int>(request.virtualStages);
  options.microBatches = request.microBatches;
  options.optimizer.optimizer = TrainOptimizer::AdamW;
  options.optimizer.learningRate = 1e-3;
  options.optimizer.remat = request.remat;
  options.passes.rules = request.rules;
  options.passes.interconnect = request.interconnect;
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
  std::vector<StageFigures> figures;
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
    StageFigures f;
    f.sendForward = send(traffic.forward);
    f.sendBackward = send(traffic.backward);
    f.total.forward = forwardCompute + forwardComm + f.sendForward;
    f.total.backward = backwardCompute + backwardComm + f.sendBackward;
    f.total.weightGrad = gradCompute + gradComm;
    f.computeOnly.forward = forwardCompute;
    f.computeOnly.backward = backwardCompute;
    f.computeOnly.weightGrad = gradCompute;
    auto [updateCompute, updateComm] = seconds(stage.update);
    f.update = updateCompute + updateComm;
    f.updateCompute = updateCompute;
    f.state = static_cast<double>(stage.update.allocatedBytes());
    for (const StageProgram *program :
         {&stage.forward, &stage.backward, &stage.weightGrad})
      if (program->present) {
        f.work = std::max(
            f.work, static_cast<double>(program->executable.allocatedBytes()));
        for (const auto &entry :
             profileExecutable(program->executable).collectives)
          f.collectives += entry.second.count;
      }
    f.activationBytes = localActivationBytes(stage);
    figures.push_back(f);
  }
  return figures;
}

Expected<PipelinedEstimate>
partita::estimateFromStages(const std::vector<StageFigures> &stages,
                            ScheduleKind kind, int64_t virtualStages,
                            int64_t microBatches) {
  int64_t chunks = std::max<int64_t>(virtualStages, 1);
  if (stages.empty() || stages.size() % static_cast<size_t>(chunks))
    return Status::error("internal error: " + std::to_string(stages.size()) +
                         " stages for " + std::to_string(chunks) +
                         " chunks per rank");
  int ranks = static_cast<int>(stages.size() / static_cast<size_t>(chunks));
  Expected<PipelineSchedule> schedule = buildSchedule(
      kind, ranks, static_cast<int>(microBatches), static_cast<int>(chunks));
  if (!schedule)
    return schedule.status();
  std::vector<PipeCosts> total, computeOnly;
  PipelinedEstimate estimate;
  std::vector<double> update(static_cast<size_t>(ranks), 0),
      updateCompute(static_cast<size_t>(ranks), 0);
  double collectives = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageFigures &stage = stages[s];
    total.push_back(stage.total);
    computeOnly.push_back(stage.computeOnly);
    // A rank updates its chunks one after the other.
    auto rank = static_cast<size_t>(schedule->rankOfStage(static_cast<int>(s)));
    update[rank] += stage.update;
    updateCompute[rank] += stage.updateCompute;
    collectives += stage.collectives * static_cast<double>(microBatches);
  }
  estimate.collectives = static_cast<int64_t>(collectives + 0.5);
  Expected<ScheduleTimeline> timeline = simulateSchedule(*schedule, total);
  Expected<ScheduleTimeline> computeTimeline =
      simulateSchedule(*schedule, computeOnly);
  if (!timeline || !computeTimeline)
    return Status::error(
        "the schedule does not simulate: " +
        (timeline ? computeTimeline.status() : timeline.status()).message());
  double stepSeconds =
      timeline->makespan + *std::max_element(update.begin(), update.end());
  estimate.computeSeconds =
      computeTimeline->makespan +
      *std::max_element(updateCompute.begin(), updateCompute.end());
  estimate.commSeconds = std::max(stepSeconds - estimate.computeSeconds, 0.0);
  estimate.bubble = timeline->bubbleFraction;
  // Memory: the largest rank's state (its chunks'), working arena and
  // activations held (at its chunks' largest per micro-batch).
  for (int rank = 0; rank < ranks; ++rank) {
    double state = 0, work = 0, activation = 0;
    for (size_t s = 0; s < stages.size(); ++s)
      if (schedule->rankOfStage(static_cast<int>(s)) == rank) {
        state += stages[s].state;
        work = std::max(work, stages[s].work);
        activation = std::max(activation, stages[s].activationBytes);
      }
    int held = rank < static_cast<int>(timeline->peakInFlight.size())
                   ? timeline->peakInFlight[static_cast<size_t>(rank)]
                   : 0;
    double inFlight = held * activation;
    if (state + work + inFlight > estimate.memory) {
      estimate.memory = state + work + inFlight;
      estimate.byRole = {{"state", static_cast<int64_t>(state)},
                         {"program", static_cast<int64_t>(work)},
                         {"in_flight", static_cast<int64_t>(inFlight)}};
    }
  }
  return estimate;
}

Expected<PipelinedEstimate>
partita::estimatePipelined(const PipelinedRequest &request,
                           const ProgramSeconds &seconds) {
  Expected<std::vector<StageFigures>> stages =
      compileStageFigures(request, seconds);
  if (!stages)
    return stages.status();
  return estimateFromStages(*stages, request.schedule, request.virtualStages,
                            request.microBatches);
}

namespace {

/// Applies `f(out, a, b)` to each figure of a stage.
void forEachFigure(StageFigures &out, const StageFigures &a,
                   const StageFigures &b,
                   const std::function<void(double &, double, double)> &f) {
  f(out.total.forward, a.total.forward, b.total.forward);
  f(out.total.backward, a.total.backward, b.total.backward);
  f(out.total.weightGrad, a.total.weightGrad, b.total.weightGrad);
  f(out.computeOnly.forward, a.computeOnly.forward, b.computeOnly.forward);
  f(out.computeOnly.backward, a.computeOnly.backward, b.computeOnly.backward);
  f(out.computeOnly.weightGrad, a.computeOnly.weightGrad,
    b.computeOnly.weightGrad);
  f(out.update, a.update, b.update);
  f(out.updateCompute, a.updateCompute, b.updateCompute);
  f(out.state, a.state, b.state);
  f(out.work, a.work, b.work);
  f(out.activationBytes, a.activationBytes, b.activationBytes);
  f(out.collectives, a.collectives, b.collectives);
  f(out.sendForward, a.sendForward, b.sendForward);
  f(out.sendBackward, a.sendBackward, b.sendBackward);
}

} // namespace

std::vector<StageFigures>
partita::extrapolateStages(const std::vector<StageFigures> &shallow,
                           const std::vector<StageFigures> &deeper,
                           double screenLayers, double layersPerStage,
                           int64_t count) {
  double more = layersPerStage - screenLayers - 1;
  auto extend = [&](size_t s) {
    StageFigures whole;
    forEachFigure(whole, shallow[s], deeper[s],
                  [&](double &out, double a, double b) {
                    out = std::max(b + more * (b - a), 0.0);
                  });
    return whole;
  };
  StageFigures first = extend(0), last = extend(shallow.size() - 1);
  StageFigures middle;
  if (shallow.size() > 2) {
    middle = extend(1);
  } else {
    // Neither end's extra work (the smaller of each figure, sends left
    // out), but both ends' sends: a middle stage sends forward as the
    // first does and back as the last does.
    forEachFigure(middle, first, last, [](double &out, double a, double b) {
      out = std::min(a, b);
    });
    middle.total.forward = std::min(first.total.forward - first.sendForward,
                                    last.total.forward - last.sendForward) +
                           first.sendForward;
    middle.total.backward = std::min(first.total.backward - first.sendBackward,
                                     last.total.backward - last.sendBackward) +
                            last.sendBackward;
    middle.sendForward = first.sendForward;
    middle.sendBackward = last.sendBackward;
  }
  std::vector<StageFigures> stages(static_cast<size_t>(count), middle);
  stages.front() = first;
  stages.back() = last;
  return stages;
}
