//===- TrainPipelined.cpp - partita train --pp ----------------------------===//
//
// Pipeline-parallel training: the model is cut into stages, each stage's
// programs are compiled for one pipeline rank's sub-mesh, and the schedule
// runs micro-batches through them step after step. Prints what each stage
// holds and the schedule's bubble, draws the measured timeline of the last
// step, writes the figures to pipeline.json, and with --check trains the
// non-pipelined step on one device beside it (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "TrainSupport.h"

#include "partita/Pipelining/Pipelining.h"
#include "partita/Runtime/Pipeline/PipelineRun.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <unistd.h>

using namespace partita;
using namespace partita::cli;

namespace {

/// The schedule's bubble by the published formulas; -1 for zero-bubble
/// schedules, which have none in closed form.
double bubbleFormula(const PipelineSchedule &schedule) {
  double p = schedule.ranks, m = schedule.microBatches,
         v = schedule.virtualStages;
  switch (schedule.kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / (m + p - 1);
  case ScheduleKind::Interleaved:
    return (p - 1) / (v * m + p - 1);
  case ScheduleKind::ZeroBubble:
    return -1;
  }
  return -1;
}

/// Per-stage costs for the simulator: uniform (what the formulas assume),
/// or from each stage's forward FLOPs (backward twice the forward; a split
/// backward half input gradient, half weight gradient).
std::vector<PipeCosts> stageCosts(const PipelinedStep &step, bool byFlops) {
  std::vector<PipeCosts> costs;
  bool split = step.schedule.splitBackward;
  double v = step.schedule.virtualStages;
  for (const PipelineStage &stage : step.stages) {
    double forward = byFlops ? static_cast<double>(stage.forwardFlops) : 1 / v;
    PipeCosts cost;
    cost.forward = forward;
    cost.backward = split ? forward : 2 * forward;
    cost.weightGrad = split ? forward : 0;
    costs.push_back(cost);
  }
  return costs;
}

/// Bytes a stage keeps per micro-batch between its forward and backward
/// passes: what its forward program outputs (saved and sent values).
int64_t activationBytes(const PipelineStage &stage) {
  int64_t bytes = 0;
  for (const ExecutableValue &output : stage.forward.executable.outputs) {
    int64_t elements = 1;
    for (int64_t d : output.globalShape)
      elements *= d;
    bytes += elements *
             dtypeSize(stage.forward.executable.slots[output.slot].dtype);
  }
  return bytes;
}

struct PipelineFigures {
  double formula = -1;
  ScheduleTimeline uniform, byFlops;
};

Expected<PipelineFigures> scheduleFigures(const PipelinedStep &step) {
  PipelineFigures figures;
  figures.formula = bubbleFormula(step.schedule);
  Expected<ScheduleTimeline> uniform =
      simulateSchedule(step.schedule, stageCosts(step, false));
  if (!uniform)
    return uniform.status();
  Expected<ScheduleTimeline> byFlops =
      simulateSchedule(step.schedule, stageCosts(step, true));
  if (!byFlops)
    return byFlops.status();
  figures.uniform = *uniform;
  figures.byFlops = *byFlops;
  return figures;
}

void printPipelineHeader(const TrainRequest &request, const PipelinedStep &step,
                         const PipelineFigures &figures) {
  const PipelineSchedule &schedule = step.schedule;
  llvm::outs() << "training " << request.config.model << " on "
               << request.devices << " (mesh " << request.mesh.toString()
               << ", rules " << request.options.rules << ", "
               << trainOptimizerName(request.options.trainOptimizer) << " lr "
               << llvm::format("%g", request.options.trainLearningRate)
               << "): pipeline of " << schedule.stages() << " stages on "
               << schedule.ranks << " ranks of " << step.devicesPerRank
               << " devices, " << scheduleKindName(schedule.kind) << ", "
               << schedule.microBatches << " micro-batches\n";
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const PipelineStage &stage = step.stages[s];
    llvm::outs() << "  stage " << s << " (rank "
                 << schedule.rankOfStage(static_cast<int>(s))
                 << "): " << stage.summary << ", " << stage.paramIndex.size()
                 << " parameters, " << stage.forwardFlops
                 << " forward FLOPs, " << activationBytes(stage)
                 << " activation bytes per micro-batch"
                 << (stage.weightGrad.present ? ", weight gradients apart"
                                              : "")
                 << "\n";
  }
  llvm::outs() << "bubble: " << llvm::format("%.4f", figures.uniform.bubbleFraction)
               << " by the schedule";
  if (figures.formula >= 0)
    llvm::outs() << " (formula " << llvm::format("%.4f", figures.formula)
                 << ")";
  llvm::outs() << ", " << llvm::format("%.4f", figures.byFlops.bubbleFraction)
               << " with the stages' FLOPs\n";
}

/// pipeline.json: the stages, the schedule's figures and the last step's
/// measurements.
bool writePipelineReport(const TrainRequest &request, const PipelinedStep &step,
                         const PipelineFigures &figures,
                         const PipelineStepResult &measured) {
  std::string path = request.outputDir + "/pipeline.json";
  return writeOutputFile(path, [&](llvm::raw_ostream &os) {
    llvm::json::OStream json(os, 2);
    const PipelineSchedule &schedule = step.schedule;
    json.object([&] {
      json.attribute("schedule", scheduleKindName(schedule.kind));
      json.attribute("ranks", schedule.ranks);
      json.attribute("virtual_stages", schedule.virtualStages);
      json.attribute("micro_batches", schedule.microBatches);
      json.attribute("devices_per_rank", step.devicesPerRank);
      json.attribute("bubble_fraction", figures.uniform.bubbleFraction);
      if (figures.formula >= 0)
        json.attribute("bubble_formula", figures.formula);
      else
        json.attribute("bubble_formula", nullptr);
      json.attribute("bubble_fraction_by_flops",
                     figures.byFlops.bubbleFraction);
      json.attribute("measured_bubble_fraction",
                     measured.timeline.bubbleFraction);
      json.attribute("measured_step_seconds", measured.seconds);
      json.attributeArray("stages", [&] {
        for (size_t s = 0; s < step.stages.size(); ++s) {
          const PipelineStage &stage = step.stages[s];
          json.object([&] {
            json.attribute("stage", static_cast<int64_t>(s));
            json.attribute("rank", schedule.rankOfStage(static_cast<int>(s)));
            json.attribute("holds", stage.summary);
            json.attribute("parameters",
                           static_cast<int64_t>(stage.paramIndex.size()));
            json.attribute("forward_flops", stage.forwardFlops);
            json.attribute("activation_bytes_per_micro_batch",
                           activationBytes(stage));
          });
        }
      });
      json.attributeArray("per_rank", [&] {
        for (int r = 0; r < schedule.ranks; ++r) {
          int64_t perMicroBatch = 0;
          for (size_t s = 0; s < step.stages.size(); ++s)
            if (schedule.rankOfStage(static_cast<int>(s)) == r)
              perMicroBatch = std::max(perMicroBatch,
                                       activationBytes(step.stages[s]));
          json.object([&] {
            json.attribute("rank", r);
            json.attribute("bubble", figures.uniform.bubble[r]);
            json.attribute("peak_micro_batches_held",
                           figures.uniform.peakInFlight[r]);
            json.attribute("peak_activation_bytes",
                           perMicroBatch * figures.uniform.peakInFlight[r]);
            json.attribute("measured_bubble", measured.timeline.bubble[r]);
            json.attribute("measured_peak_micro_batches_held",
                           measured.timeline.peakInFlight[r]);
            json.attribute("measured_peak_held_bytes",
                           measured.peakHeldBytes[r]);
          });
        }
      });
    });
    os << "\n";
  });
}

/// The largest difference between `a` and `b` relative to `b`'s largest
/// magnitude.
double relativeDifference(const HostArray &a, const HostArray &b) {
  double difference = 0, scale = 1e-12;
  for (int64_t i = 0; i < b.numElements(); ++i) {
    double x = elementAsDouble(a, i), y = elementAsDouble(b, i);
    difference = std::max(difference, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  return difference / scale;
}

/// --check: the non-pipelined step on one device, same data and seed;
/// returns false after reporting a difference.
bool checkAgainstOneDevice(const CommandLine &cl, const TrainRequest &request,
                           const std::vector<double> &losses,
                           const std::vector<HostArray> &parameters) {
  TrainRequest single = request;
  single.count = 1;
  // The rank's axes, each of size 1: the rules find their axes.
  std::vector<MeshAxis> ones;
  for (const MeshAxis &axis : request.rankMesh.axes())
    ones.push_back(MeshAxis{axis.name, 1});
  Expected<Mesh> oneDevice = Mesh::create(ones);
  if (!oneDevice) {
    llvm::errs() << "error: " << oneDevice.status().message() << "\n";
    return false;
  }
  single.mesh = *oneDevice;
  single.options.stage = Stage::Verified;
  Session session;
  Expected<Executable> program = compileTrainStep(session, single);
  if (!program) {
    if (!program.status().message().empty())
      llvm::errs() << "error: " << program.status().message() << "\n";
    return false;
  }
  Expected<TrainStepLayout> layout = trainStepLayout(*program);
  Expected<std::vector<HostArray>> inputs =
      initialTrainInputs(*program, static_cast<uint64_t>(request.seed));
  Expected<std::unique_ptr<TrainData>> source = makeTrainData(cl, request);
  if (!layout || !inputs || !source) {
    llvm::errs() << "error: the non-pipelined step cannot run\n";
    return false;
  }
  std::vector<double> reference;
  Status status = trainOnCpuDevices(
      *program, *layout, *inputs, **source, request.steps,
      [&](const TrainStepResult &result) {
        reference.push_back(result.loss);
        return Status::success();
      });
  if (!status.ok()) {
    llvm::errs() << "error: the non-pipelined step: " << status.message()
                 << "\n";
    return false;
  }
  double worst = 0;
  for (size_t s = 0; s < losses.size() && s < reference.size(); ++s)
    worst = std::max(worst, std::fabs(losses[s] - reference[s]) /
                                std::max(1e-12, std::fabs(reference[s])));
  double worstParam = 0;
  for (size_t p = 0; p < parameters.size(); ++p)
    worstParam =
        std::max(worstParam, relativeDifference(parameters[p], (*inputs)[p]));
  bool same = worst <= 1e-4 && worstParam <= 1e-4 &&
              losses.size() == reference.size();
  llvm::outs() << "check against the non-pipelined step on one device: "
               << "largest relative difference " << llvm::format("%.2e", worst)
               << " in the losses, " << llvm::format("%.2e", worstParam)
               << " in the parameters: " << (same ? "same" : "DIFFERENT")
               << "\n";
  if (!same)
    llvm::errs() << "error: the pipelined step differs from the "
                    "non-pipelined one (tolerance 1e-4)\n";
  return same;
}

} // namespace

int partita::cli::trainPipelined(const CommandLine &cl,
                                 TrainRequest &request) {
  Session session;
  // Each stage program sees one micro-batch on one rank's sub-mesh.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, request.config, request.rankMesh);
  if (!module)
    return 1;
  mlir::func::FuncOp loss;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    if (function.isPublic())
      loss = function;
  PipelineCompileOptions options;
  options.schedule = request.schedule;
  options.ranks = request.pipelineRanks;
  options.virtualStages = request.virtualStages;
  options.microBatches = request.micro;
  options.optimizer.optimizer = request.options.trainOptimizer;
  options.optimizer.learningRate = request.options.trainLearningRate;
  options.passes = request.options;
  options.passes.trainOptimizer = TrainOptimizer::None;
  options.passes.mesh.clear();
  options.devicesPerRank = request.rankMesh.numDevices();
  options.passes.stage =
      options.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  options.lowering = request.lowering;
  Expected<PipelinedStep> step = compilePipelined(loss, options);
  if (!step) {
    if (!step.status().message().empty())
      llvm::errs() << "error: " << step.status().message() << "\n";
    return 1;
  }
  Expected<PipelineFigures> figures = scheduleFigures(*step);
  Expected<std::unique_ptr<PipelineRunner>> runner =
      PipelineRunner::create(*step, static_cast<uint64_t>(request.seed));
  if (!figures || !runner) {
    llvm::errs() << "error: "
                 << (figures ? runner.status() : figures.status()).message()
                 << "\n";
    return 1;
  }
  Expected<std::unique_ptr<TrainData>> source = makeTrainData(cl, request);
  if (!source)
    return usageError(source.status().message());
  if (std::error_code error =
          llvm::sys::fs::create_directories(request.outputDir))
    return usageError("cannot create '" + request.outputDir +
                      "': " + error.message());
  printPipelineHeader(request, *step, *figures);

  std::vector<HostArray> data;
  for (size_t k = 0; k < step->dataShapes.size(); ++k)
    data.push_back(HostArray::zeros(step->dataTypes[k], step->dataShapes[k]));
  std::vector<HostArray *> dataPointers;
  for (HostArray &array : data)
    dataPointers.push_back(&array);
  bool tty = isatty(STDOUT_FILENO);
  ProgressPrinter progress(request, tty);
  PipelineStepResult last;
  for (int64_t s = 0; s < request.steps; ++s) {
    Status status = (*source)->fill(s, dataPointers);
    Expected<PipelineStepResult> result =
        status.ok() ? (*runner)->runStep(s, data)
                    : Expected<PipelineStepResult>(status);
    if (result) {
      last = *result;
      TrainStepResult stepResult;
      stepResult.step = s;
      stepResult.loss = result->loss;
      stepResult.seconds = result->seconds;
      status = progress(stepResult);
    } else {
      status = result.status();
    }
    if (!status.ok()) {
      llvm::outs().flush();
      llvm::errs() << (tty ? "\n" : "") << "error: step " << s << ": "
                   << status.message() << "\n";
      return 1;
    }
  }
  if (request.steps > 0) {
    llvm::outs() << "measured timeline of the last step ("
                 << llvm::format("%.1f", last.seconds * 1e3) << " ms):\n"
                 << renderTimeline(last.timeline, 72);
    llvm::outs() << "measured bubble " << llvm::format("%.4f",
                                                       last.timeline.bubbleFraction)
                 << "; peak bytes held per rank:";
    for (int64_t bytes : last.peakHeldBytes)
      llvm::outs() << " " << bytes;
    llvm::outs() << "\n";
    if (!writePipelineReport(request, *step, *figures, last))
      return 1;
  }
  if (request.check &&
      !checkAgainstOneDevice(cl, request, progress.losses,
                             (*runner)->parameters()))
    return 1;
  return writeLosses(request, progress) ? 0 : 1;
}
