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

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/Reporting/HtmlReport.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Pipelining/Pipelining.h"
#include "partita/Runtime/CUDA/CudaPlugin.h"
#include "partita/Runtime/Pipeline/PipelinedStepFile.h"
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

/// True when any argument, result or op of `module` carries a sharding.
bool hasShardings(mlir::ModuleOp module) {
  // A sharding, or a list of them (a manual computation's in_shardings).
  auto isSharding = [](mlir::NamedAttribute attr) {
    if (auto list = llvm::dyn_cast<mlir::ArrayAttr>(attr.getValue()))
      return llvm::any_of(list, [](mlir::Attribute entry) {
        return llvm::isa<ShardingAttr>(entry);
      });
    return llvm::isa<ShardingAttr>(attr.getValue());
  };
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    if (auto function = llvm::dyn_cast<mlir::func::FuncOp>(op)) {
      for (unsigned i = 0; i < function.getNumArguments() && !found; ++i)
        found = function.getArgAttr(i, PartitaDialect::kShardingAttrName) !=
                nullptr;
      for (unsigned i = 0; i < function.getNumResults() && !found; ++i)
        found = function.getResultAttr(
                    i, PartitaDialect::kShardingAttrName) != nullptr;
    }
    found = found || llvm::any_of(op->getAttrs(), isSharding);
    return found ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return found;
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
  printPipelineStages(llvm::outs(), step, figures);
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

namespace {

/// --resume and --init-from for a pipelined step: any checkpoint of the
/// same model, pipelined or not (PipelineRunner::loadCheckpoint).
std::optional<int> loadPipelinedCheckpoint(const TrainRequest &request,
                                           PipelineRunner &runner,
                                           ProgressPrinter &progress,
                                           int64_t &firstStep) {
  const CheckpointRequest &c = request.checkpoints;
  bool resuming = !c.resume.empty();
  const std::string &root = resuming ? c.resume : c.initFrom;
  if (root.empty())
    return std::nullopt;
  Expected<CheckpointInfo> info = openStartCheckpoint(request, resuming);
  if (!info)
    return usageError(info.status().message());
  if (Status status = runner.loadCheckpoint(*info, resuming ? "" : "param");
      !status.ok())
    return usageError(
        (resuming ? std::string("--resume") : request.checkpoints.initFromFlag) +
        ": " + status.message());
  if (resuming) {
    continueFrom(*info, progress, firstStep);
    return std::nullopt;
  }
  llvm::outs() << "initialised from " << info->directory << " ("
               << info->meta.step << " steps of '" << info->meta.model
               << "')\n";
  llvm::outs().flush();
  return std::nullopt;
}

} // namespace

int partita::cli::trainPipelined(const CommandLine &cl,
                                 TrainRequest &request) {
  // MoE groups as on the rank's mesh, also for --check's one device.
  request.config.groups = moeGroups(request.config, request.rankMesh);
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
  options.optimizer.remat = request.options.trainRemat;
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

  // On GPUs: each rank's programs on its own GPUs, through the plugin.
  PipelineProgramRunner runProgram;
  if (request.cuda) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin) {
      llvm::errs() << "error: " << plugin.status().message() << "\n";
      return 1;
    }
    int64_t perRank = step->devicesPerRank;
    runProgram = [cuda = *plugin, perRank](const Executable &program,
                                           const std::vector<HostArray> &inputs,
                                           int rank) {
      CudaBackendOptions options;
      options.firstDevice = static_cast<int>(rank * perRank);
      options.partialInputs = PartialInputs::FirstMember;
      return cuda->runOnDevices(program, inputs, options, nullptr);
    };
  }
  std::vector<HostArray> data;
  for (size_t k = 0; k < step->dataShapes.size(); ++k)
    data.push_back(HostArray::zeros(step->dataTypes[k], step->dataShapes[k]));
  std::vector<HostArray *> dataPointers;
  for (HostArray &array : data)
    dataPointers.push_back(&array);
  bool tty = isatty(STDOUT_FILENO);
  ProgressPrinter progress(request, tty);
  int64_t firstStep = 0;
  if (std::optional<int> code =
          loadPipelinedCheckpoint(request, **runner, progress, firstStep))
    return *code;
  CheckpointWriter checkpoints(request);
  const CheckpointRequest &saving = request.checkpoints;
  PipelineStepResult last;
  for (int64_t s = firstStep; s < request.steps; ++s) {
    Status status = (*source)->fill(s, dataPointers);
    Expected<PipelineStepResult> result =
        status.ok() ? (*runner)->runStep(s, data, runProgram)
                    : Expected<PipelineStepResult>(status);
    if (result) {
      last = *result;
      TrainStepResult stepResult;
      stepResult.step = s;
      stepResult.loss = result->loss;
      stepResult.seconds = result->seconds;
      status = progress(stepResult);
      int64_t done = s + 1;
      if (status.ok() && saving.due(done, request.steps)) {
        CheckpointState state;
        state.meta = checkpoints.meta(done, progress);
        state.values = (*runner)->checkpointValues();
        status = checkpoints.submitState(std::move(state));
      }
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
  if (Status written = checkpoints.finish(); !written.ok()) {
    llvm::errs() << "error: " << written.message() << "\n";
    return 1;
  }
  llvm::outs() << checkpoints.written;
  if (request.steps > firstStep) {
    llvm::outs() << "measured timeline of the last step ("
                 << llvm::format("%.1f", last.seconds * 1e3) << " ms):\n"
                 << renderTimeline(last.timeline, 72);
    llvm::outs() << "measured bubble " << llvm::format("%.4f",
                                                       last.timeline.bubbleFraction)
                 << "; peak bytes held per rank:";
    for (int64_t bytes : last.peakHeldBytes)
      llvm::outs() << " " << bytes;
    llvm::outs() << "\n";
    if (!writePipelineReport(request.outputDir + "/pipeline.json", *step,
                             *figures, &last))
      return 1;
    // The last step's timeline for ui.perfetto.dev / chrome://tracing.
    if (!writeOutputFile(request.tracePath,
                         [&](llvm::raw_ostream &os) {
                           os << timelineTraceJson(last.timeline);
                         }))
      return 1;
  }
  if (request.check &&
      !checkAgainstOneDevice(cl, request, progress.losses,
                             (*runner)->parameters()))
    return 1;
  return writeLosses(request, progress) ? 0 : 1;
}

int partita::cli::compilePipelinedCommand(const CommandLine &cl,
                                          const PipelineOptions &options,
                                          Session &session,
                                          mlir::ModuleOp module) {
  if (options.trainOptimizer == TrainOptimizer::None)
    return usageError("--pp compiles a pipelined train step: add --train");
  if (options.trainMixedPrecision || options.trainClipNorm > 0)
    return usageError("--pp does not combine with --mixed-precision or "
                      "--clip-norm yet");
  // The pipeline axis comes out of the mesh; each rank gets the rest.
  Expected<Mesh> mesh = options.mesh.empty() ? Expected<Mesh>(Mesh())
                                             : parseMeshSpec(options.mesh);
  if (options.mesh.empty())
    for (MeshOp op : module.getOps<MeshOp>())
      mesh = op.getMesh().toMesh();
  if (!mesh)
    return usageError(mesh.status().message());
  std::string ppText = cl.get("--pp");
  Expected<int64_t> pipe = tools::parseIntegerFlag("--pp", ppText, 1, 1 << 20);
  if (!pipe)
    return usageError(pipe.status().message());
  if (mesh->axisSize("pipe") != *pipe)
    return usageError("--pp " + ppText + " needs a 'pipe' axis of size " +
                      ppText + " in the mesh (got '" + mesh->toString() +
                      "')");
  std::string name = cl.get("--schedule", "1f1b");
  std::optional<ScheduleKind> kind = parseScheduleKind(name);
  if (!kind)
    return usageError("unknown --schedule '" + name + "' (expected " +
                      availableSchedules() + ")");
  int virtualStages = *kind == ScheduleKind::Interleaved ? 2 : 1;
  if (cl.has("--virtual-stages")) {
    Expected<int64_t> stages = tools::parseIntegerFlag(
        "--virtual-stages", cl.get("--virtual-stages"), 1, 1024);
    if (!stages)
      return usageError(stages.status().message());
    virtualStages = static_cast<int>(*stages);
  }
  std::vector<MeshAxis> rest;
  for (const MeshAxis &axis : mesh->axes())
    if (axis.name != "pipe")
      rest.push_back(axis);
  if (rest.empty())
    rest.push_back(MeshAxis{"data", 1});
  Expected<Mesh> rankMesh = Mesh::create(rest);
  if (!rankMesh)
    return usageError(rankMesh.status().message());

  PipelineOptions setMesh;
  setMesh.mesh = rankMesh->toString();
  setMesh.stage = Stage::Verified;
  setMesh.rules = "";
  if (!runPipeline(session, module, setMesh))
    return 1;
  // --html draws the whole model as each rank's SPMD program (before the
  // cut), with the stages and the schedule.
  mlir::OwningOpRef<mlir::ModuleOp> whole;
  if (cl.has("--html"))
    whole = module.clone();
  mlir::func::FuncOp loss;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    if (!function.isExternal() && (!loss || function.isPublic()))
      loss = function;
  if (!loss)
    return usageError("the module has no function to train");
  PipelineCompileOptions compile;
  compile.schedule = *kind;
  compile.ranks = static_cast<int>(*pipe);
  compile.virtualStages = virtualStages;
  compile.microBatches = options.trainMicroBatches;
  compile.optimizer.optimizer = options.trainOptimizer;
  compile.optimizer.learningRate = options.trainLearningRate;
  compile.optimizer.remat = options.trainRemat;
  compile.passes = options;
  compile.passes.trainOptimizer = TrainOptimizer::None;
  compile.passes.mesh.clear();
  compile.devicesPerRank = rankMesh->numDevices();
  compile.passes.stage =
      compile.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  compile.lowering.fuse = !cl.on("--no-fusion");
  if (cl.has("--programs")) {
    compile.programsDirectory = cl.get("--programs");
    if (std::error_code error =
            llvm::sys::fs::create_directories(compile.programsDirectory))
      return usageError("cannot create '" + compile.programsDirectory +
                        "': " + error.message());
  }
  bool sharded = !options.rules.empty() || hasShardings(module);
  Expected<PipelinedStep> step = compilePipelined(loss, compile);
  if (!step) {
    if (!step.status().message().empty())
      llvm::errs() << "error: " << step.status().message() << "\n";
    return 1;
  }
  // Several devices per rank and nothing to split over them: each would
  // run the rank's whole work (it compiled to 0 collectives, silently).
  if (rankMesh->numDevices() > 1 && !sharded)
    return usageError(
        "--pp " + ppText + " leaves each rank the mesh " +
        rankMesh->toString() + " of " +
        std::to_string(rankMesh->numDevices()) +
        " devices, but nothing in the program is sharded, so each would "
        "do all of its rank's work: give --rules (dp, fsdp, dp+tp, ...) or "
        "shardings in the program");
  Expected<PipelineFigures> figures = scheduleFigures(*step);
  if (!figures) {
    llvm::errs() << "error: " << figures.status().message() << "\n";
    return 1;
  }
  if (cl.output != "-")
    if (Status written = writePipelinedStep(*step, cl.output); !written.ok())
      return usageError(written.message());
  std::string summary;
  llvm::raw_string_ostream os(summary);
  os << "pipeline of " << step->schedule.stages() << " stages on " << *pipe
     << " ranks of mesh " << rankMesh->toString() << ", "
     << scheduleKindName(*kind) << ", " << compile.microBatches
     << " micro-batches\n";
  printPipelineStages(os, *step, *figures);
  os << "schedule (one unit per stage forward, two per backward):\n"
     << renderTimeline(figures->uniform, 72);
  os.flush();
  llvm::outs() << summary;
  if (whole) {
    PipelineOptions rankOptions = options;
    rankOptions.mesh.clear();
    rankOptions.trainOptimizer = TrainOptimizer::None;
    rankOptions.stage = Stage::Verified;
    mlir::OwningOpRef<mlir::ModuleOp> global = whole->clone();
    if (!writeHtmlFile(session, inputTitle(cl), cl.get("--html"), rankOptions,
                       *whole, *global, summary))
      return 1;
  }
  if (cl.has("--report") &&
      !writePipelineReport(cl.get("--report"), *step, *figures, nullptr))
    return 1;
  return 0;
}
