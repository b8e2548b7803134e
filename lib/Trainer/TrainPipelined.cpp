//===- TrainPipelined.cpp - Pipeline-parallel training --------------------===//
//
// Pipeline-parallel training: the model is cut into stages, each stage's
// programs are compiled for one pipeline rank's sub-mesh, and the schedule
// runs micro-batches through them step after step. Prints what each stage
// holds and the schedule's bubble, draws the measured timeline of the last
// step, writes the figures to pipeline.json, and with --check trains the
// non-pipelined step on one device beside it (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Pipelining/Pipelining.h"
#include "partita/Planning/PipelineFigures.h"
#include "partita/Runtime/Pipeline/PipelineRun.h"
#include "partita/Runtime/Plugins/CudaPlugin.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>
#include <unistd.h>

using namespace partita;

/// The difference between `a` and `b` relative to `b`, normwise:
/// ||a - b||_2 / ||b||_2. Normwise and not elementwise because AdamW's step
/// is lr * m / sqrt(v): for an element whose gradient is at the rounding
/// level the step's size depends on how each sum was rounded, so a few such
/// elements move by a sizable fraction of the learning rate under another
/// GEMM kernel or device count (measured up to 1.4e-4 of the tensor's
/// largest element), while the tensor's norm moves by 2e-6. A wrong gradient
/// moves every element of a tensor, or a row of it, by up to the learning
/// rate: far above 1e-4 normwise. docs/Pipeline.md, "What is checked".
double partita::relativeDifference(const HostArray &a, const HostArray &b) {
  double difference = 0, norm = 0;
  for (int64_t i = 0; i < b.numElements(); ++i) {
    double x = elementAsDouble(a, i), y = elementAsDouble(b, i);
    difference += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(difference) / std::max(1e-30, std::sqrt(norm));
}

namespace {

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

/// --check: the non-pipelined step on one device, same data and seed; an
/// error when they differ. Across processes (`group`) every process trains
/// the reference and compares its own stages' parameters; process 0, which
/// has every step's loss, the losses; it prints the largest differences
/// over every process.
} // namespace

Status partita::checkAgainstOneDevice(const TrainRequest &request,
                                      const std::vector<double> &losses,
                                      const std::vector<HostArray> &parameters,
                                      ProcessGroup *group) {
  // The rank's axes (the mesh's, unpipelined), each of size 1.
  bool pipelined = request.pipelineRanks > 1;
  Expected<TrainRequest> made =
      oneDeviceRequest(request, pipelined ? request.rankMesh : request.mesh);
  if (!made)
    return made.status();
  TrainRequest &single = *made;
  Session session;
  Expected<Executable> program = compileTrainStep(session, single);
  if (!program)
    return program.status();
  Expected<TrainStepLayout> layout = trainStepLayout(*program);
  Expected<std::vector<HostArray>> inputs =
      initialTrainInputs(*program, static_cast<uint64_t>(request.seed));
  Expected<std::unique_ptr<TrainData>> source = makeTrainData(request);
  if (!layout || !inputs || !source)
    return Status::error("the non-pipelined step cannot run");
  // The same start: --init-from's parameters too.
  if (!request.checkpoints.initFrom.empty())
    if (Status status =
            initializeFromCheckpoint(single, *program, *inputs, /*quiet=*/true);
        !status.ok())
      return status;
  std::vector<double> reference;
  TrainLoopOptions loop;
  if (request.lrSchedule)
    loop.learningRate = [schedule = *request.lrSchedule](int64_t step) {
      return schedule.at(step);
    };
  Status status = trainOnCpuDevices(
      *program, *layout, *inputs, **source, request.steps,
      [&](const TrainStepResult &result) {
        reference.push_back(result.loss);
        return Status::success();
      },
      loop);
  if (!status.ok())
    return Status::error("the non-pipelined step: " + status.message());
  bool speaks = !group || group->process() == 0;
  double worst = 0;
  for (size_t s = 0; speaks && s < losses.size() && s < reference.size(); ++s)
    worst = std::max(worst, std::fabs(losses[s] - reference[s]) /
                                std::max(1e-12, std::fabs(reference[s])));
  double worstParam = 0;
  // Across processes another process holds the other stages' parameters.
  for (size_t p = 0; p < parameters.size(); ++p)
    if (parameters[p].numElements() == (*inputs)[p].numElements())
      worstParam =
          std::max(worstParam, relativeDifference(parameters[p], (*inputs)[p]));
  if (group) {
    std::vector<uint8_t> mine(sizeof(double));
    std::memcpy(mine.data(), &worstParam, sizeof(double));
    std::vector<std::vector<uint8_t>> all;
    if (Status gathered =
            group->gather(mine, 0, all, "the check's parameter differences");
        !gathered.ok())
      return gathered;
    for (const std::vector<uint8_t> &bytes : all) {
      double theirs = 0;
      if (bytes.size() == sizeof(double))
        std::memcpy(&theirs, bytes.data(), sizeof(double));
      worstParam = std::max(worstParam, theirs);
    }
  }
  // bf16 rounds every value to 8 bits of mantissa: the two steps' sums,
  // added in other orders, land an ulp apart (2^-8 to 2^-7 relative, the
  // loss too), so bf16 allows two ulps of the loss and 1e-2 normwise, still
  // under what a wrong gradient moves (docs/Pipeline.md, "What is checked").
  bool narrow = request.config.dtype == "bf16";
  double lossTolerance = narrow ? 1.0 / 64 : 1e-4;
  double paramTolerance = narrow ? 1e-2 : 1e-4;
  bool same = worst <= lossTolerance && worstParam <= paramTolerance &&
              (!speaks || losses.size() == reference.size());
  if (group) {
    Expected<bool> everyone = group->allTrue(same, "the check");
    if (!everyone)
      return everyone.status();
    same = *everyone;
    if (!speaks)
      return same ? Status::success() : Status::error("");
  }
  llvm::outs() << (pipelined
                       ? "check against the non-pipelined step on one device: "
                       : "check against the same steps on one device: ")
               << "largest relative difference " << llvm::format("%.2e", worst)
               << " in the losses, " << llvm::format("%.2e", worstParam)
               << " in the parameters (normwise): "
               << (same ? "same" : "DIFFERENT") << "\n";
  if (!same)
    return Status::error(
        std::string(pipelined ? "the pipelined step differs from the "
                                "non-pipelined one"
                              : "the run differs from the same steps on one "
                                "device") +
        " (tolerance " +
        llvm::formatv("{0:e1} in the losses, {1:e1} in the parameters",
                      lossTolerance, paramTolerance)
            .str() +
        ")");
  return Status::success();
}

namespace {

/// Whether this process's stages read a data input (the first stage reads
/// the tokens, the last the targets; across processes the others need no
/// data).
bool readsData(const PipelinedStep &step, const ProcessGroup *group) {
  const PipelineSchedule &schedule = step.schedule;
  int perProcess = group ? schedule.ranks / group->processes() : 0;
  for (size_t s = 0; s < step.stages.size(); ++s) {
    if (group && schedule.rankOfStage(static_cast<int>(s)) / perProcess !=
                     group->process())
      continue;
    const PipelineStage &stage = step.stages[s];
    for (const StageProgram *program :
         {&stage.forward, &stage.backward, &stage.weightGrad})
      for (const StageInput &input : program->inputs)
        if (program->present && input.kind == StageInput::Kind::Data)
          return true;
  }
  return false;
}

/// --resume and --init-from for a pipelined step: any checkpoint of the
/// same model, pipelined or not (PipelineRunner::loadCheckpoint).
Status loadPipelinedCheckpoint(const TrainRequest &request,
                               PipelineRunner &runner,
                               ProgressPrinter &progress, int64_t &firstStep) {
  const CheckpointRequest &c = request.checkpoints;
  bool resuming = !c.resume.empty();
  const std::string &root = resuming ? c.resume : c.initFrom;
  if (root.empty())
    return Status::success();
  Expected<CheckpointInfo> info = openStartCheckpoint(request, resuming);
  if (!info)
    return info.status();
  if (Status status = runner.loadCheckpoint(*info, resuming ? "" : "param");
      !status.ok())
    return Status::error((resuming ? request.checkpoints.resumeFlag
                                   : request.checkpoints.initFromFlag) +
                         ": " + status.message());
  if (resuming) {
    continueFrom(*info, progress, firstStep);
    return Status::success();
  }
  if (progress.quiet)
    return Status::success();
  llvm::outs() << "initialised from " << info->directory << " ("
               << info->meta.step << " steps of '" << info->meta.model
               << "')\n";
  llvm::outs().flush();
  return Status::success();
}

/// Steps firstStep .. request.steps - 1 of a pipelined run, each step's
/// progress line and the checkpoints due; the last step's result.
Expected<PipelineStepResult> runPipelinedSteps(
    const TrainRequest &request, PipelineRunner &runner, TrainData &source,
    std::vector<HostArray> &data, const PipelineProgramRunner &runProgram,
    ProgressPrinter &progress, CheckpointWriter &checkpoints,
    Evaluator *evaluator, bool fills, int64_t firstStep, bool tty) {
  std::vector<HostArray *> dataPointers;
  for (HostArray &array : data)
    dataPointers.push_back(&array);
  PipelineStepResult last;
  for (int64_t s = firstStep; s < request.steps; ++s) {
    // A process whose stages read no data input leaves it unfilled.
    Status status = fills ? source.fill(s, dataPointers) : Status::success();
    Expected<PipelineStepResult> result =
        status.ok() ? runner.runStep(s, data, runProgram,
                                     request.lrSchedule
                                         ? request.lrSchedule->at(s)
                                         : request.options.trainLearningRate)
                    : Expected<PipelineStepResult>(status);
    if (result) {
      last = *result;
      TrainStepResult stepResult;
      stepResult.step = s;
      stepResult.loss = result->loss;
      stepResult.seconds = result->seconds;
      status = progress(stepResult);
      int64_t done = s + 1;
      // Held-out batches through the stages' forward programs.
      if (status.ok() && evaluator &&
          (done == request.steps || done % request.eval.every == 0)) {
        Expected<double> loss =
            evaluator->evaluateWith(done, dataPointers, [&] {
              return runner.evaluate(data, runProgram);
            });
        if (!loss)
          status = loss.status();
      }
      if (status.ok() && request.checkpoints.due(done, request.steps)) {
        CheckpointState state;
        state.meta = checkpoints.meta(done, progress);
        state.values = runner.checkpointValues();
        status = checkpoints.submitState(std::move(state));
      }
    } else {
      status = result.status();
    }
    if (!status.ok()) {
      // The progress bar's line ends before the error.
      llvm::outs().flush();
      if (tty)
        llvm::errs() << "\n";
      return Status::error("step " + std::to_string(s) + ": " +
                           status.message());
    }
  }
  return last;
}

} // namespace

namespace {

/// Process 0's report after the steps: the checkpoints written, the last
/// step's measured timeline and bubble, pipeline.json and the trace.
Status reportLastStep(const TrainRequest &request, const PipelinedStep &step,
                      const PipelineFigures &figures,
                      const PipelineStepResult &last,
                      const std::string &written, int64_t firstStep) {
  llvm::outs() << written;
  if (request.steps <= firstStep)
    return Status::success();
  llvm::outs() << "measured timeline of the last step ("
               << llvm::format("%.1f", last.seconds * 1e3) << " ms):\n"
               << renderTimeline(last.timeline, 72);
  llvm::outs() << "measured bubble "
               << llvm::format("%.4f", last.timeline.bubbleFraction)
               << "; peak bytes held per rank:";
  for (int64_t bytes : last.peakHeldBytes)
    llvm::outs() << " " << bytes;
  llvm::outs() << "\n";
  if (!writePipelineReport(request.outputDir + "/pipeline.json", step, figures,
                           &last))
    return Status::error("");
  // The last step's timeline for ui.perfetto.dev / chrome://tracing.
  if (!writeOutputFile(request.tracePath, [&](llvm::raw_ostream &os) {
        os << timelineTraceJson(last.timeline);
      }))
    return Status::error("");
  return Status::success();
}

} // namespace

Status partita::trainPipelined(TrainRequest &request, ProcessGroup *group) {
  // MoE groups as on the rank's mesh, also for --check's one device.
  request.config.groups = moeGroups(request.config, request.rankMesh);
  Session session;
  // Each stage program sees one micro-batch on one rank's sub-mesh.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, request.config, request.rankMesh);
  if (!module)
    return Status::error("");
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
  options.optimizer.mixedPrecision = request.options.trainMixedPrecision;
  options.optimizer.clipNorm = request.options.trainClipNorm;
  options.passes = request.options;
  options.passes.trainOptimizer = TrainOptimizer::None;
  options.passes.mesh.clear();
  options.devicesPerRank = request.rankMesh.numDevices();
  options.passes.stage =
      options.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  options.lowering = request.lowering;
  Expected<PipelinedStep> step = compilePipelined(loss, options);
  if (!step)
    return step.status();
  Expected<PipelineFigures> figures = scheduleFigures(*step);
  if (!figures)
    return figures.status();
  // Across processes each process runs its own pipeline ranks' programs,
  // the values between stages sent to the process that needs them.
  std::unique_ptr<PipelinePeers> peers;
  if (group) {
    Expected<std::unique_ptr<PipelinePeers>> made = group->pipelinePeers();
    if (!made)
      return made.status();
    peers = std::move(*made);
  }
  bool speaks = !group || group->process() == 0;
  Expected<std::unique_ptr<PipelineRunner>> runner = PipelineRunner::create(
      *step, static_cast<uint64_t>(request.seed), peers.get());
  if (!runner)
    return runner.status();
  Expected<std::unique_ptr<TrainData>> source =
      speaks ? startTrainData(request) : makeTrainData(request);
  if (!source)
    return source.status();
  if (speaks)
    printPipelineHeader(request, *step, *figures);

  // On GPUs: each rank's programs on its own GPUs, through the plugin.
  PipelineProgramRunner runProgram;
  if (request.cuda) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return plugin.status();
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
  bool tty = speaks && isatty(STDOUT_FILENO);
  ProgressPrinter progress(request, tty);
  progress.quiet = !speaks;
  int64_t firstStep = 0;
  if (Status status =
          loadPipelinedCheckpoint(request, **runner, progress, firstStep);
      !status.ok())
    return status;
  std::unique_ptr<Evaluator> evaluator;
  if (request.eval.every > 0) {
    Expected<std::unique_ptr<Evaluator>> created =
        Evaluator::create(session, request, /*compileLoss=*/false);
    if (!created)
      return created.status();
    evaluator = std::move(*created);
    if (!speaks)
      evaluator->silence();
  }
  CheckpointWriter checkpoints(request);
  // Each process writes its stages' tensors (whole values).
  checkpoints.across.group = group;
  checkpoints.inCaller = group != nullptr;
  Expected<PipelineStepResult> last = runPipelinedSteps(
      request, **runner, **source, data, runProgram, progress, checkpoints,
      evaluator.get(), readsData(*step, group), firstStep, tty);
  if (!last)
    return last.status();
  if (Status written = checkpoints.finish(); !written.ok())
    return written;
  if (speaks)
    if (Status status = reportLastStep(request, *step, *figures, *last,
                                       checkpoints.written, firstStep);
        !status.ok())
      return status;
  // Across processes every process checks its own stages.
  if (request.check)
    if (Status status = checkAgainstOneDevice(request, progress.losses,
                                              (*runner)->parameters(), group);
        !status.ok())
      return status;
  if (!speaks)
    return Status::success();
  if (!writeLosses(request, progress, evaluator.get()))
    return Status::error("");
  return Status::success();
}
