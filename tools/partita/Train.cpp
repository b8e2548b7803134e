//===- Train.cpp - partita train ------------------------------------------===//
//
// Trains one of the builders' models: the train step (forward, backward,
// optimizer) is compiled for the mesh and rules, then run step after step
// on N emulated CPU devices with the new parameters and optimizer state fed
// back; data are synthetic and deterministic, or windows of a token file.
// Prints progress, writes the losses as CSV and an SVG plot.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/IO/RunSupport.h"
#include "partita/Runtime/Program/Executable.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <unistd.h>

using namespace partita;
using namespace partita::cli;

namespace {

/// The --help page: the options from CommandOptions.def.
std::string trainUsage() {
  return std::string(
             R"(Usage: partita train --model mlp|gpt|moe [model flags] [options]

Builds the model's train step, compiles it for the mesh and rules, and runs
it for --steps steps on N emulated CPU devices, feeding the new parameters
and optimizer state back each step.

Options (defaults in brackets):
)") + api::renderOptions("train") +
         R"(
Synthetic data: gpt and moe see sequences that follow a fixed rule (each
token is 3 times the previous one plus 1, modulo the vocabulary) and learn
to predict the next token; mlp regresses sin(3x).

Examples:
  partita train --model gpt --mesh data=2,model=4 --rules dp+tp --steps 60 --lr 1e-2
  partita train --model gpt --steps 20 --checkpoint-dir ckpt --checkpoint-every 10
)";
}

} // namespace

namespace {

/// The pipeline flags: `--pp` and the mesh's `pipe` axis agree, the rank's
/// sub-mesh is the rest of the mesh; the exit code after a bad one.
std::optional<int> parsePipelineRequest(const CommandLine &cl, long long pipe,
                                        long long virtualStages,
                                        const std::string &meshText,
                                        TrainRequest &request) {
  int64_t axis = request.mesh.axisSize("pipe");
  bool pipelined = pipe > 0 || axis > 0;
  // A `pp+` preset is pipeline parallelism beside the rest of the preset.
  std::string &rules = request.options.rules;
  if (llvm::StringRef(rules).starts_with("pp+")) {
    if (!pipelined)
      return usageError("--rules " + rules +
                        " needs pipeline parallelism (--pp P)");
    rules = rules.substr(3);
  }
  for (const char *flag : {"--schedule", "--virtual-stages", "--check"})
    if (!pipelined && (cl.has(flag) || cl.on(flag)))
      return usageError(std::string(flag) +
                        " needs pipeline parallelism (--pp P)");
  if (!pipelined && request.cuda)
    return usageError("partita train runs on CPU devices (cpu:N) unless "
                      "pipelined (--pp), got '" + request.devices + "'");
  if (!pipelined)
    return std::nullopt;
  if (pipe == 0)
    pipe = axis;
  if (axis != pipe)
    return usageError("--pp " + std::to_string(pipe) +
                      " needs a 'pipe' axis of size " + std::to_string(pipe) +
                      " in the mesh (got '" + meshText + "')");
  std::string name = cl.get("--schedule", "1f1b");
  std::optional<ScheduleKind> kind = parseScheduleKind(name);
  if (!kind)
    return usageError("unknown --schedule '" + name + "' (expected " +
                      availableSchedules() + ")");
  if (virtualStages == 0)
    virtualStages = *kind == ScheduleKind::Interleaved ? 2 : 1;
  if (cl.on("--mixed-precision") || cl.has("--clip-norm"))
    return usageError("--pp does not combine with --mixed-precision or "
                      "--clip-norm yet");
  std::vector<MeshAxis> rest;
  for (const MeshAxis &meshAxis : request.mesh.axes())
    if (meshAxis.name != "pipe")
      rest.push_back(meshAxis);
  if (rest.empty())
    rest.push_back(MeshAxis{"data", 1});
  Expected<Mesh> rankMesh = Mesh::create(rest);
  if (!rankMesh)
    return usageError(rankMesh.status().message());
  request.pipelineRanks = static_cast<int>(pipe);
  request.schedule = *kind;
  request.virtualStages = static_cast<int>(virtualStages);
  request.rankMesh = *rankMesh;
  request.check = cl.on("--check");
  return std::nullopt;
}

} // namespace

/// Parses and checks the flags into `request`; the exit code after
/// reporting a bad one.
std::optional<int>
partita::cli::parseTrainRequest(const CommandLine &cl,
                                TrainRequest &request) {
  int exitCode = 0;
  ModelConfig &config = request.config;
  config.model = cl.get("--model", "");
  if (config.model != "mlp" && config.model != "gpt" && config.model != "moe")
    return usageError("--model must be mlp, gpt or moe (got '" + config.model +
                      "')");
  if (!parseModelConfig(cl, config, exitCode))
    return exitCode;
  if (config.noLoss)
    return usageError("--no-loss leaves nothing to train");
  std::string objective = cl.get("--objective", "lm");
  if (objective == "sft" || objective == "dpo") {
    if (config.model != "gpt" && config.model != "moe")
      return usageError("--objective " + objective +
                        " needs --model gpt or moe");
    if (!cl.has("--data"))
      return usageError(
          "--objective " + objective + " trains on --data FILE: lines of " +
          (objective == "sft" ? "'prompt tokens | response tokens'"
                              : "'prompt | chosen | rejected' tokens"));
    config.lossMask = true;
  } else if (objective != "lm") {
    return usageError("--objective must be lm, sft or dpo, got '" +
                      objective + "'");
  }
  if (objective == "dpo") {
    config.objective = "dpo";
    request.dpoReference = cl.get("--reference");
    if (request.dpoReference.empty())
      return usageError("--objective dpo needs --reference D: the checkpoint "
                        "directory of the reference policy");
    if (config.batch % 2 != 0)
      return usageError("--objective dpo takes pairs of rows: --batch (" +
                        std::to_string(config.batch) + ") must be even");
    Expected<double> beta =
        api::parseNumberFlag("--beta", cl.get("--beta", "0.1"), 0, 1e6, true);
    if (!beta)
      return usageError(beta.status().message());
    config.dpoBeta = *beta;
  } else if (cl.has("--reference") || cl.has("--beta")) {
    return usageError("--reference and --beta need --objective dpo");
  }

  request.devices = cl.get("--devices", "cpu:8");
  Expected<DeviceSpec> deviceSpec = parseDeviceSpec(request.devices);
  if (!deviceSpec)
    return usageError(deviceSpec.status().message());
  request.cuda = deviceSpec->isCuda();
  request.count = static_cast<long>(deviceSpec->count);
  request.lowering.fuse = !cl.on("--no-fusion");
  auto integer = [&](const char *flag, long long fallback, long long &value,
                     int64_t min = 0,
                     int64_t max = std::numeric_limits<int64_t>::max()) {
    if (!cl.has(flag)) {
      value = fallback;
      return true;
    }
    Expected<int64_t> parsed =
        api::parseIntegerFlag(flag, cl.get(flag), min, max);
    if (!parsed) {
      exitCode = usageError(parsed.status().message());
      return false;
    }
    value = *parsed;
    return true;
  };
  // --steps: a trillion steps is past any run; a larger number is a typo,
  // not a request to run forever.
  long long pipe = 0, virtualStages = 0;
  if (!integer("--steps", 10, request.steps, 0, 1000000000000) ||
      !integer("--seed", 0, request.seed) ||
      !integer("--micro-batches", 1, request.micro, 1, 1 << 20) ||
      !integer("--pp", 0, pipe, 0, 1 << 20) ||
      !integer("--virtual-stages", 0, virtualStages, 1, 1024))
    return exitCode;
  if (request.micro < 1 || config.batch % request.micro != 0)
    return usageError("--micro-batches (" + std::to_string(request.micro) +
                      ") must divide --batch (" +
                      std::to_string(config.batch) + ")");
  // The model sees one micro-batch; the step takes the whole batch.
  request.globalBatch = config.batch;
  config.batch /= request.micro;

  PipelineOptions &options = request.options;
  if (!parseTrainChoices(cl, options, exitCode))
    return exitCode;
  options.trainLearningRate =
      options.trainOptimizer == TrainOptimizer::AdamW ? 1e-3 : 0.05;
  if (cl.has("--lr")) {
    Expected<double> rate =
        api::parseNumberFlag("--lr", cl.get("--lr"), 0, 1e6, true);
    if (!rate)
      return usageError(rate.status().message());
    options.trainLearningRate = *rate;
  }
  // A schedule: the step takes its learning rate as an input.
  std::string scheduleName = cl.get("--lr-schedule", "constant");
  long long warmup = 0;
  if (!integer("--warmup", 0, warmup))
    return exitCode;
  if (scheduleName != "constant" || warmup > 0 || cl.has("--min-lr")) {
    LearningRateSchedule schedule;
    if (scheduleName == "cosine")
      schedule.kind = LearningRateSchedule::Kind::Cosine;
    else if (scheduleName == "linear")
      schedule.kind = LearningRateSchedule::Kind::Linear;
    else if (scheduleName != "constant")
      return usageError("--lr-schedule must be constant, cosine or linear, "
                        "got '" + scheduleName + "'");
    schedule.peak = options.trainLearningRate;
    schedule.warmup = warmup;
    schedule.total = request.steps;
    if (cl.has("--min-lr")) {
      Expected<double> minimum = api::parseNumberFlag(
          "--min-lr", cl.get("--min-lr"), 0, schedule.peak);
      if (!minimum)
        return usageError(minimum.status().message() + " (at most --lr)");
      schedule.minimum = *minimum;
    }
    request.lrSchedule = schedule;
    options.trainLearningRate = 0;
  }
  std::string defaultMesh = "data=" + std::to_string(request.count);
  if (pipe > 1 && request.count % pipe == 0)
    defaultMesh = "pipe=" + std::to_string(pipe) + ",data=" +
                  std::to_string(request.count / pipe);
  std::string meshText = cl.get("--mesh", defaultMesh);
  Expected<Mesh> mesh = parseMeshSpec(meshText);
  if (!mesh)
    return usageError("invalid --mesh '" + meshText +
                      "': " + mesh.status().message());
  if (request.count > 1)
    if (Status status = checkDeviceCount("the mesh " + meshText,
                                         mesh->numDevices(), request.count);
        !status)
      return usageError(status.message());
  request.mesh = *mesh;
  options.rules = cl.get("--rules", "dp");
  if (options.rules.empty())
    return usageError("--rules needs a preset or a file, got ''");
  options.overlap = !cl.on("--no-overlap");
  if (std::optional<int> code = parsePipelineRequest(cl, pipe, virtualStages,
                                                     meshText, request))
    return code;
  options.stage = request.count > 1 ? Stage::Partitioned : Stage::Verified;
  options.interconnectFile = cl.get("--interconnect");
  options.trainMicroBatches = request.micro;
  options.trainMixedPrecision = cl.on("--mixed-precision");
  request.outputDir = cl.get("--output", "partita-train");
  request.tracePath = cl.get("--trace", request.outputDir + "/trace.json");
  if (cl.has("--data"))
    request.data = cl.get("--data");
  request.dataTrace = cl.get("--data-trace");
  return std::nullopt;
}

int partita::cli::trainCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  if (std::optional<int> done = parseCommand(args, "train", trainUsage(), cl))
    return *done;
  if (cl.input != "-")
    return usageError("unexpected argument '" + cl.input +
                      "'; the model is --model (see 'partita train --help')");
  TrainRequest request;
  if (std::optional<int> code = parseTrainRequest(cl, request))
    return *code;
  if (std::optional<int> code = parseCheckpointRequest(cl, request))
    return *code;
  if (std::optional<int> code = parseEvalRequest(cl, request))
    return *code;
  if (request.options.trainMixedPrecision && request.config.dtype != "bf16")
    return usageError("--mixed-precision trains a bf16 model: add --dtype bf16");
  // Where the run writes is checked before it compiles and trains: an
  // unwritable --output was reported only after the last step.
  for (const auto &[flag, directory] :
       {std::pair<const char *, std::string>{"--output", request.outputDir},
        {"--checkpoint-dir", request.checkpoints.directory}})
    if (!directory.empty())
      if (Status status = checkWritableDirectory(directory); !status.ok())
        return usageError(std::string(flag) + ": " + status.message());
  if (request.pipelineRanks > 1 || request.mesh.axisSize("pipe") > 0) {
    if (request.lrSchedule)
      return usageError("--pp does not combine with a learning-rate "
                        "schedule yet");
    if (Status status = trainPipelined(request); !status.ok()) {
      if (!status.message().empty())
        llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    return 0;
  }

  if (Status status = trainOnCpu(request); !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

std::optional<int> partita::cli::parseEvalRequest(const CommandLine &cl,
                                                  TrainRequest &request) {
  EvalRequest &eval = request.eval;
  auto integer = [&](const char *flag, long long fallback, long long &value) {
    return nonNegativeFlag(cl, flag, fallback, value);
  };
  if (std::optional<int> code = integer("--eval-every", 0, eval.every))
    return code;
  if (std::optional<int> code = integer("--eval-batches", 4, eval.batches))
    return code;
  eval.data = cl.get("--eval-data");
  if (eval.every == 0)
    for (const char *flag : {"--eval-data", "--eval-batches"})
      if (cl.has(flag))
        return usageError(std::string(flag) + " needs --eval-every K");
  if (eval.every > 0 && eval.batches == 0)
    return usageError("--eval-batches must be at least 1");
  if (eval.every > 0 && request.pipelineRanks > 1)
    return usageError("evaluation of pipelined steps (--pp) is not "
                      "supported yet");
  return std::nullopt;
}
