//===- Checkpoints.cpp - A training run's checkpoints ---------------------===//
//
// `partita train --checkpoint-dir D --checkpoint-every K [--keep N]` saves
// the train step's state every K steps in the background, `--resume D`
// continues from the newest complete checkpoint (in any layout: each
// tensor is read whole and laid out by the new step), and `partita
// checkpoint info D` says what one holds (docs/Training.md, "Checkpoints").
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

using namespace partita;

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

} // namespace

std::string partita::modelFingerprint(const TrainRequest &request) {
  const ModelConfig &c = request.config;
  const PipelineOptions &o = request.options;
  std::ostringstream text;
  text << c.model << " layers=" << c.layers << " d_model=" << c.dModel
       << " heads=" << c.heads << " kv_heads=" << c.kvHeads << " seq=" << c.seq
       << " vocab=" << c.vocab << " mlp_ratio=" << c.mlpRatio
       << " dtype=" << c.dtype;
  if (c.model == "moe")
    text << " experts=" << c.experts;
  if (c.scan)
    text << " scan";
  if (c.rotary)
    text << " rotary";
  if (c.rmsNorm)
    text << " rmsnorm";
  if (c.swiglu)
    text << " swiglu";
  if (!c.causal)
    text << " bidirectional";
  text << " embedding=" << c.embedding
       << " optimizer=" << trainOptimizerName(o.trainOptimizer).str();
  if (o.trainMixedPrecision)
    text << " mixed-precision";
  return text.str();
}

std::vector<std::string> partita::modelFlagsOf(const std::string &fingerprint) {
  // "gpt layers=2 d_model=64 ... scan ... optimizer=adamw": the model, then
  // `key=value` as `--key value` and bare words as switches; kv_heads=0
  // (as many as heads) is the flag left out.
  std::istringstream words(fingerprint);
  std::vector<std::string> flags;
  std::string word;
  if (!(words >> word))
    return flags;
  flags = {"--model", word};
  while (words >> word) {
    size_t equals = word.find('=');
    std::string key = word.substr(0, equals);
    std::replace(key.begin(), key.end(), '_', '-');
    if (equals == std::string::npos) {
      flags.push_back("--" + key);
      continue;
    }
    std::string value = word.substr(equals + 1);
    if (key == "kv-heads" && value == "0")
      continue;
    flags.push_back("--" + key);
    flags.push_back(value);
  }
  return flags;
}

CheckpointWriter::~CheckpointWriter() {
  if (writer.joinable())
    writer.join();
}

CheckpointMeta CheckpointWriter::meta(int64_t steps,
                                      const ProgressPrinter &progress) const {
  CheckpointMeta meta;
  meta.step = steps;
  meta.model = modelFingerprint(request);
  meta.mesh = request.mesh.toString();
  meta.rules = request.options.rules;
  meta.seed = static_cast<uint64_t>(request.seed);
  meta.losses = progress.losses;
  meta.seconds = progress.seconds;
  return meta;
}

Status CheckpointWriter::submit(const Executable &program,
                                TrainSnapshot &snapshot,
                                const ProgressPrinter &progress) {
  CheckpointState state;
  state.meta = meta(snapshot.steps, progress);
  state.mesh = program.mesh;
  std::vector<std::string> keys =
      checkpointKeys(program, snapshot.blocks.size());
  for (size_t k = 0; k < snapshot.blocks.size(); ++k) {
    CheckpointValue value;
    value.key = keys[k];
    value.dtype = program.slots[program.inputs[k].slot].dtype;
    value.globalShape = program.inputs[k].globalShape;
    value.sharding = program.inputs[k].sharding;
    value.whole = snapshot.whole[k];
    value.blocks = std::move(snapshot.blocks[k]);
    state.values.push_back(std::move(value));
  }
  return submitState(std::move(state));
}

Status CheckpointWriter::submitState(CheckpointState state) {
  Clock::time_point start = Clock::now();
  // The previous checkpoint must be on disk first (one write at a time).
  if (Status status = finish(); !status.ok())
    return status;
  std::string root = request.checkpoints.directory;
  int keep = static_cast<int>(request.checkpoints.keep);
  int64_t step = state.meta.step;
  auto write = [this, root, keep, step, state = std::move(state)] {
    Clock::time_point began = Clock::now();
    // In a multi-process run every process's writer meets the others'
    // (writeCheckpoint()'s two-phase commit) while training goes on.
    Expected<int64_t> bytes =
        writeCheckpoint(root, state, keep, across.group ? &across : nullptr);
    std::lock_guard<std::mutex> lock(mutex);
    if (!bytes) {
      failure = bytes.status();
      return;
    }
    lastBytes = *bytes;
    lastStep = step;
    lastWriteMs = millisecondsSince(began);
    pending = true;
  };
  if (inCaller) {
    write();
    stallMs.push_back(millisecondsSince(start));
    return finish();
  }
  writer = std::thread(std::move(write));
  stallMs.push_back(millisecondsSince(start));
  return Status::success();
}

Status CheckpointWriter::finish() {
  if (writer.joinable())
    writer.join();
  std::lock_guard<std::mutex> lock(mutex);
  if (!failure.ok())
    return failure;
  if (!pending)
    return Status::success();
  pending = false;
  char line[200];
  if (inCaller)
    std::snprintf(line, sizeof(line),
                  "checkpoint: %s/step-%08lld written (%lld bytes) in %.1f ms; "
                  "training paused for it\n",
                  request.checkpoints.directory.c_str(),
                  static_cast<long long>(lastStep),
                  static_cast<long long>(lastBytes), lastWriteMs);
  else
    std::snprintf(line, sizeof(line),
                  "checkpoint: %s/step-%08lld written (%lld bytes) in %.1f ms "
                  "in the background; training paused %.1f ms to hand it "
                  "over\n",
                  request.checkpoints.directory.c_str(),
                  static_cast<long long>(lastStep),
                  static_cast<long long>(lastBytes), lastWriteMs,
                  stallMs.empty() ? 0.0 : stallMs.back());
  written += line;
  return Status::success();
}

Expected<CheckpointInfo>
partita::openStartCheckpoint(const TrainRequest &request, bool resuming) {
  std::string flag = resuming ? request.checkpoints.resumeFlag
                              : request.checkpoints.initFromFlag;
  const std::string &root =
      resuming ? request.checkpoints.resume : request.checkpoints.initFrom;
  Expected<std::string> latest = latestCheckpoint(root);
  if (!latest)
    return Status::error(flag + ": " + latest.status().message());
  Expected<CheckpointInfo> info = readCheckpoint(*latest, /*verify=*/true);
  if (!info)
    return Status::error(flag + ": " + info.status().message());
  if (!resuming)
    return info;
  std::string model = modelFingerprint(request);
  if (info->meta.model != model)
    return Status::error(flag + ": " + *latest + " was saved for model '" +
                         info->meta.model + "'; this run trains '" + model +
                         "'");
  if (info->meta.step > request.steps)
    return Status::error(
        flag + ": " + *latest + " has " + std::to_string(info->meta.step) +
        " steps done, more than --steps " + std::to_string(request.steps));
  return info;
}

void partita::continueFrom(const CheckpointInfo &checkpoint,
                           ProgressPrinter &progress, int64_t &firstStep) {
  firstStep = checkpoint.meta.step;
  progress.losses = checkpoint.meta.losses;
  progress.seconds = checkpoint.meta.seconds;
  progress.firstStep = firstStep;
  if (progress.quiet)
    return;
  llvm::outs() << "resumed from " << checkpoint.directory << " (" << firstStep
               << " steps done; saved under mesh " << checkpoint.meta.mesh
               << ", rules " << checkpoint.meta.rules << ")\n";
  llvm::outs().flush();
}

Status partita::resumeFromCheckpoint(const TrainRequest &request,
                                     const Executable &program, size_t updated,
                                     std::vector<HostArray> &inputs,
                                     ProgressPrinter &progress,
                                     int64_t &firstStep) {
  Expected<CheckpointInfo> info = openStartCheckpoint(request, true);
  if (!info)
    return info.status();
  if (Status status = loadCheckpoint(*info, program, updated, inputs);
      !status.ok())
    return Status::error(request.checkpoints.resumeFlag + ": " +
                         status.message());
  continueFrom(*info, progress, firstStep);
  return Status::success();
}

size_t partita::parametersToInitialize(const TrainRequest &request,
                                       const Executable &program,
                                       const CheckpointInfo &checkpoint) {
  size_t params = 0;
  while (params < program.inputs.size() &&
         program.inputs[params].role == "param")
    ++params;
  // A reward model started from a language model: every parameter but the
  // scalar head (the last; the checkpoint's last is the vocabulary head),
  // which keeps its initial values.
  // So is PPO's value head (the last) started from a language model.
  if ((request.config.objective != "reward" && !request.config.valueHead) ||
      params == 0)
    return params;
  const ExecutableValue &head = program.inputs[params - 1];
  std::string key = "param/" + std::to_string(params - 1);
  auto found = std::find_if(
      checkpoint.tensors.begin(), checkpoint.tensors.end(),
      [&](const CheckpointTensor &tensor) { return tensor.key == key; });
  return found == checkpoint.tensors.end() || found->shape != head.globalShape
             ? params - 1
             : params;
}

Status partita::initializeFromCheckpoint(const TrainRequest &request,
                                         const Executable &program,
                                         std::vector<HostArray> &inputs,
                                         bool quiet) {
  Expected<CheckpointInfo> info = openStartCheckpoint(request, false);
  if (!info)
    return info.status();
  size_t loaded = parametersToInitialize(request, program, *info);
  if (Status status = loadCheckpoint(*info, program, loaded, inputs,
                                     /*onlyRole=*/"param");
      !status.ok())
    return Status::error(request.checkpoints.initFromFlag + ": " +
                         status.message());
  if (quiet)
    return Status::success();
  llvm::outs() << "initialised " << loaded << " parameters from "
               << info->directory << " (" << info->meta.step << " steps of '"
               << info->meta.model << "')\n";
  llvm::outs().flush();
  return Status::success();
}
