//===- TrainDistributed.cpp - A training run across processes -------------===//
//
// `partita train --distributed` under `mpirun -np P` (docs/Distributed.md,
// "Training across processes"): rank 0 compiles the step and broadcasts
// it, every process drives its share of the mesh's devices with the MPI
// communicator, draws its devices' parameter blocks alone, fills only its
// devices' batch rows, and reads the loss from a local replica; rank 0
// prints the run and writes its losses. The losses are those of one
// process on the same layout, bit for bit (cross-process float sums keep
// the group's order).
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Runtime/Communication/ProcessGroup.h"
#include "partita/Runtime/Execution/BlockwiseRun.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Plugins/MpiPlugin.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Runtime/Program/RunMemory.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>

using namespace partita;

namespace {

/// Rank 0's compiled step on every process; a failure on rank 0 fails
/// every process (rank 0's diagnostics printed there).
Expected<Executable> broadcastStep(Session &session,
                                   const TrainRequest &request,
                                   ProcessGroup &group) {
  std::vector<uint8_t> bytes;
  Status compiled = Status::success();
  if (group.process() == 0) {
    Expected<Executable> program = compileTrainStep(session, request);
    if (program)
      bytes = serializeExecutable(*program);
    else
      compiled = program.status();
  }
  if (Status sent = group.broadcast(bytes, 0, "the train step"); !sent.ok())
    return sent;
  if (bytes.empty())
    return group.process() == 0
               ? compiled
               : Status::error("rank 0 could not compile the train step");
  return deserializeExecutable(bytes, "rank 0's train step");
}

/// What this process holds by the plan: its devices' share of the run.
RunMemory localMemory(const Executable &program, const TrainStepLayout &layout,
                      int64_t localDevices) {
  RunMemory memory = runMemory(program, RunKind::Train);
  double share = static_cast<double>(localDevices) /
                 static_cast<double>(std::max<int64_t>(1, memory.devices));
  memory.devices = localDevices;
  memory.inputBlocks *= share;
  memory.outputBlocks *= share;
  // Parameters are drawn a block at a time: only the data inputs are
  // whole arrays on the host.
  memory.hostInputs = 0;
  for (size_t index : layout.dataInputs) {
    const ExecutableValue &input = program.inputs[index];
    int64_t elements = 1;
    for (int64_t size : input.globalShape)
      elements *= size;
    memory.hostInputs += static_cast<double>(
        elements * dtypeSize(program.slots[input.slot].dtype));
  }
  memory.finalDownload = false;
  return memory;
}

/// The per-step inputs as whole (zeroed) arrays, the others empty.
std::vector<HostArray> stepInputs(const Executable &program,
                                  const TrainStepLayout &layout) {
  std::vector<HostArray> inputs(program.inputs.size());
  std::vector<size_t> perStep = layout.dataInputs;
  for (int index : {layout.stepInput, layout.lrInput})
    if (index >= 0)
      perStep.push_back(static_cast<size_t>(index));
  for (size_t index : perStep) {
    const ExecutableValue &input = program.inputs[index];
    inputs[index] =
        HostArray::zeros(program.slots[input.slot].dtype, input.globalShape);
  }
  return inputs;
}

/// Every local device's first blocks, each written from `region` alone
/// (BlockwiseRun.h); optimizer state (unless `region` covers it) and the
/// per-step inputs zero.
Expected<std::vector<std::vector<HostArray>>>
blocksFrom(const Executable &program, const std::vector<int64_t> &devices,
           const InputRegion &region, size_t fromRegion) {
  std::vector<std::vector<HostArray>> blocks(program.mesh.numDevices());
  for (int64_t device : devices)
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      const ExecutableValue &input = program.inputs[i];
      const TensorType &type = program.slots[input.slot];
      if (input.role == "input" ||
          (input.role == "opt_state" && i >= fromRegion)) {
        blocks[device].push_back(HostArray::zeros(type.dtype, type.shape));
        continue;
      }
      Expected<HostArray> block = deviceInputBlock(program, i, device, region);
      if (!block)
        return block.status();
      blocks[device].push_back(std::move(*block));
    }
  return blocks;
}

/// The first blocks of a resumed run (--resume) or one started from
/// another's parameters (--init-from): each device reads only the parts of
/// the checkpoint's blocks its own blocks overlap, whatever layout and
/// process count wrote them; the rest as a fresh run draws it.
Expected<std::vector<std::vector<HostArray>>>
blocksFromCheckpoint(const TrainRequest &request, const Executable &program,
                     const TrainStepLayout &layout,
                     const std::vector<int64_t> &devices,
                     ProgressPrinter &progress, int64_t &firstStep) {
  bool resuming = !request.checkpoints.resume.empty();
  Expected<CheckpointInfo> info = openStartCheckpoint(request, resuming);
  if (!info)
    return info.status();
  const std::string &flag = resuming ? request.checkpoints.resumeFlag
                                     : request.checkpoints.initFromFlag;
  Expected<std::vector<const CheckpointTensor *>> tensors = matchCheckpoint(
      *info, program,
      resuming ? layout.updated
               : std::min(layout.updated,
                          parametersToInitialize(request, program, *info)),
      resuming ? "" : "param");
  if (!tensors)
    return Status::error(flag + ": " + tensors.status().message());
  InputRegion random =
      randomInputRegions(program, static_cast<uint64_t>(request.seed));
  InputRegion region = [&](size_t index, const std::vector<IndexRange> &ranges,
                           const std::vector<int64_t> &paddedShape,
                           uint8_t *into) -> Status {
    if (index < tensors->size() && (*tensors)[index])
      return readCheckpointRegion(*info, *(*tensors)[index], ranges,
                                  paddedShape, into);
    return random(index, ranges, paddedShape, into);
  };
  Expected<std::vector<std::vector<HostArray>>> blocks =
      blocksFrom(program, devices, region, resuming ? layout.updated : 0);
  if (!blocks)
    return Status::error(flag + ": " + blocks.status().message());
  if (resuming) {
    continueFrom(*info, progress, firstStep);
  } else if (!progress.quiet) {
    size_t params = 0;
    for (const CheckpointTensor *tensor : *tensors)
      params += tensor != nullptr;
    llvm::outs() << "initialised " << params << " parameters from "
                 << info->directory << " (" << info->meta.step << " steps of '"
                 << info->meta.model << "')\n";
  }
  return blocks;
}

/// Rank 0's first lines: what trains where.
void printHeader(const TrainRequest &request, const Executable &program,
                 const ProcessLayout &layout, const RunMemory &memory) {
  llvm::outs() << "training " << request.config.model << " on "
               << request.devices << " as " << layout.processes
               << " processes (mesh " << program.mesh.toString() << ", rules "
               << request.options.rules
               << "): " << summarizeCommunication(program).collectives
               << " collectives per step, " << program.allocatedBytes()
               << " bytes per device planned\n"
               << layout.describe(program.mesh)
               << "predicted peak resident memory per process "
               << memory.describe() << "\n";
  llvm::outs().flush();
}

/// The parameters of `snapshot` (this process's devices' blocks) on
/// process 0 as a snapshot of every device's blocks, for scoring preference
/// pairs there; the other processes get an empty one. Values held whole
/// are the same on every process and are not sent.
Expected<TrainSnapshot> parametersOnRankZero(const Executable &program,
                                             const TrainSnapshot &snapshot,
                                             ProcessGroup &group,
                                             const ProcessLayout &layout) {
  size_t params = 0;
  while (params < snapshot.blocks.size() &&
         program.inputs[params].role == "param")
    ++params;
  std::vector<uint8_t> mine;
  auto put = [&](int64_t value) {
    const auto *at = reinterpret_cast<const uint8_t *>(&value);
    mine.insert(mine.end(), at, at + sizeof(value));
  };
  for (size_t k = 0; k < params; ++k)
    for (int64_t d : layout.localDevices)
      if (!snapshot.whole[k]) {
        const HostArray &block = snapshot.blocks[k][d];
        put(static_cast<int64_t>(k));
        put(d);
        put(block.numBytes());
        mine.insert(mine.end(), block.bytes.begin(), block.bytes.end());
      }
  std::vector<std::vector<uint8_t>> all;
  if (Status status = group.gather(mine, 0, all, "the parameters to score");
      !status.ok())
    return status;
  TrainSnapshot full;
  full.steps = snapshot.steps;
  if (group.process() != 0)
    return full;
  int64_t devices = program.mesh.numDevices();
  for (size_t k = 0; k < params; ++k) {
    full.whole.push_back(snapshot.whole[k]);
    full.blocks.push_back(snapshot.whole[k] ? snapshot.blocks[k]
                                            : std::vector<HostArray>(devices));
  }
  for (const std::vector<uint8_t> &bytes : all) {
    size_t at = 0;
    auto get = [&](int64_t &value) {
      if (at + sizeof(value) > bytes.size())
        return false;
      std::memcpy(&value, bytes.data() + at, sizeof(value));
      at += sizeof(value);
      return true;
    };
    int64_t k = 0, d = 0, size = 0;
    while (get(k) && get(d) && get(size)) {
      if (k < 0 || static_cast<size_t>(k) >= params || d < 0 || d >= devices ||
          size < 0 || at + static_cast<size_t>(size) > bytes.size())
        return Status::error("the parameters to score: a process sent a "
                             "malformed block");
      const TensorType &slot = program.slots[program.inputs[k].slot];
      HostArray block;
      block.dtype = slot.dtype;
      block.shape = slot.shape;
      block.bytes.assign(bytes.begin() + at, bytes.begin() + at + size);
      at += static_cast<size_t>(size);
      full.blocks[k][d] = std::move(block);
    }
  }
  return full;
}

/// The run once every process has the step: the devices' blocks, the
/// data, the loop; rank 0 prints progress.
Status trainLocal(const TrainRequest &request, const Executable &program,
                  ProcessGroup &group, const ProcessLayout &layout,
                  Communicator &communicator, ProgressPrinter &progress,
                  Evaluator *evaluator) {
  Expected<TrainStepLayout> stepLayout = trainStepLayout(program);
  if (!stepLayout)
    return stepLayout.status();
  RunMemory memory = localMemory(
      program, *stepLayout, static_cast<int64_t>(layout.localDevices.size()));
  Status ready = checkRunMemory(memory, "training");
  std::vector<HostArray> inputs = stepInputs(program, *stepLayout);
  Expected<std::vector<std::vector<HostArray>>> blocks =
      Status::error("not made");
  TrainLoopOptions loop;
  if (ready.ok()) {
    bool fromCheckpoint = !request.checkpoints.resume.empty() ||
                          !request.checkpoints.initFrom.empty();
    blocks = fromCheckpoint
                 ? blocksFromCheckpoint(request, program, *stepLayout,
                                        layout.localDevices, progress,
                                        loop.firstStep)
                 : blocksFrom(program, layout.localDevices,
                              randomInputRegions(
                                  program, static_cast<uint64_t>(request.seed)),
                              0);
    if (!blocks)
      ready = blocks.status();
  }
  TrainRequest local = request;
  if (!local.dataTrace.empty())
    local.dataTrace += "." + std::to_string(group.process());
  Expected<std::unique_ptr<TrainData>> source = Status::error("not made");
  if (ready.ok()) {
    source =
        group.process() == 0 ? startTrainData(local) : makeTrainData(local);
    if (!source)
      ready = source.status();
  }
  std::unique_ptr<PreferenceTraining> preference;
  Session scoring;
  if (ready.ok() && (request.config.objective == "dpo" ||
                     request.config.objective == "reward")) {
    // DPO: every process scores every pair with the reference on its own
    // emulated devices: the reference log-probabilities are the same bits
    // everywhere, and each process's rows read theirs. Both: held-out
    // pairs are scored on process 0 (parametersOnRankZero).
    Expected<std::unique_ptr<PreferenceTraining>> started =
        PreferenceTraining::start(scoring, request,
                                  static_cast<DpoData &>(**source),
                                  group.process() != 0);
    if (started)
      preference = std::move(*started);
    else
      ready = started.status();
  }
  if (Status agreed = agreeAll(group, ready, "starting to train"); !agreed.ok())
    return agreed;
  if (group.process() == 0)
    printHeader(request, program, layout, memory);
  LocalDevices devices{layout.localDevices, &communicator};
  if (request.lrSchedule)
    loop.learningRate = [schedule = *request.lrSchedule](int64_t step) {
      return schedule.at(step);
    };
  CheckpointWriter checkpoints(request);
  checkpoints.across = {&group, layout.localDevices};
  bool saving = !request.checkpoints.directory.empty();
  long long evalEvery = evaluator || preference ? request.eval.every : 0,
            last = request.steps;
  auto evalDue = [evalEvery, last](int64_t done) {
    return evalEvery > 0 && (done == last || done % evalEvery == 0);
  };
  if (saving || evalEvery > 0) {
    loop.snapshotAfter = [saved = request.checkpoints, last,
                          evalDue](int64_t done) {
      return saved.due(done, last) || evalDue(done);
    };
    loop.onSnapshot = [&, evalDue](TrainSnapshot &snapshot) -> Status {
      if (evaluator && evalDue(snapshot.steps))
        if (Expected<double> loss = evaluator->evaluate(program, snapshot);
            !loss)
          return loss.status();
      if (preference && evalDue(snapshot.steps)) {
        Expected<TrainSnapshot> whole =
            parametersOnRankZero(program, snapshot, group, layout);
        if (!whole)
          return whole.status();
        if (group.process() == 0)
          if (Status status = preference->evaluate(program, *whole);
              !status.ok())
            return status;
      }
      if (request.checkpoints.due(snapshot.steps, request.steps))
        return checkpoints.submit(program, snapshot, progress);
      return Status::success();
    };
  }
  Status status = trainOnLocalDevices(
      program, *stepLayout, inputs, std::move(*blocks), devices, **source,
      request.steps,
      [&](const TrainStepResult &result) { return progress(result); }, loop);
  // The last write's processes meet before any of them goes on.
  if (Status written = checkpoints.finish(); status.ok())
    status = written;
  if (group.process() == 0)
    llvm::outs() << checkpoints.written;
  if (status.ok() && group.process() == 0 && preference &&
      preference->hasPoints()) {
    // A reward model's held-out accuracy and margin.
    std::string path = request.outputDir + "/eval.csv";
    if (!writeOutputFile(
            path, [&](llvm::raw_ostream &os) { os << preference->csv(); }))
      return Status::error("");
  }
  return status;
}

/// The held-out evaluation of a multi-process run: the loss function
/// compiled on every process, run on each process's devices with a
/// communicator of its own (made here, collectively).
Status startEvaluation(Session &session, const TrainRequest &request,
                       ProcessGroup &group, const ProcessLayout &layout,
                       std::unique_ptr<Evaluator> &evaluator,
                       std::unique_ptr<Communicator> &communicator) {
  // Preference pairs are scored by PreferenceTraining (trainLocal).
  if (request.eval.every <= 0 || request.config.objective == "dpo" ||
      request.config.objective == "reward")
    return Status::success();
  Expected<std::unique_ptr<Evaluator>> created =
      Evaluator::create(session, request);
  Status made = created ? Status::success() : created.status();
  if (Status agreed = agreeAll(group, made, "compiling the evaluation");
      !agreed.ok())
    return agreed;
  Expected<std::unique_ptr<Communicator>> opened =
      group.communicator((*created)->lossFunction().mesh, layout);
  if (!opened)
    return opened.status();
  evaluator = std::move(*created);
  communicator = std::move(*opened);
  evaluator->runAcross({layout.localDevices, communicator.get()},
                       group.process() != 0);
  return Status::success();
}

} // namespace

namespace {

/// Prints `status` as this process's error, in one write (the processes'
/// lines must not interleave), and leaves: a process that failed mid-run
/// may leave the others in a collective; they fail after the timeout,
/// naming it.
[[noreturn]] void leaveAfterFailure(ProcessGroup &group, const Status &status) {
  if (!status.message().empty()) {
    std::string line = "error: rank " + std::to_string(group.process()) + ": " +
                       status.message() + "\n";
    llvm::errs().flush();
    ssize_t written = ::write(2, line.data(), line.size());
    (void)written;
  }
  group.exitAfterFailure(1);
}

/// The processes of this job, through the MPI plugin.
Expected<std::unique_ptr<ProcessGroup>>
startProcesses(const TrainRequest &request) {
  Expected<const MpiPlugin *> plugin = loadMpiPlugin();
  if (!plugin)
    return plugin.status();
  return (*plugin)->createProcessGroup(request.timeout);
}

} // namespace

Status partita::trainPipelinedDistributed(TrainRequest &request) {
  if (request.cuda)
    return Status::error("--devices cuda with --pp runs across processes "
                         "with partita-exec train --distributed");
  Expected<std::unique_ptr<ProcessGroup>> made = startProcesses(request);
  if (!made)
    return made.status();
  ProcessGroup &group = **made;
  Status status = trainPipelined(request, &group);
  if (!status.ok())
    leaveAfterFailure(group, status);
  return status;
}

Status partita::trainDistributed(const TrainRequest &request) {
  Expected<std::unique_ptr<ProcessGroup>> made = startProcesses(request);
  if (!made)
    return made.status();
  ProcessGroup &group = **made;
  int rank = group.process();
  auto onRank = [rank](const Status &status) {
    return status.ok() || status.message().empty()
               ? status
               : Status::error("rank " + std::to_string(rank) + ": " +
                               status.message());
  };
  Session session;
  Expected<Executable> program = broadcastStep(session, request, group);
  if (!program)
    return onRank(program.status());
  Expected<ProcessLayout> layout = layoutOver(program->mesh, group);
  if (!layout)
    return onRank(layout.status());
  Expected<std::unique_ptr<Communicator>> communicator =
      group.communicator(program->mesh, *layout);
  if (!communicator)
    return onRank(communicator.status());
  ProgressPrinter progress(request, rank == 0 && isatty(STDOUT_FILENO));
  progress.quiet = rank != 0;
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<Communicator> evaluating;
  Status status =
      startEvaluation(session, request, group, *layout, evaluator, evaluating);
  if (status.ok())
    status = trainLocal(request, *program, group, *layout, **communicator,
                        progress, evaluator.get());
  if (!status.ok())
    leaveAfterFailure(group, status);
  if (rank == 0) {
    if (!writeLosses(request, progress, evaluator.get()))
      return Status::error("");
    llvm::outs() << "peak resident memory of rank 0 "
                 << formatGiB(peakResidentBytes()) << "\n";
  }
  return Status::success();
}
