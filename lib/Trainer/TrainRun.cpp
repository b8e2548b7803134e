//===- TrainRun.cpp - A training run on CPU devices -----------------------===//
//
// `partita train` without pipeline parallelism once its flags are parsed:
// the step compiled for the request's mesh, its inputs initialised (or
// loaded from a checkpoint), the data, and the loop with its progress
// line, evaluation, checkpoints and trace (docs/Training.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Reinforcement.h"
#include "partita/Trainer/Trainer.h"

#include "partita/Runtime/Program/RunMemory.h"

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <unistd.h>

using namespace partita;

namespace {

/// A file of examples (SFT's prompt | response lines, DPO's pairs), read
/// into a `Data` shuffled by the request's seed.
template <typename Data>
Expected<std::unique_ptr<TrainData>> loadExamples(const TrainRequest &request) {
  auto examples = std::make_unique<Data>();
  examples->setSeed(static_cast<uint64_t>(request.seed));
  if (Status status = examples->load(*request.data, request.config.seq,
                                     request.config.vocab);
      !status.ok())
    return status;
  return std::unique_ptr<TrainData>(std::move(examples));
}

} // namespace

Expected<std::unique_ptr<TrainData>>
partita::makeTrainData(const TrainRequest &request) {
  auto seed = static_cast<uint64_t>(request.seed);
  const ModelConfig &config = request.config;
  if (config.objective == "dpo" || config.objective == "reward")
    return loadExamples<DpoData>(request);
  if (config.objective == "grpo" || config.objective == "ppo")
    return std::unique_ptr<TrainData>(std::make_unique<RolloutData>());
  if (config.lossMask)
    return loadExamples<SftData>(request);
  if (!request.data)
    return std::unique_ptr<TrainData>(
        std::make_unique<SyntheticData>(config.model, config.vocab, seed));
  if (config.model == "mlp")
    return Status::error("--data holds tokens: it needs --model gpt or moe");
  auto file = std::make_unique<TokenFileData>();
  file->setSeed(seed);
  const Mesh &mesh = request.mesh;
  if (mesh.axisIndex("data") >= 0 && request.count > 1 &&
      config.batch * request.micro % mesh.axisSize("data") == 0)
    file->setRanks(mesh.axisSize("data"));
  if (!request.dataTrace.empty())
    if (Status status = file->traceTo(request.dataTrace); !status.ok())
      return status;
  if (Status status = file->load(*request.data, config.seq, config.vocab);
      !status.ok())
    return status;
  return std::unique_ptr<TrainData>(std::move(file));
}

Expected<std::unique_ptr<TrainData>>
partita::startTrainData(const TrainRequest &request) {
  Expected<std::unique_ptr<TrainData>> source = makeTrainData(request);
  if (!source)
    return source.status();
  if (std::error_code error =
          llvm::sys::fs::create_directories(request.outputDir))
    return Status::error("cannot create '" + request.outputDir +
                         "': " + error.message());
  return source;
}

namespace {

/// The run's first lines: what trains where, and what each device holds.
void printTrainHeader(const TrainRequest &request, const Executable &program,
                      const RunMemory &memory) {
  const PipelineOptions &options = request.options;
  llvm::outs() << "training " << request.config.model << " on "
               << request.devices << " (mesh " << request.mesh.toString()
               << ", rules " << options.rules << ", "
               << trainOptimizerName(options.trainOptimizer) << " lr "
               << (request.lrSchedule
                       ? formatRate(request.lrSchedule->peak) + " scheduled"
                       : formatRate(options.trainLearningRate))
               << (request.micro > 1
                       ? ", " + std::to_string(request.micro) + " micro-batches"
                       : std::string())
               << "): " << summarizeCommunication(program).collectives
               << " collectives per step, " << program.allocatedBytes()
               << " bytes per device planned\n";
  // What each device holds between steps: its blocks of the arguments.
  std::map<std::string, int64_t> held;
  for (const ExecutableValue &input : program.inputs)
    held[input.role.empty() ? "other" : input.role] +=
        program.slots[input.slot].bytes();
  llvm::outs() << "held per device between steps: param " << held["param"]
               << ", grad " << held["grad"] << ", opt_state "
               << held["opt_state"] << " bytes\n";
  llvm::outs() << "predicted peak resident memory " << memory.describe()
               << "\n";
}

/// GRPO and PPO: the value head zeroed, the models compiled and what they
/// hold added to `memory` (refused if it does not fit), the first rollouts
/// made with the policy as it starts.
Expected<std::unique_ptr<Reinforcement>> startReinforcement(
    Session &session, const TrainRequest &request, TrainData &source,
    const Executable &program, const TrainStepLayout &layout,
    std::vector<HostArray> &inputs, int64_t firstStep, RunMemory &memory) {
  size_t params = 0;
  while (params < layout.updated && program.inputs[params].role == "param")
    ++params;
  Reinforcement::startValueHead(request, program, layout.updated, inputs);
  Expected<std::unique_ptr<Reinforcement>> started = Reinforcement::start(
      session, request, static_cast<RolloutData &>(source), program, inputs);
  if (!started)
    return started.status();
  llvm::outs() << "models " << (*started)->describeMemory(program) << "\n";
  // Refused before the first step if the models do not fit together (the
  // process now holds their compiled programs too).
  memory.process =
      std::max(memory.process, static_cast<double>(partita::residentBytes()));
  memory.alongside = static_cast<double>((*started)->residentBytes());
  memory.alongsideWhat = "rollouts (generation, scoring, reference)";
  if (Status status = checkRunMemory(memory, "training"); !status.ok())
    return status;
  std::vector<HostArray> policy(inputs.begin(), inputs.begin() + params);
  if (Status status = (*started)->rollout(policy, firstStep); !status.ok())
    return status;
  return started;
}

/// What an objective writes beside the losses: RLHF's rl.csv, reward.svg
/// and held-out rewards, a reward model's held-out accuracy; false after
/// reporting a file that cannot be written.
bool writeObjectiveOutputs(const TrainRequest &request,
                           const Reinforcement *reinforcement,
                           const PreferenceTraining *preference) {
  if (reinforcement) {
    std::string path = request.outputDir + "/rl.csv",
                plot = request.outputDir + "/reward.svg";
    if (!writeOutputFile(
            path, [&](llvm::raw_ostream &os) { os << reinforcement->csv(); }) ||
        !writeOutputFile(plot, [&](llvm::raw_ostream &os) {
          os << lossPlotSvg(
              reinforcement->rewards(),
              request.config.objective + " reward per rollout (" +
                  request.options.rules + " on " + request.devices + ")",
              reinforcement->heldOutPoints(), "held-out reward (greedy)");
        }))
      return false;
    llvm::outs() << "wrote " << path << " and " << plot;
    if (request.eval.every > 0) {
      std::string heldOut = request.outputDir + "/eval.csv";
      if (!writeOutputFile(heldOut, [&](llvm::raw_ostream &os) {
            os << reinforcement->evalCsv();
          }))
        return false;
      llvm::outs() << " and " << heldOut;
    }
    llvm::outs() << "\n";
  }
  if (preference && preference->hasPoints()) {
    // A reward model's held-out accuracy and margin.
    std::string path = request.outputDir + "/eval.csv";
    if (!writeOutputFile(
            path, [&](llvm::raw_ostream &os) { os << preference->csv(); }))
      return false;
    llvm::outs() << "wrote " << path << "\n";
  }
  return true;
}

/// The first `updated` of `inputs` as a snapshot after `steps` steps.
TrainSnapshot wholeSnapshot(const std::vector<HostArray> &inputs,
                            size_t updated, int64_t steps) {
  TrainSnapshot snapshot;
  snapshot.steps = steps;
  for (size_t k = 0; k < updated; ++k) {
    snapshot.blocks.push_back({inputs[k]});
    snapshot.whole.push_back(true);
  }
  return snapshot;
}

/// The last step's timeline as a trace file; false after reporting a file
/// that cannot be written.
bool writeLastTrace(const TrainRequest &request, const Executable &program,
                    const std::vector<DeviceTimeline> &timelines) {
  TraceOptions trace;
  trace.title = "train step " + std::to_string(request.steps - 1);
  if (!writeOutputFile(request.tracePath, [&](llvm::raw_ostream &os) {
        os << deviceTimelineTraceJson(program, timelines, trace);
      }))
    return false;
  llvm::outs() << "the last step's timeline: " << request.tracePath
               << " (ui.perfetto.dev or chrome://tracing)\n";
  return true;
}

/// `into` = `made`'s value, or `made`'s failure.
template <typename T>
Status assign(std::unique_ptr<T> &into, Expected<std::unique_ptr<T>> made) {
  if (!made)
    return made.status();
  into = std::move(*made);
  return Status::success();
}

} // namespace

Status partita::trainOnCpu(const TrainRequest &request) {
  Session session;
  Expected<Executable> program = compileTrainStep(session, request);
  if (!program)
    return program.status();
  // A step that cannot fit is refused before anything is allocated; the
  // final values are not downloaded (snapshots are taken during the run).
  RunMemory memory = runMemory(*program, RunKind::Train);
  memory.finalDownload = false;
  memory.snapshots =
      !request.checkpoints.directory.empty() || request.eval.every > 0;
  if (Status status = checkRunMemory(memory, "training"); !status.ok())
    return status;
  Expected<TrainStepLayout> layout = trainStepLayout(*program);
  if (!layout)
    return layout.status();
  Expected<std::vector<HostArray>> inputs =
      initialTrainInputs(*program, static_cast<uint64_t>(request.seed));
  if (!inputs)
    return inputs.status();
  Expected<std::unique_ptr<TrainData>> source = startTrainData(request);
  if (!source)
    return source.status();

  printTrainHeader(request, *program, memory);
  bool tty = isatty(STDOUT_FILENO);
  ProgressPrinter progress(request, tty);
  TrainLoopOptions loop;
  if (request.lrSchedule)
    loop.learningRate = [schedule = *request.lrSchedule](int64_t step) {
      return schedule.at(step);
    };
  if (!request.checkpoints.resume.empty())
    if (Status status = resumeFromCheckpoint(request, *program, layout->updated,
                                             *inputs, progress, loop.firstStep);
        !status.ok())
      return status;
  if (!request.checkpoints.initFrom.empty())
    if (Status status = initializeFromCheckpoint(request, *program, *inputs);
        !status.ok())
      return status;
  const std::string &objective = request.config.objective;
  std::unique_ptr<PreferenceTraining> preference;
  if (objective == "dpo" || objective == "reward")
    if (Status status =
            assign(preference,
                   PreferenceTraining::start(session, request,
                                             static_cast<DpoData &>(**source)));
        !status.ok())
      return status;
  std::unique_ptr<Reinforcement> reinforcement;
  if (objective == "grpo" || objective == "ppo")
    if (Status status =
            assign(reinforcement, startReinforcement(session, request, **source,
                                                     *program, *layout, *inputs,
                                                     loop.firstStep, memory));
        !status.ok())
      return status;
  CheckpointWriter checkpoints(request);
  std::unique_ptr<Evaluator> evaluator;
  if (request.eval.every > 0 && !preference && !reinforcement)
    if (Status status = assign(evaluator, Evaluator::create(session, request));
        !status.ok())
      return status;
  bool saving = !request.checkpoints.directory.empty();
  long long evalEvery = request.eval.every, last = request.steps;
  auto due = [last](long long every, int64_t done) {
    return every > 0 && (done == last || done % every == 0);
  };
  auto saveDue = [saved = request.checkpoints, last](int64_t done) {
    return saved.due(done, last);
  };
  // --check (GRPO and PPO keep their own): the last step's parameters.
  bool checking = request.check && !reinforcement;
  std::vector<HostArray> finalParams;
  if (saving || evalEvery > 0 || reinforcement || checking) {
    // Reinforcement learning's rollouts and evaluations are its own.
    const Reinforcement *rl = reinforcement.get();
    loop.snapshotAfter = [=](int64_t done) {
      return saveDue(done) || (rl && rl->wantsSnapshot(done)) ||
             (!rl && due(evalEvery, done)) || (checking && done == last);
    };
    loop.onSnapshot = [&, saveDue, due](TrainSnapshot &snapshot) -> Status {
      if (checking && snapshot.steps == last) {
        Expected<std::vector<HostArray>> params =
            snapshotParameters(*program, snapshot);
        if (!params)
          return Status::error("--check: " + params.status().message());
        finalParams = std::move(*params);
      }
      if (reinforcement)
        if (Status status = reinforcement->onSnapshot(*program, snapshot);
            !status.ok())
          return status;
      if (evaluator && due(evalEvery, snapshot.steps))
        if (Expected<double> loss = evaluator->evaluate(*program, snapshot);
            !loss)
          return loss.status();
      if (preference && due(evalEvery, snapshot.steps))
        if (Status status = preference->evaluate(*program, snapshot);
            !status.ok())
          return status;
      if (saveDue(snapshot.steps))
        return checkpoints.submit(*program, snapshot, progress);
      return Status::success();
    };
  }
  std::vector<DeviceTimeline> timelines;
  loop.finalValues = false;
  loop.traceStep = request.steps - 1;
  loop.timelines = &timelines;
  Status status = Status::success();
  if (loop.firstStep == request.steps &&
      !request.checkpoints.directory.empty() &&
      request.checkpoints.directory != request.checkpoints.resume) {
    // Nothing left to train: the loaded state, written in this run's
    // layout (partita checkpoint convert).
    TrainSnapshot loaded =
        wholeSnapshot(*inputs, layout->updated, loop.firstStep);
    status = checkpoints.submit(*program, loaded, progress);
  } else {
    status = trainOnCpuDevices(
        *program, *layout, *inputs, **source, request.steps,
        [&](const TrainStepResult &result) { return progress(result); }, loop);
  }
  if (Status written = checkpoints.finish(); status.ok())
    status = written;
  llvm::outs() << checkpoints.written;
  if (!status.ok()) {
    // The progress bar's line ends before the error.
    llvm::outs().flush();
    if (tty)
      llvm::errs() << "\n";
    return status;
  }
  if ((!timelines.empty() && !writeLastTrace(request, *program, timelines)) ||
      !writeLosses(request, progress, evaluator.get()) ||
      !writeObjectiveOutputs(request, reinforcement.get(), preference.get()))
    return Status::error("");
  if (request.check)
    if (Status status =
            reinforcement
                ? reinforcement->check(progress.losses)
                : checkAgainstOneDevice(request, progress.losses, finalParams);
        !status.ok())
      return status;
  llvm::outs() << "peak resident memory " << formatGiB(peakResidentBytes())
               << " (predicted " << formatGiB(memory.peak()) << ")\n";
  return Status::success();
}
