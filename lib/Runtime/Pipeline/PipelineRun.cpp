//===- PipelineRun.cpp - Running a pipelined train step -------------------===//
//
// One thread per pipeline rank runs its schedule; values travel between
// ranks through a mailbox keyed by (stage, program, micro-batch, output)
// that keeps each value until every program reading it has run, which is
// also what the activation memory of a schedule is measured from. Stage
// programs run on the rank's devices as threads (runOnCpuDevices), so a
// sent value crosses as a whole array: the receiving program lays it out
// as its own input asks. Under MPI each process runs the threads of its own
// ranks, sends what ranks of other processes read as tagged messages, and
// one more thread receives theirs into the mailbox. See docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Pipeline/PipelineRun.h"

#include "PipelineState.h"
#include "RankValues.h"

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace partita;
using rank_values::Mailbox;
using rank_values::RankValue;
using rank_values::toWhole;
using rank_values::ValueKey;
using rank_values::wholeValue;

namespace {

using Clock = std::chrono::steady_clock;

const StageProgram &programOf(const PipelineStage &stage,
                              StageProgramKind kind) {
  switch (kind) {
  case StageProgramKind::Forward:
    return stage.forward;
  case StageProgramKind::Backward:
    return stage.backward;
  case StageProgramKind::WeightGrad:
    return stage.weightGrad;
  }
  return stage.forward;
}

StageProgramKind programFor(PipeWork work) {
  switch (work) {
  case PipeWork::Forward:
    return StageProgramKind::Forward;
  case PipeWork::Backward:
    return StageProgramKind::Backward;
  case PipeWork::WeightGrad:
    return StageProgramKind::WeightGrad;
  }
  return StageProgramKind::Forward;
}

/// Rows i, i + M, i + 2M, ... of `whole` (micro-batch i of M).
HostArray microBatchRows(const HostArray &whole, int64_t i, int64_t m) {
  std::vector<int64_t> shape = whole.shape;
  int64_t rows = shape.empty() ? 1 : shape[0];
  int64_t rowBytes = rows > 0 ? whole.numBytes() / rows : 0;
  if (!shape.empty())
    shape[0] = rows / m;
  HostArray part = HostArray::zeros(whole.dtype, shape);
  for (int64_t r = 0; r < rows / m; ++r)
    std::memcpy(part.bytes.data() + r * rowBytes,
                whole.bytes.data() + (r * m + i) * rowBytes, rowBytes);
  return part;
}

HostArray scalarOf(DType dtype, double value) {
  HostArray array = HostArray::zeros(dtype, {});
  setElementFromDouble(array, 0, value);
  return array;
}

} // namespace

PipelinePeers::~PipelinePeers() = default;

PipelineRunner::~PipelineRunner() = default;

Expected<std::unique_ptr<PipelineRunner>>
PipelineRunner::create(const PipelinedStep &step, uint64_t seed,
                       PipelinePeers *peers) {
  std::unique_ptr<PipelineRunner> runner(new PipelineRunner());
  runner->state = std::make_unique<State>();
  State &state = *runner->state;
  state.step = step;
  if (static_cast<int>(step.stages.size()) != step.schedule.stages())
    return Status::error("the pipelined step has " +
                         std::to_string(step.stages.size()) +
                         " stages, its schedule " +
                         std::to_string(step.schedule.stages()));
  int ranks = step.schedule.ranks;
  state.ranksPerProcess = std::max(ranks, 1);
  if (peers) {
    state.peers = peers;
    state.processes = peers->processes();
    state.process = peers->process();
    if (state.processes > ranks || ranks % state.processes != 0)
      return Status::error(
          std::to_string(state.processes) + " processes cannot share the " +
          std::to_string(ranks) +
          " pipeline ranks evenly: the process count must divide the "
          "pipeline ranks (each rank's devices run in one process)");
    state.ranksPerProcess = ranks / state.processes;
  }
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const PipelineStage &stage = step.stages[s];
    StageState stageState;
    const Executable &update = stage.update;
    Expected<TrainStepLayout> layout = trainStepLayout(update);
    if (!layout)
      return Status::error("stage " + std::to_string(s) +
                           "'s update: " + layout.status().message());
    stageState.layout = *layout;
    if (stage.normInput >= 0) {
      // The other f32 scalar, if any, is the learning rate.
      stageState.layout.lrInput = -1;
      for (size_t i = layout->updated; i < update.inputs.size(); ++i)
        if (static_cast<int32_t>(i) != stage.normInput &&
            update.inputs[i].role == "input" &&
            update.inputs[i].globalShape.empty() &&
            update.slots[update.inputs[i].slot].dtype == DType::F32)
          stageState.layout.lrInput = static_cast<int>(i);
      if (stage.norm.inputs.size() != stage.paramIndex.size())
        return Status::error(
            "stage " + std::to_string(s) + "'s norm program takes " +
            std::to_string(stage.norm.inputs.size()) + " gradients for " +
            std::to_string(stage.paramIndex.size()) + " parameters");
    }
    if (layout->dataInputs.size() != stage.paramIndex.size())
      return Status::error("stage " + std::to_string(s) + "'s update takes " +
                           std::to_string(layout->dataInputs.size()) +
                           " gradients for " +
                           std::to_string(stage.paramIndex.size()) +
                           " parameters");
    // Another process holds the parameters of its own stages.
    for (size_t i = 0; state.isLocalStage(s) && i < update.inputs.size();
         ++i) {
      if (i < stage.paramIndex.size())
        stageState.updateInputs.push_back(randomInput(
            update, i, seed, static_cast<size_t>(stage.paramIndex[i])));
      else
        stageState.updateInputs.push_back(
            HostArray::zeros(update.slots[update.inputs[i].slot].dtype,
                             update.inputs[i].globalShape));
    }
    state.stages.push_back(std::move(stageState));
    for (StageProgramKind kind :
         {StageProgramKind::Forward, StageProgramKind::Backward,
          StageProgramKind::WeightGrad}) {
      const StageProgram &program = programOf(stage, kind);
      if (!program.present)
        continue;
      if (program.inputs.size() != program.executable.inputs.size())
        return Status::error("stage " + std::to_string(s) +
                             ": a program's inputs and their sources differ");
      int rank = step.schedule.rankOfStage(static_cast<int>(s));
      for (const StageInput &input : program.inputs) {
        if (input.kind != StageInput::Kind::Output)
          continue;
        OutputKey key{input.stage, static_cast<int>(input.program),
                      input.index};
        ++state.readers[key][rank];
        if (kind == StageProgramKind::Forward)
          ++state.forwardReaders[key][rank];
      }
    }
  }
  return runner;
}

namespace {

/// Appends and reads back the plain values a process reports to process 0
/// after a step (its loss, timeline and peaks).
struct ByteWriter {
  std::vector<uint8_t> bytes;
  template <typename T> void put(T value) {
    const auto *at = reinterpret_cast<const uint8_t *>(&value);
    bytes.insert(bytes.end(), at, at + sizeof(T));
  }
};

struct ByteReader {
  const std::vector<uint8_t> &bytes;
  size_t at = 0;
  template <typename T> bool get(T &value) {
    if (at + sizeof(T) > bytes.size())
      return false;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return true;
  }
};

/// This machine, as a checksum of its host name (0 when it has none).
uint64_t hostId() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return 0;
  return crc32c(reinterpret_cast<const uint8_t *>(name), std::strlen(name));
}

/// How the outputs read by other ranks travel in a run over processes:
/// each output read on another process is a link, and the message of
/// micro-batch i on link l carries tag l·M + i.
struct Routes {
  std::vector<OutputKey> links;
  std::map<OutputKey, int> linkOf;
  /// Per output: readers on this process, and the other processes that
  /// read it.
  std::map<OutputKey, int> localReaders;
  std::map<OutputKey, std::vector<int>> remoteProcesses;
  /// Per output: a rank of this process that reads it (holds it once
  /// received).
  std::map<OutputKey, int> localHolder;
  /// Messages this process receives per step.
  int64_t expected = 0;
};

} // namespace

/// One step of a pipelined run: its micro-batches' data, how outputs
/// travel between ranks and processes, the ranks' threads, the optimizer
/// steps, and the report (PipelineRunner::runStep).
struct PipelineRunner::StepRun {
  StepRun(State *state, const PipelineProgramRunner &runProgram)
      : state(state), where(*state), step(state->step), schedule(step.schedule),
        peers(state->peers), runProgram(runProgram), m(schedule.microBatches),
        mailbox(schedule.ranks) {}

  /// Every micro-batch's rows of every data input, zeroed accumulators,
  /// and the routes of the outputs other ranks read.
  Status prepare(const std::vector<HostArray> &data);
  /// Runs every action of the schedule on this process's ranks (and, under
  /// MPI, takes in what other processes send).
  Status runActions();
  /// Each local stage's optimizer step on its summed gradients, after every
  /// rank's actions (unless the ranks ran them: updatesInRanks).
  Status runUpdates();
  /// Stage `s`'s optimizer step (`norm`: the whole model's Σg², clipping).
  Status runUpdate(size_t s, std::optional<float> norm);
  /// The step's number (the optimizer's step count) and learning rate
  /// (where the updates take it as an input).
  int64_t stepNumber = 0;
  double learningRate = 0;
  /// Without clipping each rank runs its stages' updates as soon as its
  /// last action is done, while the other ranks still work (a later
  /// stage's update beside an earlier stage's last backward passes); under
  /// clipping every update waits for the whole model's norm.
  bool updatesInRanks = false;
  /// Under clipping: ||g||² over every stage (each process's stages'
  /// parts, added in stage order on every process).
  Expected<float> squaredNorm();
  /// Under MPI, process 0 gathers every process's loss, actions and peaks.
  Status gatherReport(PipelineStepResult &result);

  State *state;
  const State &where;
  const PipelinedStep &step;
  const PipelineSchedule &schedule;
  PipelinePeers *peers;
  const PipelineProgramRunner &runProgram;
  int64_t m;
  /// Every micro-batch's rows of every data input (whole).
  std::vector<std::vector<RankValue>> slices;
  /// Per local stage: its update program's inputs for this step, the
  /// parameters and optimizer state cut once for the rank's devices (FSDP's
  /// shards stay shards until a program gathers them); and its gradient
  /// sums, kept as the devices' blocks — under data parallelism the
  /// addends of a partial sum — from micro-batch to micro-batch and
  /// reduced once, by the update.
  std::vector<std::vector<RankValue>> stageValues, accumulators;
  /// Per local stage and parameter: the parameter laid out as the stage's
  /// programs read it, where that differs from the update's layout (FSDP's
  /// shards gathered), made at its first use in the step. Each stage's
  /// entries are touched by its rank's thread alone.
  std::vector<std::vector<std::optional<RankValue>>> gatheredParams;
  /// Programs run as blocks on the rank's devices (the CPU devices of this
  /// process); false: through runProgram, whole arrays in and out.
  bool onDevices = false;
  /// An evaluation: the forward programs only, in the schedule's order, no
  /// gradient sums; the parameters go back where they were (restore()).
  bool forwardOnly = false;
  /// After a forward-only run: the parameters and state taken from the
  /// devices' blocks by prepare() go back to the stages.
  void restore();
  Routes routes;
  Mailbox mailbox;
  std::mutex resultMutex;
  Status failure = Status::success();
  double lossSum = 0;
  std::vector<TimedAction> timed;
  Clock::time_point begin;

private:
  double seconds(Clock::time_point at) const {
    return std::chrono::duration<double>(at - begin).count();
  }
  void fail(Status status) {
    std::lock_guard<std::mutex> lock(resultMutex);
    if (failure.ok())
      failure = std::move(status);
    mailbox.fail();
  }
  void runRank(int rank);
  void receive();
  /// Runs `program` of pipeline rank `rank` on `inputs`.
  Expected<std::vector<RankValue>>
  call(const Executable &program, const std::vector<const RankValue *> &inputs,
       int rank);
};

Expected<std::vector<RankValue>>
PipelineRunner::StepRun::call(const Executable &program,
                              const std::vector<const RankValue *> &inputs,
                              int rank) {
  if (onDevices)
    return rank_values::runOnRank(program, inputs);
  std::vector<HostArray> whole;
  for (const RankValue *value : inputs) {
    Expected<HostArray> array = toWhole(*value);
    if (!array)
      return array.status();
    whole.push_back(std::move(*array));
  }
  Expected<std::vector<HostArray>> outputs = runProgram(program, whole, rank);
  if (!outputs)
    return outputs.status();
  std::vector<RankValue> values;
  for (HostArray &output : *outputs)
    values.push_back(wholeValue(std::move(output)));
  return values;
}

Status PipelineRunner::StepRun::prepare(const std::vector<HostArray> &data) {
  if (data.size() != step.dataShapes.size())
    return Status::error("the pipelined step takes " +
                         std::to_string(step.dataShapes.size()) +
                         " data inputs, got " + std::to_string(data.size()));
  // Every micro-batch's rows of every data input.
  slices.assign(data.size(), {});
  for (size_t k = 0; k < data.size(); ++k) {
    if (data[k].shape != step.dataShapes[k])
      return Status::error("data input " + std::to_string(k) +
                           " has the wrong shape");
    for (int64_t i = 0; i < m; ++i)
      slices[k].push_back(wholeValue(microBatchRows(data[k], i, m)));
  }
  stageValues.assign(step.stages.size(), {});
  accumulators.assign(step.stages.size(), {});
  gatheredParams.assign(step.stages.size(), {});
  for (size_t s = 0; s < step.stages.size(); ++s)
    gatheredParams[s].resize(step.stages[s].paramIndex.size());
  for (size_t s = 0; s < step.stages.size(); ++s) {
    if (!where.isLocalStage(s))
      continue;
    StageState &stage = state->stages[s];
    const Executable &update = step.stages[s].update;
    // A step through a programmable runner takes whole arrays.
    if (!onDevices)
      if (Status status = stage.assemble(); !status.ok())
        return status;
    for (size_t j = 0; !forwardOnly && j < step.stages[s].paramIndex.size();
         ++j)
      accumulators[s].push_back(wholeValue(HostArray::zeros(
          stage.updateInputs[j].dtype, stage.updateInputs[j].shape)));
    for (size_t k = 0; k < stage.updateInputs.size(); ++k) {
      if (onDevices && k < stage.onDevices.size()) {
        // On the devices since the last step's update.
        stageValues[s].push_back(std::move(stage.onDevices[k]));
        continue;
      }
      if (!onDevices || k >= stage.layout.updated) {
        stageValues[s].push_back(wholeValue(stage.updateInputs[k]));
        continue;
      }
      Expected<std::vector<HostArray>> blocks = inputBlocksByDevice(
          update, k, stage.updateInputs[k], PartialInputs::FirstMember);
      if (!blocks)
        return Status::error("stage " + std::to_string(s) + ": " +
                             blocks.status().message());
      RankValue value;
      value.blocks = std::move(*blocks);
      value.owner = &update;
      value.layout = &update.inputs[k];
      stageValues[s].push_back(std::move(value));
    }
  }
  for (const auto &[key, byRank] :
       forwardOnly ? state->forwardReaders : state->readers) {
    int producer = where.processOfRank(schedule.rankOfStage(std::get<0>(key)));
    bool crosses = false, toHere = false;
    for (const auto &[rank, count] : byRank) {
      int process = where.processOfRank(rank);
      if (process == where.process) {
        routes.localReaders[key] += count;
        routes.localHolder.emplace(key, rank);
      }
      if (process == producer)
        continue;
      crosses = true;
      toHere |= process == where.process;
      std::vector<int> &to = routes.remoteProcesses[key];
      if (producer == where.process &&
          std::find(to.begin(), to.end(), process) == to.end())
        to.push_back(process);
    }
    if (!crosses)
      continue;
    routes.linkOf[key] = static_cast<int>(routes.links.size());
    routes.links.push_back(key);
    if (toHere)
      routes.expected += m;
  }
  if (peers && static_cast<int64_t>(routes.links.size()) * m - 1 >
                   peers->maxTag())
    return Status::error(
        std::to_string(routes.links.size()) + " values cross processes in " +
        std::to_string(m) + " micro-batches: more messages than MPI tags (" +
        std::to_string(peers->maxTag()) + ")");

  return Status::success();
}

void PipelineRunner::StepRun::runRank(int rank) {
  for (const PipeAction &action : schedule.perRank[rank]) {
    const PipelineStage &stage = step.stages[action.stage];
    StageProgramKind kind = programFor(action.work);
    const StageProgram &program = programOf(stage, kind);
    if (!program.present || (forwardOnly && kind != StageProgramKind::Forward))
      continue;
    int32_t mb = action.microBatch;
    std::vector<const RankValue *> inputs(program.inputs.size());
    std::vector<RankValue> seeds;
    seeds.reserve(program.inputs.size());
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      const StageInput &source = program.inputs[i];
      switch (source.kind) {
      case StageInput::Kind::Param: {
        inputs[i] = &stageValues[action.stage][source.index];
        if (!onDevices || !inputs[i]->inBlocks() ||
            rank_values::laidOutAs(*inputs[i], program.executable, i))
          break;
        // A parameter the update holds split and the program reads
        // gathered (FSDP): gathered once per step, for every micro-batch.
        std::optional<RankValue> &copy =
            gatheredParams[action.stage][source.index];
        if (!copy || !rank_values::laidOutAs(*copy, program.executable, i)) {
          Expected<RankValue> made =
              rank_values::relayout(*inputs[i], program.executable, i);
          if (!made) {
            fail(Status::error(describePipeAction(action) + ": " +
                               made.status().message()));
            return;
          }
          copy = std::move(*made);
        }
        inputs[i] = &*copy;
        break;
      }
      case StageInput::Kind::Data:
        inputs[i] = &slices[source.index][mb];
        break;
      case StageInput::Kind::Seed:
        seeds.push_back(wholeValue(scalarOf(
            program.executable.slots[program.executable.inputs[i].slot].dtype,
            1.0 / static_cast<double>(m))));
        inputs[i] = &seeds.back();
        break;
      case StageInput::Kind::Accumulator:
        inputs[i] = &accumulators[action.stage][source.index];
        break;
      case StageInput::Kind::Output:
        inputs[i] = mailbox.get(
            {source.stage, static_cast<int>(source.program), mb, source.index});
        if (!inputs[i])
          return;
        break;
      }
    }
    Clock::time_point started = Clock::now();
    Expected<std::vector<RankValue>> outputs =
        call(program.executable, inputs, rank);
    Clock::time_point ended = Clock::now();
    if (!outputs) {
      fail(Status::error(describePipeAction(action) + ": " +
                         outputs.status().message()));
      return;
    }
    for (const StageInput &source : program.inputs)
      if (source.kind == StageInput::Kind::Output)
        mailbox.release(
            {source.stage, static_cast<int>(source.program), mb, source.index});
    bool lastForward = kind == StageProgramKind::Forward &&
                       action.stage + 1 == schedule.stages();
    for (size_t k = 0; k < outputs->size(); ++k) {
      RankValue &value = (*outputs)[k];
      if (k < program.accumulatorOf.size() && program.accumulatorOf[k] >= 0) {
        accumulators[action.stage][program.accumulatorOf[k]] = std::move(value);
        continue;
      }
      OutputKey key{action.stage, static_cast<int>(kind),
                    static_cast<int32_t>(k)};
      auto remote = routes.remoteProcesses.find(key);
      bool isLoss = lastForward && static_cast<int32_t>(k) == step.lossOutput;
      if (isLoss || remote != routes.remoteProcesses.end()) {
        // The loss, and what crosses processes, as whole arrays.
        Expected<HostArray> whole = toWhole(value);
        if (!whole) {
          fail(Status::error(describePipeAction(action) + ": " +
                             whole.status().message()));
          return;
        }
        if (isLoss) {
          std::lock_guard<std::mutex> lock(resultMutex);
          lossSum += elementAsDouble(*whole, 0);
        }
        if (remote != routes.remoteProcesses.end())
          for (int to : remote->second)
            if (Status status = peers->send(
                    to, static_cast<int>(routes.linkOf.at(key) * m + mb),
                    whole->bytes);
                !status) {
              fail(Status::error(describePipeAction(action) + ": " +
                                 status.message()));
              return;
            }
      }
      auto local = routes.localReaders.find(key);
      if (local != routes.localReaders.end())
        mailbox.put(
            {action.stage, static_cast<int>(kind), mb, static_cast<int32_t>(k)},
            local->second, rank, std::move(value));
    }
    std::lock_guard<std::mutex> lock(resultMutex);
    timed.push_back({action, rank, seconds(started), seconds(ended)});
  }
  for (size_t s = 0; updatesInRanks && s < step.stages.size(); ++s)
    if (schedule.rankOfStage(static_cast<int>(s)) == rank)
      if (Status status = runUpdate(s, std::nullopt); !status.ok()) {
        fail(std::move(status));
        return;
      }
}

// Under MPI, one thread takes in what other processes send, in the order
// it comes, and hands it to the ranks here through the mailbox.
void PipelineRunner::StepRun::receive() {
  std::vector<bool> arrived(routes.links.size() * m, false);
  auto missing = [&] {
    std::string text;
    int listed = 0;
    for (size_t l = 0; l < routes.links.size(); ++l) {
      const OutputKey &key = routes.links[l];
      if (!routes.localReaders.count(key))
        continue;
      for (int64_t i = 0; i < m; ++i) {
        if (arrived[l * m + i])
          continue;
        if (listed++ == 3) {
          text += ", ...";
          return text;
        }
        int producer = schedule.rankOfStage(std::get<0>(key));
        auto kind = static_cast<StageProgramKind>(std::get<1>(key));
        text += std::string(text.empty() ? "waiting for " : ", ") + "stage " +
                std::to_string(std::get<0>(key)) + "'s " +
                stageProgramName(kind) + " output " +
                std::to_string(std::get<2>(key)) + " of micro-batch " +
                std::to_string(i) + " from process " +
                std::to_string(where.processOfRank(producer)) +
                " (pipeline rank " + std::to_string(producer) + ")";
      }
    }
    return text;
  };
  for (int64_t got = 0; got < routes.expected; ++got) {
    Expected<PipelinePeers::Message> message =
        peers->receive([&] { return mailbox.hasFailed(); }, missing);
    if (!message) {
      if (!message.status().message().empty())
        fail(message.status());
      return;
    }
    int64_t link = message->tag / m, mb = message->tag % m;
    const OutputKey *key = link < static_cast<int64_t>(routes.links.size())
                               ? &routes.links[link]
                               : nullptr;
    const ExecutableValue *output = nullptr;
    if (key) {
      const Executable &producer =
          programOf(step.stages[std::get<0>(*key)],
                    static_cast<StageProgramKind>(std::get<1>(*key)))
              .executable;
      if (std::get<2>(*key) < static_cast<int32_t>(producer.outputs.size()))
        output = &producer.outputs[std::get<2>(*key)];
      if (output) {
        HostArray value;
        value.dtype = producer.slots[output->slot].dtype;
        value.shape = output->globalShape;
        if (value.numBytes() == static_cast<int64_t>(message->bytes.size()) &&
            !arrived[link * m + mb] && routes.localReaders.count(*key)) {
          arrived[link * m + mb] = true;
          value.bytes = std::move(message->bytes);
          mailbox.put({std::get<0>(*key), std::get<1>(*key),
                       static_cast<int32_t>(mb), std::get<2>(*key)},
                      routes.localReaders.at(*key), routes.localHolder.at(*key),
                      wholeValue(std::move(value)));
          continue;
        }
      }
    }
    fail(Status::error("process " + std::to_string(message->from) +
                       " sent an unexpected message (tag " +
                       std::to_string(message->tag) + ", " +
                       std::to_string(message->bytes.size()) + " bytes)"));
    return;
  }
}

Status PipelineRunner::StepRun::runActions() {
  if (peers) {
    // A common start, so that the processes' timestamps line up.
    Expected<bool> started = peers->allTrue(true, "the start of the step");
    if (!started)
      return started.status();
  }
  begin = Clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < schedule.ranks; ++r)
    if (where.processOfRank(r) == where.process)
      threads.emplace_back([this, r] { runRank(r); });
  if (peers && routes.expected > 0)
    threads.emplace_back([this] { receive(); });
  for (std::thread &thread : threads)
    thread.join();
  if (!failure.ok())
    return failure;
  if (peers)
    if (Status status = peers->flush(); !status)
      return status;
  return Status::success();
}

Expected<float> PipelineRunner::StepRun::squaredNorm() {
  std::vector<float> parts(step.stages.size(), 0.0f);
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const PipelineStage &stage = step.stages[s];
    if (!where.isLocalStage(s) || stage.normInput < 0)
      continue;
    std::vector<const RankValue *> inputs;
    for (const RankValue &value : accumulators[s])
      inputs.push_back(&value);
    Expected<std::vector<RankValue>> outputs =
        call(stage.norm, inputs, schedule.rankOfStage(static_cast<int>(s)));
    Expected<HostArray> part =
        outputs ? toWhole(outputs->front()) : outputs.status();
    if (!part)
      return Status::error("stage " + std::to_string(s) +
                           "'s gradient norm: " + part.status().message());
    std::memcpy(&parts[s], part->bytes.data(), sizeof(float));
  }
  if (peers) {
    // Each stage's part comes from the process that runs it.
    ByteWriter mine;
    for (size_t s = 0; s < parts.size(); ++s)
      mine.put(where.isLocalStage(s) ? parts[s] : 0.0f);
    std::vector<std::vector<uint8_t>> all;
    if (Status status = peers->gather(mine.bytes, all, "the gradient norm");
        !status)
      return status;
    std::vector<uint8_t> merged(parts.size() * sizeof(float), 0);
    for (size_t p = 0; p < all.size(); ++p)
      for (size_t s = 0; s < parts.size(); ++s)
        if (where.processOfRank(schedule.rankOfStage(static_cast<int>(s))) ==
                static_cast<int>(p) &&
            all[p].size() == merged.size())
          std::memcpy(&merged[s * sizeof(float)], &all[p][s * sizeof(float)],
                      sizeof(float));
    if (Status status = peers->broadcast(merged, 0, "the gradient norm");
        !status)
      return status;
    if (merged.size() != parts.size() * sizeof(float))
      return Status::error("the gradient norm: a process sent " +
                           std::to_string(merged.size()) + " bytes");
    std::memcpy(parts.data(), merged.data(), merged.size());
  }
  float total = 0;
  for (float part : parts)
    total += part;
  return total;
}

Status PipelineRunner::StepRun::runUpdate(size_t s, std::optional<float> norm) {
  StageState &stage = state->stages[s];
  const Executable &update = step.stages[s].update;
  std::vector<RankValue> &values = stageValues[s];
  // The gradient sums go in as the devices hold them: the update reduces
  // a partial sum once per step.
  for (size_t j = 0; j < stage.layout.dataInputs.size(); ++j)
    values[stage.layout.dataInputs[j]] = std::move(accumulators[s][j]);
  if (stage.layout.stepInput >= 0) {
    int32_t number = static_cast<int32_t>(stepNumber);
    std::memcpy(values[stage.layout.stepInput].whole.bytes.data(), &number, 4);
  }
  if (stage.layout.lrInput >= 0) {
    float rate = static_cast<float>(learningRate);
    std::memcpy(values[stage.layout.lrInput].whole.bytes.data(), &rate, 4);
  }
  if (int32_t input = step.stages[s].normInput; input >= 0 && norm)
    std::memcpy(values[input].whole.bytes.data(), &*norm, 4);
  std::vector<const RankValue *> inputs;
  for (const RankValue &value : values)
    inputs.push_back(&value);
  Expected<std::vector<RankValue>> outputs =
      call(update, inputs, schedule.rankOfStage(static_cast<int>(s)));
  if (!outputs)
    return Status::error("stage " + std::to_string(s) +
                         "'s update: " + outputs.status().message());
  if (onDevices) {
    // The new parameters and state stay on the devices for the next step.
    stage.onDevices.clear();
    for (size_t k = 0; k < stage.layout.updated; ++k)
      stage.onDevices.push_back(std::move((*outputs)[1 + k]));
    stage.wholeCurrent = false;
    return Status::success();
  }
  for (size_t k = 0; k < stage.layout.updated; ++k) {
    Expected<HostArray> whole = toWhole((*outputs)[1 + k]);
    if (!whole)
      return Status::error("stage " + std::to_string(s) +
                           "'s update: " + whole.status().message());
    stage.updateInputs[k] = std::move(*whole);
  }
  return Status::success();
}

Status PipelineRunner::StepRun::runUpdates() {
  if (updatesInRanks)
    return Status::success();
  std::optional<float> norm;
  for (const PipelineStage &stage : step.stages)
    if (stage.normInput >= 0 && !norm) {
      Expected<float> total = squaredNorm();
      if (!total)
        return total.status();
      norm = *total;
    }
  for (size_t s = 0; s < step.stages.size(); ++s)
    if (where.isLocalStage(s))
      if (Status status = runUpdate(s, norm); !status.ok())
        return status;
  return Status::success();
}

void PipelineRunner::StepRun::restore() {
  for (size_t s = 0; s < step.stages.size(); ++s) {
    if (!where.isLocalStage(s))
      continue;
    StageState &stage = state->stages[s];
    for (size_t k = 0; k < stage.onDevices.size(); ++k)
      stage.onDevices[k] = std::move(stageValues[s][k]);
  }
}

Status PipelineRunner::StepRun::gatherReport(PipelineStepResult &result) {
  if (peers) {
    // Process 0 reports the whole step: every process's loss, actions and
    // peaks. On one host the monotonic clock is the same in every process,
    // so each process's start places its actions exactly on process 0's
    // time; across hosts the barrier before the step aligns them.
    ByteWriter mine;
    mine.put(hostId());
    mine.put(static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            begin.time_since_epoch())
            .count()));
    mine.put(lossSum);
    mine.put(result.seconds);
    for (int64_t bytes : result.peakHeldBytes)
      mine.put(bytes);
    for (const TimedAction &action : timed) {
      mine.put(static_cast<int32_t>(action.action.work));
      mine.put(action.action.stage);
      mine.put(action.action.microBatch);
      mine.put(static_cast<int32_t>(action.rank));
      mine.put(action.start);
      mine.put(action.end);
    }
    std::vector<std::vector<uint8_t>> all;
    if (Status status = peers->gather(mine.bytes, all, "the step's report");
        !status)
      return status;
    if (where.process == 0) {
      lossSum = 0;
      timed.clear();
      uint64_t host = hostId();
      int64_t start = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          begin.time_since_epoch())
                          .count();
      for (const std::vector<uint8_t> &bytes : all) {
        ByteReader reader{bytes};
        double loss = 0, elapsed = 0;
        uint64_t theirHost = 0;
        int64_t theirStart = 0;
        bool complete = reader.get(theirHost) && reader.get(theirStart) &&
                        reader.get(loss) && reader.get(elapsed);
        double shift =
            theirHost == host ? 1e-9 * static_cast<double>(theirStart - start)
                              : 0.0;
        lossSum += loss;
        result.seconds = std::max(result.seconds, elapsed);
        for (int64_t &peak : result.peakHeldBytes) {
          int64_t theirs = 0;
          complete = complete && reader.get(theirs);
          peak = std::max(peak, theirs);
        }
        while (complete && reader.at < bytes.size()) {
          TimedAction action;
          int32_t work = 0, rank = 0;
          complete = reader.get(work) && reader.get(action.action.stage) &&
                     reader.get(action.action.microBatch) &&
                     reader.get(rank) && reader.get(action.start) &&
                     reader.get(action.end);
          action.action.work = static_cast<PipeWork>(work);
          action.rank = rank;
          action.start += shift;
          action.end += shift;
          if (complete)
            timed.push_back(action);
        }
        if (!complete)
          return Status::error("a process's report of the step is cut short");
      }
    }
  }
  return Status::success();
}

namespace {

/// `run`, or CPU device threads.
PipelineProgramRunner orCpuDevices(const PipelineProgramRunner &run) {
  if (run)
    return run;
  return
      [](const Executable &program, const std::vector<HostArray> &inputs, int) {
        return runOnCpuDevices(program, inputs, nullptr,
                               PartialInputs::FirstMember);
      };
}

} // namespace

Expected<double> PipelineRunner::evaluate(const std::vector<HostArray> &data,
                                          const PipelineProgramRunner &run) {
  PipelineProgramRunner runProgram = orCpuDevices(run);
  StepRun stepRun(state.get(), runProgram);
  stepRun.onDevices = !run;
  stepRun.forwardOnly = true;
  Status status = stepRun.prepare(data);
  if (status.ok())
    status = stepRun.runActions();
  // Whatever happened, the parameters stay the stages'.
  if (stepRun.onDevices)
    stepRun.restore();
  if (!status.ok())
    return status;
  double sum = stepRun.lossSum;
  if (PipelinePeers *peers = state->peers) {
    // The last stage's process has the loss; process 0 reports it.
    std::vector<uint8_t> mine(sizeof(double));
    std::memcpy(mine.data(), &sum, sizeof(double));
    std::vector<std::vector<uint8_t>> all;
    if (Status gathered = peers->gather(mine, all, "the evaluation's loss");
        !gathered)
      return gathered;
    sum = 0;
    for (const std::vector<uint8_t> &bytes : all) {
      double part = 0;
      if (bytes.size() == sizeof(double))
        std::memcpy(&part, bytes.data(), sizeof(double));
      sum += part;
    }
  }
  return sum / static_cast<double>(state->step.schedule.microBatches);
}

Expected<PipelineStepResult>
PipelineRunner::runStep(int64_t stepNumber, const std::vector<HostArray> &data,
                        const PipelineProgramRunner &run, double learningRate) {
  PipelineProgramRunner runProgram = orCpuDevices(run);
  StepRun stepRun(state.get(), runProgram);
  stepRun.onDevices = !run;
  stepRun.stepNumber = stepNumber;
  stepRun.learningRate = learningRate;
  stepRun.updatesInRanks = true;
  for (const PipelineStage &stage : state->step.stages)
    stepRun.updatesInRanks &= stage.normInput < 0;
  if (Status status = stepRun.prepare(data); !status.ok())
    return status;
  if (Status status = stepRun.runActions(); !status.ok())
    return status;
  if (Status status = stepRun.runUpdates(); !status.ok())
    return status;
  PipelineStepResult result;
  result.seconds =
      std::chrono::duration<double>(Clock::now() - stepRun.begin).count();
  result.peakHeldBytes = stepRun.mailbox.peakBytes();
  if (Status status = stepRun.gatherReport(result); !status.ok())
    return status;
  const PipelineSchedule &schedule = state->step.schedule;
  result.loss = stepRun.lossSum / static_cast<double>(schedule.microBatches);
  result.timeline.ranks = schedule.ranks;
  result.timeline.actions = std::move(stepRun.timed);
  summarizeTimeline(result.timeline, schedule.splitBackward);
  return result;
}
