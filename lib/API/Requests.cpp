//===- Requests.cpp - A command's options, as its request -----------------===//
//
// The typed side of the option table: the values a command was given
// (OptionValues, however they came: argv, Python keywords) checked and
// turned into the structs the layers below take — the pipeline's options,
// a model's configuration, a training run's request. Every message names
// the flag (docs/Training.md, docs/Models.md).
//
//===----------------------------------------------------------------------===//

#include "partita/API/Requests.h"

#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Sharding/Mesh.h"

#include "llvm/ADT/StringRef.h"

#include <limits>

using namespace partita;
using namespace partita::api;

namespace {

/// A model dimension: sizes past 2^31 are typos (a layer of width 2^31
/// already holds 2^62 parameters); the builders check what each must be.
Status parseInt(const OptionValues &cl, const std::string &flag,
                int64_t &value) {
  if (!cl.has(flag))
    return Status::success();
  Expected<int64_t> parsed =
      api::parseIntegerFlag(flag, cl.get(flag), 0, INT32_MAX);
  if (!parsed) {
    return Status::error(parsed.status().message());
  }
  value = *parsed;
  return Status::success();
}

const std::vector<std::string> &modelIntFlags() {
  static const std::vector<std::string> flags = {
      "--layers",  "--d-model", "--heads", "--kv-heads",
      "--seq",     "--batch",   "--vocab", "--mlp-ratio",
      "--experts", "--top-k",   "--groups"};
  return flags;
}

/// The pipeline flags: `--pp` and the mesh's `pipe` axis agree, the rank's
/// sub-mesh is the rest of the mesh.
Status pipelineRequestFromOptions(const OptionValues &cl, long long pipe,
                                  long long virtualStages,
                                  const std::string &meshText,
                                  TrainRequest &request) {
  int64_t axis = request.mesh.axisSize("pipe");
  bool pipelined = pipe > 0 || axis > 0;
  // A `pp+` preset is pipeline parallelism beside the rest of the preset.
  std::string &rules = request.options.rules;
  if (llvm::StringRef(rules).starts_with("pp+")) {
    if (!pipelined)
      return Status::error("--rules " + rules +
                           " needs pipeline parallelism (--pp P)");
    rules = rules.substr(3);
  }
  // Without --pp, --check trains the same steps on one device after the
  // run (DPO's reference scores are the run's own: not without --pp).
  if (!pipelined && cl.on("--check") && request.config.objective == "dpo")
    return Status::error("--check with --objective dpo needs pipeline "
                         "parallelism (--pp P)");
  if (!pipelined && cl.on("--check"))
    request.check = true;
  for (const char *flag : {"--schedule", "--virtual-stages"})
    if (!pipelined && (cl.has(flag) || cl.on(flag)))
      return Status::error(std::string(flag) +
                           " needs pipeline parallelism (--pp P)");
  if (!pipelined && request.cuda)
    return Status::error("partita train runs on CPU devices (cpu:N) unless "
                         "pipelined (--pp), got '" +
                         request.devices + "'");
  if (!pipelined)
    return Status::success();
  if (pipe == 0)
    pipe = axis;
  if (axis != pipe)
    return Status::error(
        "--pp " + std::to_string(pipe) + " needs a 'pipe' axis of size " +
        std::to_string(pipe) + " in the mesh (got '" + meshText + "')");
  std::string name = cl.get("--schedule", "1f1b");
  std::optional<ScheduleKind> kind = parseScheduleKind(name);
  if (!kind)
    return Status::error("unknown --schedule '" + name + "' (expected " +
                         availableSchedules() + ")");
  if (virtualStages == 0)
    virtualStages = *kind == ScheduleKind::Interleaved ? 2 : 1;
  Expected<Mesh> rankMesh = pipelineRankMesh(request.mesh);
  if (!rankMesh)
    return Status::error(rankMesh.status().message());
  request.pipelineRanks = static_cast<int>(pipe);
  request.schedule = *kind;
  request.virtualStages = static_cast<int>(virtualStages);
  request.rankMesh = *rankMesh;
  request.check = cl.on("--check");
  return Status::success();
}

Status evalRequestFromOptions(const OptionValues &cl, TrainRequest &request) {
  EvalRequest &eval = request.eval;
  auto integer = [&](const char *flag, long long fallback, long long &value) {
    return integerOption(cl, flag, fallback, value);
  };
  if (Status status = integer("--eval-every", 0, eval.every); !status.ok())
    return status;
  if (Status status = integer("--eval-batches", 4, eval.batches); !status.ok())
    return status;
  eval.data = cl.get("--eval-data");
  if (eval.every == 0)
    for (const char *flag : {"--eval-data", "--eval-batches"})
      if (cl.has(flag))
        return Status::error(std::string(flag) + " needs --eval-every K");
  if (eval.every > 0 && eval.batches == 0)
    return Status::error("--eval-batches must be at least 1");
  const std::string &objective = request.config.objective;
  if (eval.every > 0 && (objective == "dpo" || objective == "reward") &&
      (request.pipelineRanks > 1 || request.mesh.axisSize("pipe") > 0))
    return Status::error("--eval-every with --objective " + objective +
                         " and --pp: a pipelined step does not score "
                         "preference pairs");
  if (eval.every > 0 && (objective == "grpo" || objective == "ppo") &&
      eval.data.empty())
    return Status::error("--eval-every with --objective " + objective +
                         " needs --eval-data FILE: held-out prompts, whose "
                         "greedy responses are scored");
  return Status::success();
}

Status checkpointRequestFromOptions(const OptionValues &cl,
                                    TrainRequest &request) {
  CheckpointRequest &checkpoints = request.checkpoints;
  checkpoints.resume = cl.get("--resume");
  checkpoints.initFrom = cl.get("--init-from");
  if (!checkpoints.resume.empty() && !checkpoints.initFrom.empty())
    return Status::error("--resume and --init-from exclude each other");
  // DPO starts the policy from the reference unless told otherwise.
  if (checkpoints.initFrom.empty() && checkpoints.resume.empty() &&
      !request.dpoReference.empty()) {
    checkpoints.initFrom = request.dpoReference;
    checkpoints.initFromFlag = "--reference";
  }
  // A directory without a checkpoint is reported now, not after compiling.
  for (const auto &[flag, root] :
       {std::pair<std::string, std::string>{"--resume", checkpoints.resume},
        {checkpoints.initFromFlag, checkpoints.initFrom}})
    if (!root.empty())
      if (Expected<std::string> latest = latestCheckpoint(root); !latest)
        return Status::error(flag + ": " + latest.status().message());
  checkpoints.directory = cl.get("--checkpoint-dir", checkpoints.resume);
  auto integer = [&](const char *flag, long long fallback, long long &value) {
    return integerOption(cl, flag, fallback, value);
  };
  if (Status status = integer("--checkpoint-every", 0, checkpoints.every);
      !status.ok())
    return status;
  if (Status status = integer("--keep", 3, checkpoints.keep); !status.ok())
    return status;
  if (checkpoints.directory.empty())
    for (const char *flag : {"--checkpoint-every", "--keep"})
      if (cl.has(flag))
        return Status::error(std::string(flag) + " needs --checkpoint-dir");
  return Status::success();
}

} // namespace

Status partita::api::integerOption(const OptionValues &cl, const char *flag,
                                   long long fallback, long long &value,
                                   int64_t min, int64_t max) {
  if (!cl.has(flag)) {
    value = fallback;
    return Status::success();
  }
  Expected<int64_t> parsed = parseIntegerFlag(flag, cl.get(flag), min, max);
  if (!parsed)
    return Status::error(parsed.status().message());
  value = *parsed;
  return Status::success();
}

Status partita::api::numberOption(const OptionValues &cl, const char *flag,
                                  double &value, double min, double max,
                                  bool minExclusive) {
  if (!cl.has(flag))
    return Status::success();
  Expected<double> parsed =
      parseNumberFlag(flag, cl.get(flag), min, max, minExclusive);
  if (!parsed)
    return parsed.status();
  value = *parsed;
  return Status::success();
}

Status partita::api::modelConfigFromOptions(const OptionValues &cl,
                                            ModelConfig &config) {
  int64_t *targets[] = {&config.layers,  &config.dModel,   &config.heads,
                        &config.kvHeads, &config.seq,      &config.batch,
                        &config.vocab,   &config.mlpRatio, &config.experts,
                        &config.topK,    &config.groups};
  for (size_t i = 0; i < modelIntFlags().size(); ++i)
    if (Status status = parseInt(cl, modelIntFlags()[i], *targets[i]);
        !status.ok())
      return status;
  // Above the number of experts every token fits in every expert.
  if (Status status = numberOption(cl, "--capacity-factor",
                                   config.capacityFactor, 0, 1e6, true);
      !status.ok())
    return status;
  config.scan = cl.on("--scan");
  config.noLoss = cl.on("--no-loss");
  config.lossMask = cl.on("--loss-mask") || cl.on("--dpo") || cl.on("--reward");
  if (cl.on("--dpo") && cl.on("--reward"))
    return Status::error("--dpo and --reward exclude each other");
  if (cl.on("--dpo"))
    config.objective = "dpo";
  if (cl.on("--reward"))
    config.objective = "reward";
  if (cl.has("--rl")) {
    std::string rl = cl.get("--rl");
    if (rl != "grpo" && rl != "ppo")
      return Status::error("--rl must be grpo or ppo, got '" + rl + "'");
    if (config.lossMask || config.noLoss)
      return Status::error("--rl builds its own loss: leave out --loss-mask, "
                           "--dpo, --reward and --no-loss");
    config.lossMask = true;
    config.objective = rl;
    config.valueHead = rl == "ppo";
  }
  if (cl.has("--generation")) {
    std::string program = cl.get("--generation");
    if (program != "prefill" && program != "decode")
      return Status::error("--generation must be prefill or decode, got '" +
                           program + "'");
    if (config.lossMask || config.noLoss)
      return Status::error("--generation builds a program without a loss: "
                           "leave out --loss-mask, --dpo, --reward and "
                           "--no-loss");
    config.objective = program;
  }
  config.rotary = cl.on("--rotary");
  config.rmsNorm = cl.on("--rmsnorm");
  config.swiglu = cl.on("--swiglu");
  config.dtype = cl.get("--dtype", "f32");
  config.embedding = cl.get("--embedding", "onehot");
  config.causal = !cl.on("--bidirectional");
  config.contextAttention = cl.get("--context-attention", "ring");
  if (config.contextAttention != "ring" && config.contextAttention != "ulysses")
    return Status::error("--context-attention must be ring or ulysses, got '" +
                         config.contextAttention + "'");
  return Status::success();
}

Status partita::api::trainChoicesFromOptions(const OptionValues &cl,
                                             PipelineOptions &options) {
  std::string optimizer = cl.get("--optimizer", "adamw");
  std::optional<TrainOptimizer> parsedOptimizer =
      parseTrainOptimizer(optimizer);
  if (!parsedOptimizer || *parsedOptimizer == TrainOptimizer::None) {
    return Status::error("--optimizer must be adamw or sgd, got '" + optimizer +
                         "'");
  }
  options.trainOptimizer = *parsedOptimizer;
  std::string remat = cl.get("--remat", "none");
  std::optional<Remat> parsedRemat = parseRemat(remat);
  if (!parsedRemat) {
    return Status::error("--remat must be none, per-layer or full, got '" +
                         remat + "'");
  }
  options.trainRemat = *parsedRemat;
  if (Status status =
          numberOption(cl, "--clip-norm", options.trainClipNorm, 0, 1e30, true);
      !status.ok())
    return status;

  return Status::success();
}

Status partita::api::pipelineOptionsFromOptions(const OptionValues &cl,
                                                Stage stage,
                                                PipelineOptions &options) {
  options.stage = stage;
  options.strict = cl.on("--strict");
  options.overlap = !cl.on("--no-overlap");
  options.interconnectFile = cl.get("--interconnect");
  if (Status status = resolveInterconnect(options); !status)
    return status;
  options.rules = cl.get("--rules");
  // An empty value is a mistake (a shell variable that was not set), not
  // "no rules": it compiled with nothing sharded.
  if (cl.has("--rules") && options.rules.empty()) {
    return Status::error("--rules needs a preset or a file, got ''");
  }
  if (cl.has("--combine-bytes")) {
    Expected<int64_t> bytes =
        api::parseIntegerFlag("--combine-bytes", cl.get("--combine-bytes"), 0,
                              std::numeric_limits<int64_t>::max());
    if (!bytes) {
      return Status::error(bytes.status().message() +
                           " (bytes per device; 0: no combining)");
    }
    options.combineBytes = *bytes;
  }
  if (Status status =
          numberOption(cl, "--max-padding", options.maxPadding, 0, 1);
      !status.ok())
    return status;
  if (cl.on("--train")) {
    if (Status status = trainChoicesFromOptions(cl, options); !status.ok())
      return status;
    options.trainMixedPrecision = cl.on("--mixed-precision");
    if (cl.has("--micro-batches")) {
      Expected<int64_t> micro = api::parseIntegerFlag(
          "--micro-batches", cl.get("--micro-batches"), 1, 1 << 20);
      if (!micro) {
        return Status::error(micro.status().message());
      }
      options.trainMicroBatches = *micro;
    }
    if (Status status =
            numberOption(cl, "--lr", options.trainLearningRate, 0, 1e6, true);
        !status.ok())
      return status;
  } else if (cl.has("--optimizer") || cl.has("--lr") ||
             cl.on("--mixed-precision") || cl.has("--micro-batches") ||
             cl.has("--remat") || cl.has("--clip-norm")) {
    return Status::error("--optimizer, --lr, --mixed-precision, "
                         "--micro-batches, --remat and --clip-norm need "
                         "--train");
  }
  if (cl.has("--mesh")) {
    std::string text = cl.get("--mesh");
    llvm::StringRef spec = text;
    if (size_t colon = spec.find(':'); colon != llvm::StringRef::npos)
      spec = spec.drop_front(colon + 1);
    Expected<Mesh> mesh = parseMeshSpec(spec.str());
    if (!mesh) {
      return Status::error("invalid --mesh '" + text +
                           "': " + mesh.status().message());
    }
    options.mesh = text;
  }
  return Status::success();
}

namespace {

/// --optimizer, --remat, --clip-norm, --lr and its schedule (--lr-schedule,
/// --warmup, --min-lr): with a schedule, the step takes its learning rate
/// as an input.
Status optimizerFromOptions(const OptionValues &cl, TrainRequest &request) {
  PipelineOptions &options = request.options;
  if (Status status = trainChoicesFromOptions(cl, options); !status.ok())
    return status;
  options.trainLearningRate =
      options.trainOptimizer == TrainOptimizer::AdamW ? 1e-3 : 0.05;
  if (Status status =
          numberOption(cl, "--lr", options.trainLearningRate, 0, 1e6, true);
      !status.ok())
    return status;
  // A schedule: the step takes its learning rate as an input.
  std::string scheduleName = cl.get("--lr-schedule", "constant");
  long long warmup = 0;
  if (Status status = integerOption(cl, "--warmup", 0, warmup); !status.ok())
    return status;
  if (scheduleName != "constant" || warmup > 0 || cl.has("--min-lr")) {
    LearningRateSchedule schedule;
    if (scheduleName == "cosine")
      schedule.kind = LearningRateSchedule::Kind::Cosine;
    else if (scheduleName == "linear")
      schedule.kind = LearningRateSchedule::Kind::Linear;
    else if (scheduleName != "constant")
      return Status::error("--lr-schedule must be constant, cosine or linear, "
                           "got '" +
                           scheduleName + "'");
    schedule.peak = options.trainLearningRate;
    schedule.warmup = warmup;
    schedule.total = request.steps;
    if (cl.has("--min-lr")) {
      Expected<double> minimum = api::parseNumberFlag(
          "--min-lr", cl.get("--min-lr"), 0, schedule.peak);
      if (!minimum)
        return Status::error(minimum.status().message() + " (at most --lr)");
      schedule.minimum = *minimum;
    }
    request.lrSchedule = schedule;
    options.trainLearningRate = 0;
  }
  return Status::success();
}

/// --objective grpo|ppo's flags (docs/Training.md, "RLHF").
Status rlRequestFromOptions(const OptionValues &cl,
                            const std::string &objective,
                            TrainRequest &request) {
  RlRequest &rl = request.rl;
  ModelConfig &config = request.config;
  bool ppo = objective == "ppo";
  long long group = 0, epochs = 0, tokens = 0, topK = 0, eos = 0;
  for (Status status :
       {integerOption(cl, "--group", ppo ? 1 : 4, group, 1, 1 << 20),
        integerOption(cl, "--ppo-epochs", 1, epochs, 1, 1 << 20),
        integerOption(cl, "--max-new-tokens", config.seq, tokens, 1, 1 << 24),
        integerOption(cl, "--top-k", 0, topK, 0, 1 << 30),
        integerOption(cl, "--eos", -1, eos, -1, 1 << 30)})
    if (!status.ok())
      return status;
  rl.group = group;
  rl.epochs = epochs;
  rl.sampling.maxNewTokens = tokens;
  rl.sampling.topK = topK;
  rl.sampling.eos = eos;
  rl.sampling.temperature = 1;
  double klBeta = ppo ? 0.05 : 0.04;
  for (Status status :
       {numberOption(cl, "--temperature", rl.sampling.temperature, 0, 1e6,
                     true),
        numberOption(cl, "--top-p", rl.sampling.topP, 0, 1, true),
        numberOption(cl, "--kl-beta", klBeta, 0, 1e6),
        numberOption(cl, "--clip-range", config.clipRange, 0, 1e6, true),
        numberOption(cl, "--gae-lambda", rl.lambda, 0, 1),
        numberOption(cl, "--length-bonus", rl.lengthBonus, -1e6, 1e6)})
    if (!status.ok())
      return status;
  // GRPO's penalty is in its loss; PPO's in the per-token rewards.
  (ppo ? rl.klBeta : config.klBeta) = klBeta;
  if (ppo)
    config.klBeta = 0;
  config.valueHead = ppo;
  request.check = cl.on("--check");
  rl.rewardModel = cl.get("--reward-model");
  rl.rewardRule = cl.get("--reward-rule");
  if (rl.rewardModel.empty() && rl.rewardRule.empty())
    return Status::error("--objective " + objective +
                         " needs a reward: --reward-model D (a checkpoint of "
                         "--objective reward) or --reward-rule reverse");
  if (!rl.rewardRule.empty() && rl.rewardRule != "reverse")
    return Status::error("--reward-rule must be reverse (the demo task's), "
                         "got '" +
                         rl.rewardRule + "'");
  if (config.model != "gpt")
    return Status::error("--objective " + objective +
                         " generates text: it needs --model gpt");
  if (config.batch % rl.group != 0)
    return Status::error("--batch (" + std::to_string(config.batch) +
                         ") must be a multiple of --group (" +
                         std::to_string(rl.group) +
                         "): each prompt's samples "
                         "train together");
  return Status::success();
}

/// --objective and the flags that go with it (docs/Training.md).
Status objectiveFromOptions(const OptionValues &cl,
                            const std::string &objective,
                            TrainRequest &request) {
  ModelConfig &config = request.config;
  if (objective == "sft" || objective == "dpo" || objective == "reward" ||
      objective == "grpo" || objective == "ppo") {
    if (config.model != "gpt" && config.model != "moe")
      return Status::error("--objective " + objective +
                           " needs --model gpt or moe");
    if (!cl.has("--data"))
      return Status::error(
          "--objective " + objective + " trains on --data FILE: lines of " +
          (objective == "sft" ? "'prompt tokens | response tokens'"
           : objective == "dpo" || objective == "reward"
               ? "'prompt | chosen | rejected' tokens"
               : "prompt tokens (a '|' ends each; SFT data serve)"));
    config.lossMask = true;
  } else if (objective != "lm") {
    return Status::error(
        "--objective must be lm, sft, dpo, reward, grpo or ppo, got '" +
        objective + "'");
  }
  if (objective == "grpo" || objective == "ppo") {
    config.objective = objective;
    if (Status status = rlRequestFromOptions(cl, objective, request);
        !status.ok())
      return status;
  }
  if (objective == "reward") {
    // A reward model: the Bradley-Terry loss on a scalar head's scores of
    // each pair's chosen and rejected answers (docs/Training.md).
    config.objective = "reward";
    if (config.batch % 2 != 0)
      return Status::error("--objective reward takes pairs of rows: --batch (" +
                           std::to_string(config.batch) + ") must be even");
  }
  if (objective == "dpo") {
    config.objective = "dpo";
    request.dpoReference = cl.get("--reference");
    if (request.dpoReference.empty())
      return Status::error(
          "--objective dpo needs --reference D: the checkpoint "
          "directory of the reference policy");
    if (config.batch % 2 != 0)
      return Status::error("--objective dpo takes pairs of rows: --batch (" +
                           std::to_string(config.batch) + ") must be even");
    Expected<double> beta =
        api::parseNumberFlag("--beta", cl.get("--beta", "0.1"), 0, 1e6, true);
    if (!beta)
      return Status::error(beta.status().message());
    config.dpoBeta = *beta;
  } else if (cl.has("--reference") || cl.has("--beta")) {
    return Status::error("--reference and --beta need --objective dpo");
  }
  return Status::success();
}

} // namespace

Status partita::api::trainRequestFromOptions(const OptionValues &cl,
                                             TrainRequest &request) {
  ModelConfig &config = request.config;
  config.model = cl.get("--model", "");
  if (config.model != "mlp" && config.model != "gpt" && config.model != "moe")
    return Status::error("--model must be mlp, gpt or moe (got '" +
                         config.model + "')");
  if (Status status = modelConfigFromOptions(cl, config); !status.ok())
    return status;
  if (config.noLoss)
    return Status::error("--no-loss leaves nothing to train");
  std::string objective = cl.get("--objective", "lm");
  if (Status status = objectiveFromOptions(cl, objective, request);
      !status.ok())
    return status;

  request.devices = cl.get("--devices", "cpu:8");
  Expected<DeviceSpec> deviceSpec = parseDeviceSpec(request.devices);
  if (!deviceSpec)
    return Status::error(deviceSpec.status().message());
  request.cuda = deviceSpec->isCuda();
  request.count = static_cast<long>(deviceSpec->count);
  request.lowering.fuse = !cl.on("--no-fusion");
  auto integer = [&](const char *flag, long long fallback, long long &value,
                     int64_t min = 0,
                     int64_t max = std::numeric_limits<int64_t>::max()) {
    return integerOption(cl, flag, fallback, value, min, max);
  };
  // --steps: a trillion steps is past any run; a larger number is a typo,
  // not a request to run forever.
  long long pipe = 0, virtualStages = 0;
  for (Status status :
       {integer("--steps", 10, request.steps, 0, 1000000000000),
        integer("--seed", 0, request.seed),
        integer("--micro-batches", 1, request.micro, 1, 1 << 20),
        integer("--pp", 0, pipe, 0, 1 << 20),
        integer("--virtual-stages", 0, virtualStages, 1, 1024)})
    if (!status.ok())
      return status;
  if (request.micro < 1 || config.batch % request.micro != 0)
    return Status::error("--micro-batches (" + std::to_string(request.micro) +
                         ") must divide --batch (" +
                         std::to_string(config.batch) + ")");
  // The model sees one micro-batch; the step takes the whole batch.
  request.globalBatch = config.batch;
  config.batch /= request.micro;

  PipelineOptions &options = request.options;
  if (Status status = optimizerFromOptions(cl, request); !status.ok())
    return status;
  std::string defaultMesh = "data=" + std::to_string(request.count);
  if (pipe > 1 && request.count % pipe == 0)
    defaultMesh = "pipe=" + std::to_string(pipe) +
                  ",data=" + std::to_string(request.count / pipe);
  std::string meshText = cl.get("--mesh", defaultMesh);
  Expected<Mesh> mesh = parseMeshSpec(meshText);
  if (!mesh)
    return Status::error("invalid --mesh '" + meshText +
                         "': " + mesh.status().message());
  if (request.count > 1)
    if (Status status = checkDeviceCount("the mesh " + meshText,
                                         mesh->numDevices(), request.count);
        !status)
      return Status::error(status.message());
  request.mesh = *mesh;
  options.rules = cl.get("--rules", "dp");
  if (options.rules.empty())
    return Status::error("--rules needs a preset or a file, got ''");
  options.overlap = !cl.on("--no-overlap");
  if (Status status = pipelineRequestFromOptions(cl, pipe, virtualStages,
                                                 meshText, request);
      !status.ok())
    return status;
  options.stage = request.count > 1 ? Stage::Partitioned : Stage::Verified;
  options.interconnectFile = cl.get("--interconnect");
  if (Status status = resolveInterconnect(options); !status)
    return status;
  options.trainMicroBatches = request.micro;
  options.trainMixedPrecision = cl.on("--mixed-precision");
  request.outputDir = cl.get("--output", "partita-train");
  request.tracePath = cl.get("--trace", request.outputDir + "/trace.json");
  if (cl.has("--data"))
    request.data = cl.get("--data");
  request.dataTrace = cl.get("--data-trace");
  request.distributed = cl.on("--distributed");
  if (cl.has("--timeout")) {
    if (!request.distributed)
      return Status::error("--timeout applies to --distributed runs");
    Expected<int64_t> timeout = parseTimeoutMilliseconds(cl.get("--timeout"));
    if (!timeout)
      return timeout.status();
    request.timeout = std::chrono::milliseconds(*timeout);
  }
  // The trace records windows of a token file; without one it wrote nothing
  // and exited 0.
  if (!request.dataTrace.empty() && (!request.data || config.lossMask))
    return Status::error("--data-trace records the windows read from a token "
                         "file: it needs --data FILE with the default "
                         "(language-model) objective");
  if (Status status = checkpointRequestFromOptions(cl, request); !status.ok())
    return status;
  if (Status status = evalRequestFromOptions(cl, request); !status.ok())
    return status;
  if ((objective == "grpo" || objective == "ppo") &&
      (request.distributed || request.pipelineRanks > 1 ||
       request.mesh.axisSize("pipe") > 0 || request.micro > 1))
    return Status::error("--objective " + objective +
                         " runs in one process without pipeline parallelism "
                         "or micro-batches: leave out --distributed, --pp and "
                         "--micro-batches");
  if (request.check && request.distributed && request.pipelineRanks <= 1 &&
      request.mesh.axisSize("pipe") == 0)
    return Status::error("--check with --distributed needs pipeline "
                         "parallelism (--pp P)");
  if (request.check && !request.checkpoints.resume.empty())
    return Status::error("--check trains the same steps on one device from "
                         "the start: it does not go with --resume");
  if (options.trainMixedPrecision && config.dtype != "bf16")
    return Status::error(
        "--mixed-precision trains a bf16 model: add --dtype bf16");
  return Status::success();
}
