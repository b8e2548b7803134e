//===- Trainer.h - partita train's run, as a library ------------*- C++ -*-===//
//
// What a training run is made of, once its flags are parsed: the request,
// the compiled step, the progress line, checkpoints written in the
// background and read back, held-out evaluation, DPO's reference scores,
// and the losses written out (docs/Training.md). The CLI parses argv into a
// TrainRequest and drives these; so can any other front end.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRAINER_TRAINER_H
#define PARTITA_TRAINER_TRAINER_H

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Driver/Session.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Communication/ProcessGroup.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Pipeline/PipelineRun.h"
#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Runtime/Training/Checkpoint.h"
#include "partita/Runtime/Training/Sampling.h"
#include "partita/Runtime/Training/TrainData.h"
#include "partita/Runtime/Training/TrainLoop.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Transforms/Pipeline.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace partita {

std::string formatSeconds(double seconds);
/// A learning rate for the progress line ("0.00025").
std::string formatRate(double rate);

/// Checkpoints of a run (Checkpoints.cpp).
struct CheckpointRequest {
  /// Where checkpoints go (--checkpoint-dir; with --resume alone, its
  /// directory); empty: none.
  std::string directory;
  /// Every this many steps, and after the last (0: after the last only).
  long long every = 0;
  /// The newest complete checkpoints kept (0: all).
  long long keep = 3;
  /// --resume: the directory to continue from.
  std::string resume;
  /// Whether a checkpoint is written after `done` of `last` steps.
  bool due(int64_t done, int64_t last) const {
    return !directory.empty() &&
           (done == last || (every > 0 && done % every == 0));
  }
  /// --init-from: a directory whose newest checkpoint's parameters start
  /// this run (its optimizer state and step do not).
  std::string initFrom;
  /// The flag that named initFrom: --init-from, or --reference (DPO starts
  /// from its reference unless told otherwise), for messages.
  std::string initFromFlag = "--init-from";
  /// What named `resume` in messages: --resume, or `checkpoint convert DIR`
  /// (which resumes from DIR in another layout).
  std::string resumeFlag = "--resume";
};

/// Held-out evaluation during a run (Evaluation.cpp).
struct EvalRequest {
  /// Every this many steps and after the last (0: never).
  long long every = 0;
  /// Batches averaged per evaluation.
  long long batches = 4;
  /// A token file of held-out data (empty: synthetic, another seed).
  std::string data;
};

/// Reinforcement learning's choices (--objective grpo|ppo; Reinforcement.h).
struct RlRequest {
  /// Samples per prompt (grpo's group; ppo: 1 unless given).
  int64_t group = 4;
  /// Train steps on each iteration's rollouts.
  int64_t epochs = 1;
  /// A reward model's checkpoint directory, or a rule ("reverse").
  std::string rewardModel, rewardRule;
  double lengthBonus = 0;
  /// PPO's KL penalty per token in the reward (grpo's is in the loss).
  double klBeta = 0.05;
  /// GAE's lambda (gamma is 1).
  double lambda = 0.95;
  /// How rollouts are drawn: temperature, top-k/p, --eos, new tokens.
  SamplingOptions sampling;
};

/// What `partita train` was asked for, every flag parsed and checked.
struct TrainRequest {
  ModelConfig config;
  std::string devices;
  long count = 1;
  long long steps = 10, seed = 0, micro = 1;
  /// The step's batch (the model sees config.batch = globalBatch / micro).
  int64_t globalBatch = 0;
  Mesh mesh;
  PipelineOptions options;
  LoweringOptions lowering;
  std::string outputDir;
  /// --data: a token file (SFT: prompt | response lines; DPO: prompt |
  /// chosen | rejected); none: synthetic data. --data-trace: where the
  /// token file's reads are logged.
  std::optional<std::string> data;
  std::string dataTrace;
  /// Where the last step's timeline goes (--trace) [outputDir/trace.json].
  std::string tracePath;
  /// Pipeline parallelism (--pp, or a `pipe` axis in --mesh): ranks,
  /// schedule, virtual stages per rank, and the mesh of one rank.
  int pipelineRanks = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int virtualStages = 1;
  Mesh rankMesh;
  /// --check: compare with the non-pipelined step on one device.
  bool check = false;
  /// --devices cuda:N (pipelined steps only).
  bool cuda = false;
  CheckpointRequest checkpoints;
  EvalRequest eval;
  /// --objective dpo: the reference policy's checkpoint directory.
  std::string dpoReference;
  /// --distributed: this process is one of those mpirun started, driving
  /// its share of the devices (TrainDistributed.cpp); --timeout.
  bool distributed = false;
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  /// --lr-schedule/--warmup/--min-lr; when set, the step takes its
  /// learning rate as an input and the loop feeds it per step.
  std::optional<LearningRateSchedule> lrSchedule;
  RlRequest rl;
};

/// The model's train step, compiled for the request's mesh and rules; an
/// empty message after the diagnostics were printed.
Expected<Executable> compileTrainStep(Session &session,
                                      const TrainRequest &request);

/// The data source the request asks for: a token file (with its trace) or
/// synthetic data.
Expected<std::unique_ptr<TrainData>> makeTrainData(const TrainRequest &request);

/// makeTrainData, and the run's output directory made: what a run needs
/// before its first step.
Expected<std::unique_ptr<TrainData>>
startTrainData(const TrainRequest &request);

/// Trains the request's model on emulated CPU devices, without pipeline
/// parallelism: the step compiled, the run's header, each step's progress
/// line, checkpoints, evaluation, the last step's trace, the losses
/// written (TrainRun.cpp). An empty message after diagnostics were
/// printed.
Status trainOnCpu(const TrainRequest &request);

/// trainOnCpu() as one of the processes `mpirun` started (--distributed):
/// this process drives its share of the devices (TrainDistributed.cpp).
/// Before the loop every process agrees that all are ready; a failure
/// during it ends this process at once with its error (the others fail
/// after the timeout, naming it).
Status trainDistributed(const TrainRequest &request);

/// The same with pipeline parallelism (`--pp`, a `pipe` axis): the stages
/// compiled, their figures and the schedule printed, the measured
/// timeline and pipeline.json, and with `check` the non-pipelined step on
/// one device beside it (TrainPipelined.cpp).
/// With `group` (a multi-process run, --distributed), this process runs
/// its own pipeline ranks (PipelineRunner's peers), rank 0 reporting, and
/// every process writes its stages' tensors into each checkpoint.
Status trainPipelined(TrainRequest &request, ProcessGroup *group = nullptr);

/// trainPipelined() as one of the processes `mpirun` started.
Status trainPipelinedDistributed(TrainRequest &request);

/// `partita compile --train --pp`: how the pipelined step is cut and where
/// its parts go (empty paths: not written).
struct PipelinedCompileRequest {
  /// Pipeline ranks (the mesh's `pipe` axis), schedule, stages per rank.
  int64_t ranks = 2;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int virtualStages = 1;
  bool fusion = true;
  /// Each stage program's module; the step for `partita-exec train`; the
  /// HTML page (titled `title`); the figures as JSON.
  std::string programsDirectory, outputDirectory, htmlPath, title, reportPath;
};

/// Compiles `module`'s loss function into a pipelined train step over
/// `mesh` (its `pipe` axis the ranks, the rest each rank's sub-mesh) with
/// `options`' optimizer and passes, prints its stages and schedule, and
/// writes what `request` names (CompilePipelined.cpp). An empty message
/// after the diagnostics were printed.
Status compilePipelinedModule(Session &session, mlir::ModuleOp module,
                              const PipelineOptions &options, const Mesh &mesh,
                              const PipelinedCompileRequest &request);

/// Prints each step's progress line (a bar on a terminal) and keeps the
/// losses; a non-finite loss stops training.
class ProgressPrinter {
public:
  ProgressPrinter(const TrainRequest &request, bool tty)
      : request(request), tty(tty),
        tokensPerStep(request.config.model == "mlp"
                          ? request.globalBatch
                          : request.globalBatch * request.config.seq),
        started(std::chrono::steady_clock::now()) {}

  Status operator()(const TrainStepResult &result) {
    int64_t s = result.step, steps = request.steps;
    double loss = result.loss, took = result.seconds;
    losses.push_back(loss);
    seconds.push_back(took);
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    double eta = elapsed / (s + 1 - firstStep) * (steps - s - 1);
    std::string line =
        "step " + std::to_string(s + 1) + "/" + std::to_string(steps) +
        "  loss " + std::to_string(loss) + "  " +
        (request.lrSchedule
             ? "lr " + formatRate(request.lrSchedule->at(s)) + "  "
             : std::string()) +
        std::to_string(static_cast<long long>(tokensPerStep / took)) +
        (request.config.model == "mlp" ? " examples/s" : " tokens/s") +
        "  eta " + formatSeconds(eta);
    if (quiet) {
      // Another process prints (a multi-process run's rank 0).
    } else if (tty) {
      int filled = static_cast<int>(20.0 * (s + 1) / steps);
      llvm::outs() << "\r[" << std::string(filled, '#')
                   << std::string(20 - filled, ' ') << "] " << line;
      if (s + 1 == steps)
        llvm::outs() << "\n";
      llvm::outs().flush();
    } else {
      // Flushed per step: a log followed while training, or cut short by a
      // crash, has every step that ran.
      llvm::outs() << line << "\n";
      llvm::outs().flush();
    }
    if (!std::isfinite(loss))
      return Status::error("the loss is " + std::to_string(loss) + " at step " +
                           std::to_string(s + 1) + "; try a smaller --lr");
    return Status::success();
  }

  std::vector<double> losses, seconds;
  /// The first step this run makes (a resumed run's: the steps done).
  int64_t firstStep = 0;
  /// Keeps the losses without printing them.
  bool quiet = false;

private:
  const TrainRequest &request;
  bool tty;
  int64_t tokensPerStep;
  std::chrono::steady_clock::time_point started;
};

/// Success when `directory` exists or can be made, and a file can be
/// created in it (tried, then removed).
Status checkWritableDirectory(const std::string &directory);

/// The model and training choices a checkpoint's state depends on, as text
/// (checkpoint.json's "model"; a checkpoint loads only into the same).
std::string modelFingerprint(const TrainRequest &request);

/// The `partita train` flags that build the model of a fingerprint
/// ("--model gpt --layers 2 --d-model 64 ... --optimizer adamw").
std::vector<std::string> modelFlagsOf(const std::string &fingerprint);

/// The checkpoint --resume (`resuming`) or --init-from names: its newest
/// complete checkpoint, every file verified; for --resume also of the same
/// model, with no more steps done than --steps. Errors name the flag.
Expected<CheckpointInfo> openStartCheckpoint(const TrainRequest &request,
                                             bool resuming);
/// A resumed run's start: the checkpoint's loss history into `progress`,
/// its steps into `firstStep`, and the line saying so.
void continueFrom(const CheckpointInfo &checkpoint, ProgressPrinter &progress,
                  int64_t &firstStep);

/// --init-from: the parameters of the newest complete checkpoint into
/// `inputs`, and the line saying so; an error naming the flag.
Status initializeFromCheckpoint(const TrainRequest &request,
                                const Executable &program,
                                std::vector<HostArray> &inputs,
                                bool quiet = false);

/// Writes checkpoints in the background, one at a time: submit() hands the
/// snapshot to a writer thread (waiting for the previous write first) and
/// returns; finish() waits for the write and reports it.
class CheckpointWriter {
public:
  explicit CheckpointWriter(const TrainRequest &request) : request(request) {}
  ~CheckpointWriter();
  Status submit(const Executable &program, TrainSnapshot &snapshot,
                const ProgressPrinter &progress);
  /// The same for a state already gathered (a pipelined step's).
  Status submitState(CheckpointState state);
  /// checkpoint.json's fields for a checkpoint after `steps` steps.
  CheckpointMeta meta(int64_t steps, const ProgressPrinter &progress) const;
  Status finish();
  /// One line per checkpoint written, for the end of the run.
  std::string written;
  /// Set in a multi-process run: the processes write each checkpoint
  /// together, each from its writer thread (writeCheckpoint()'s `across`).
  CheckpointWriters across;
  /// Writes on the caller's thread (training waits): a pipelined step's
  /// processes meet on the same MPI communicator as the writers do, and
  /// two threads' collectives on one communicator would mix.
  bool inCaller = false;
  /// Per checkpoint: how long training waited to hand it over (ms).
  std::vector<double> stallMs;

private:
  const TrainRequest &request;
  std::thread writer;
  std::mutex mutex;
  Status failure = Status::success();
  int64_t lastBytes = 0, lastStep = 0;
  /// A write done whose line finish() has not yet added.
  bool pending = false;
  double lastWriteMs = 0;
};

/// The model's loss function compiled for the run's layout, run on the
/// trained parameters over held-out batches.
class Evaluator {
public:
  /// The held-out data of `request` and, with `compileLoss`, its loss
  /// function compiled for the run's layout (without: evaluateWith only).
  static Expected<std::unique_ptr<Evaluator>>
  create(Session &session, const TrainRequest &request,
         bool compileLoss = true);
  /// The mean held-out loss with the parameters of `snapshot` (taken from
  /// `step`, the train step); printed and kept in `points`.
  Expected<double> evaluate(const Executable &step,
                            const TrainSnapshot &snapshot);
  /// The same with the loss computed by `run`, after each held-out batch
  /// is filled into `inputs` (a pipelined step's data inputs).
  Expected<double> evaluateWith(int64_t steps,
                                const std::vector<HostArray *> &inputs,
                                const std::function<Expected<double>()> &run);
  /// Keeps the lines unprinted (a process other than 0).
  void silence() { quiet = true; }
  /// eval.csv: step, eval_loss, perplexity.
  std::string csv() const;
  /// (steps done, held-out loss) of every evaluation so far.
  std::vector<std::pair<int64_t, double>> points;
  /// The loss function compiled for the run's layout.
  const Executable &lossFunction() const { return program; }
  /// Evaluates on this process's `devices` only (a multi-process run):
  /// snapshots then hold local blocks, each device evaluates on its
  /// parameter blocks and its rows of each batch, and the loss is read
  /// from a local replica; `silent` keeps the lines unprinted.
  void runAcross(const LocalDevices &devices, bool silent);

private:
  Evaluator() = default;
  Expected<double> evaluateLocally(const Executable &step,
                                   const TrainSnapshot &snapshot);
  /// Keeps and prints one evaluation.
  void report(int64_t steps, double loss);
  Executable program;
  std::unique_ptr<TrainData> data;
  int64_t batches = 1;
  LocalDevices local;
  bool quiet = false;
};

/// The parameters a snapshot holds, as global arrays (the train step's
/// first inputs).
Expected<std::vector<HostArray>>
snapshotParameters(const Executable &step, const TrainSnapshot &snapshot);

/// DPO (Preferences.cpp): the reference policy's sequence log-probabilities of
/// every pair, computed once with the model's log-probability function and
/// handed to the data; and the held-out preference margin.
class PreferenceTraining {
public:
  /// Scores the training pairs (and --eval-data's) with the reference.
  /// `quiet`: says nothing (a multi-process run's ranks but 0, which each
  /// score every pair on their own emulated devices).
  static Expected<std::unique_ptr<PreferenceTraining>>
  start(Session &session, const TrainRequest &request, DpoData &pairs,
        bool quiet = false);
  /// The held-out margin and accuracy with the parameters of `snapshot`.
  Status evaluate(const Executable &step, const TrainSnapshot &snapshot);
  /// A reward model's evaluations so far as eval.csv (step, accuracy,
  /// margin); empty for DPO, which prints its margins only.
  std::string csv() const;
  bool hasPoints() const { return !points.empty(); }

private:
  PreferenceTraining() = default;
  /// Keeps and prints a reward model's held-out accuracy and margin.
  Status reportRewards(int64_t steps, const std::vector<double> &rewards);
  struct Point {
    int64_t steps = 0;
    double accuracy = 0, margin = 0;
  };
  std::vector<Point> points;
  /// `--objective reward`: scored by the model's score function, no
  /// reference policy.
  bool rewardModel = false;
  bool quiet = false;
  Expected<std::vector<double>> score(const std::vector<HostArray> &params,
                                      DpoData &pairs);
  Executable program;
  /// Which inputs of the log-probability function are parameters (in the
  /// train step's order) and which its data.
  std::vector<size_t> paramIndex, dataIndex;
  std::unique_ptr<DpoData> heldOut;
  std::vector<double> heldOutReference;
};

/// How many of `program`'s parameters --init-from takes from `checkpoint`:
/// all, but for a reward model started from a language model every one but
/// its scalar head (the last), which keeps its initial values.
size_t parametersToInitialize(const TrainRequest &request,
                              const Executable &program,
                              const CheckpointInfo &checkpoint);

/// --resume: loads the newest complete checkpoint into `inputs` (the first
/// `updated` of the train step), the loss history into `progress`, and the
/// steps done into `firstStep`; an error naming the flag.
Status resumeFromCheckpoint(const TrainRequest &request,
                            const Executable &program, size_t updated,
                            std::vector<HostArray> &inputs,
                            ProgressPrinter &progress, int64_t &firstStep);

/// `program`'s layout and first inputs: parameters initialised from
/// `seed`, optimizer state zero.
Status startTrainInputs(const Executable &program, uint64_t seed,
                        TrainStepLayout &layout,
                        std::vector<HostArray> &inputs);

/// A CSV table: `header`, then one line per row, its first value the
/// steps done (an integer), the others to 9 significant digits.
std::string csvTable(const std::string &header,
                     const std::vector<std::vector<double>> &rows);

/// `request` for one device: the axes of `mesh`, each of size 1 (so the
/// rules find their axes), compiled unpartitioned; --check's reference.
Expected<TrainRequest> oneDeviceRequest(const TrainRequest &request,
                                        const Mesh &mesh);

/// The checkpoint `path` names (itself, or a directory's newest), every
/// file's checksum verified; errors start with `flag`.
Expected<CheckpointInfo> openCheckpoint(const std::string &path,
                                        const std::string &flag);

/// `program`'s parameters (role param, in order) from `checkpoint`: every
/// one there with its dtype and shape; errors name the checkpoint.
Expected<std::vector<HostArray>>
checkpointParameters(const CheckpointInfo &checkpoint,
                     const Executable &program);

/// --check: the step compiled for one device (the mesh's axes, or with
/// pipeline parallelism one rank's, each of size 1), trained from the same
/// start on the same data; each step's loss against `losses`, its final
/// parameters against `parameters` (normwise). Across processes (`group`)
/// every process compares its own parameters and process 0 the losses. An
/// error when they differ (TrainPipelined.cpp).
Status checkAgainstOneDevice(const TrainRequest &request,
                             const std::vector<double> &losses,
                             const std::vector<HostArray> &parameters,
                             ProcessGroup *group = nullptr);

/// |a - b| / |b| over all elements (normwise): how --check compares
/// parameters (docs/Pipeline.md, "What is checked").
double relativeDifference(const HostArray &a, const HostArray &b);

/// Writes loss.csv and loss.svg into the output directory and says so;
/// false after reporting a file that cannot be written.
bool writeLosses(const TrainRequest &request, const ProgressPrinter &progress,
                 const Evaluator *evaluator = nullptr);

} // namespace partita

#endif // PARTITA_TRAINER_TRAINER_H
