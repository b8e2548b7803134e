//===- DistributedRun.cpp - One Executable over many processes ------------===//
//
// The steps of a multi-process run, in the order every process takes them:
// lay out the devices, create the communicator, load this process's input
// blocks, agree that everyone has them, run the local devices, write the
// outputs shard by shard into a temporary directory that rank 0 renames
// once every process is done, and, when asked, gather the outputs on rank 0.
// Every step that can fail on one process only is followed by an agreement,
// so the others stop with an error rather than wait for it.
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace partita {

namespace {

/// Whether the sharded array in a directory is laid out exactly as the
/// program wants input `input`, so its shard files are the devices' blocks.
bool storedAsTheProgramWants(const ShardedArrayIndex &index,
                             const Executable &program,
                             const ExecutableValue &input) {
  if (!(index.mesh == program.mesh) ||
      index.globalShape != input.globalShape ||
      index.dtype != program.slots[input.slot].dtype ||
      input.sharding.partialKind != PartialKind::None ||
      index.sharding.dims.size() != input.sharding.dims.size())
    return false;
  for (size_t d = 0; d < index.sharding.dims.size(); ++d)
    if (index.sharding.dims[d].axes != input.sharding.dims[d].axes)
      return false;
  return true;
}

/// This process's input blocks, indexed by device id (other devices'
/// entries stay empty).
Expected<std::vector<std::vector<HostArray>>>
loadLocalInputs(const Executable &program, const ProcessLayout &layout,
                const DistributedRunOptions &options) {
  int64_t devices = program.mesh.numDevices();
  std::vector<std::vector<HostArray>> byDevice(devices);
  auto keep = [&](std::vector<HostArray> &blocks) {
    for (int64_t device : layout.localDevices)
      byDevice[device].push_back(std::move(blocks[device]));
  };
  if (options.inputs.empty()) {
    Expected<std::vector<HostArray>> random =
        randomInputs(program, options.seed);
    if (!random)
      return random.status();
    std::vector<HostArray> globals = std::move(*random);
    for (size_t i = 0; i < globals.size(); ++i) {
      Expected<std::vector<HostArray>> blocks =
          inputBlocksByDevice(program, i, globals[i]);
      if (!blocks)
        return blocks.status();
      keep(*blocks);
    }
    return byDevice;
  }
  std::vector<std::string> paths = splitCommaList(options.inputs);
  if (paths.size() != program.inputs.size())
    return Status::error("--inputs gives " + std::to_string(paths.size()) +
                         " paths but the program takes " +
                         std::to_string(program.inputs.size()) + " inputs");
  for (size_t i = 0; i < paths.size(); ++i) {
    const ExecutableValue &input = program.inputs[i];
    DType dtype = program.slots[input.slot].dtype;
    std::error_code error;
    if (fs::is_directory(paths[i], error)) {
      Expected<ShardedArrayIndex> index = readShardedArrayIndex(paths[i]);
      if (!index)
        return index.status();
      if (storedAsTheProgramWants(*index, program, input)) {
        Expected<std::vector<HostArray>> blocks =
            readDeviceBlocksOf(paths[i], *index, layout.localDevices);
        if (!blocks)
          return blocks.status();
        keep(*blocks);
        continue;
      }
    }
    Expected<HostArray> global = fs::is_directory(paths[i], error)
                                     ? readShardedArray(paths[i])
                                     : readNpy(paths[i]);
    if (!global)
      return global.status();
    if (global->dtype != dtype || global->shape != input.globalShape)
      return Status::error(paths[i] + ": input " + std::to_string(i) + " (" +
                           input.name + ") must be " + dtypeName(dtype) +
                           formatShape(input.globalShape) + ", got " +
                           dtypeName(global->dtype) +
                           formatShape(global->shape));
    Expected<std::vector<HostArray>> blocks =
        inputBlocksByDevice(program, i, *global);
    if (!blocks)
      return blocks.status();
    keep(*blocks);
  }
  return byDevice;
}

/// The bytes of this process's output blocks, device by device in mesh
/// order, output by output (their types are the program's).
std::vector<uint8_t>
packOutputs(const ProcessLayout &layout,
            const std::vector<std::vector<HostArray>> &outputsByDevice) {
  std::vector<uint8_t> bytes;
  for (int64_t device : layout.localDevices)
    for (const HostArray &block : outputsByDevice[device])
      bytes.insert(bytes.end(), block.bytes.begin(), block.bytes.end());
  return bytes;
}

/// Every device's output blocks from every process's packed bytes.
Expected<std::vector<std::vector<HostArray>>>
unpackOutputs(const Executable &program, const ProcessLayout &layout,
              const std::vector<std::vector<uint8_t>> &packed) {
  std::vector<std::vector<HostArray>> byDevice(program.mesh.numDevices());
  for (int rank = 0; rank < layout.processes; ++rank) {
    size_t at = 0;
    for (int64_t device : layout.devicesOf(rank))
      for (const ExecutableValue &output : program.outputs) {
        const TensorType &type = program.slots[output.slot];
        HostArray block = HostArray::zeros(type.dtype, type.shape);
        if (at + block.bytes.size() > packed[rank].size())
          return Status::error("rank " + std::to_string(rank) +
                               " sent fewer output bytes than its devices "
                               "hold");
        std::memcpy(block.bytes.data(), packed[rank].data() + at,
                    block.bytes.size());
        at += block.bytes.size();
        byDevice[device].push_back(std::move(block));
      }
  }
  return byDevice;
}

/// Removes a previous output directory of ours (only result_* entries).
Status clearPreviousOutputs(const std::string &directory) {
  std::error_code error;
  if (!fs::exists(directory, error))
    return Status::success();
  if (!fs::is_directory(directory, error))
    return Status::error(directory + ": exists and is not a directory");
  for (const fs::directory_entry &entry : fs::directory_iterator(directory))
    if (entry.path().filename().string().rfind("result_", 0) != 0)
      return Status::error(directory + ": exists and holds " +
                           entry.path().filename().string() +
                           ", which is not an output of a run; remove it or "
                           "write somewhere else");
  fs::remove_all(directory, error);
  if (error)
    return Status::error(directory + ": cannot remove: " + error.message());
  return Status::success();
}

/// Agreement after a step that may fail on some processes only: every
/// process learns whether all succeeded.
Status agree(MpiProcess &process, const Status &mine,
             const std::string &step) {
  Expected<bool> all = process.allTrue(mine.ok(), step);
  if (!all)
    return all.status();
  if (!mine)
    return mine;
  if (!*all)
    return Status::error("another process failed " + step);
  return Status::success();
}

/// Writes the outputs: shard files by each process into
/// `<outputs>.partial/result_<i>/`, partial sums as .npy by rank 0, then
/// rank 0 renames the directory once everyone is done.
Status writeDistributedOutputs(
    MpiProcess &process, const Executable &program,
    const ProcessLayout &layout,
    const std::vector<std::vector<HostArray>> &outputsByDevice,
    const std::vector<HostArray> *assembled, const std::string &outputs) {
  std::string temporary = outputs + ".partial";
  Status prepared = Status::success();
  if (process.rank() == 0) {
    std::error_code error;
    fs::remove_all(temporary, error);
    prepared = clearPreviousOutputs(outputs);
    for (size_t o = 0; prepared && o < program.outputs.size(); ++o) {
      if (program.outputs[o].sharding.partialKind != PartialKind::None)
        continue;
      fs::create_directories(
          fs::path(temporary) / ("result_" + std::to_string(o)), error);
      if (error)
        prepared = Status::error(temporary + ": cannot create: " +
                                 error.message());
    }
  }
  if (Status status = agree(process, prepared, "preparing " + temporary);
      !status)
    return status;
  Status written = Status::success();
  // "<output> <file> <crc>" per shard file this process wrote: rank 0
  // gathers them into each index, so that every shard is checked on read.
  std::string crcLines;
  for (size_t o = 0; written && o < program.outputs.size(); ++o) {
    const ExecutableValue &output = program.outputs[o];
    std::string name = "result_" + std::to_string(o);
    if (output.sharding.partialKind != PartialKind::None) {
      if (process.rank() == 0)
        written = writeNpy((fs::path(temporary) / (name + ".npy")).string(),
                           (*assembled)[o]);
      continue;
    }
    std::vector<HostArray> blocks(program.mesh.numDevices());
    for (int64_t device : layout.localDevices)
      blocks[device] = outputsByDevice[device][o];
    std::map<std::string, uint32_t> crcs;
    written = writeShardFilesOfDevices(
        (fs::path(temporary) / name).string(), program.mesh, output.sharding,
        program.slots[output.slot].dtype, output.globalShape, blocks,
        layout.localDevices, /*writeIndex=*/false, FileSync::EachFile, &crcs);
    for (const auto &[file, crc] : crcs)
      crcLines += std::to_string(o) + " " + file + " " + std::to_string(crc) +
                  "\n";
  }
  if (Status status = agree(process, written, "writing " + temporary);
      !status)
    return status;
  std::vector<std::vector<uint8_t>> gathered;
  if (Status status = process.gather(
          std::vector<uint8_t>(crcLines.begin(), crcLines.end()), 0, gathered,
          "the outputs' shard checksums");
      !status)
    return status;
  Status indexed = Status::success();
  if (process.rank() == 0) {
    std::vector<std::map<std::string, uint32_t>> crcs(program.outputs.size());
    for (const std::vector<uint8_t> &lines : gathered) {
      std::istringstream in(std::string(lines.begin(), lines.end()));
      size_t o;
      std::string file;
      uint32_t crc;
      while (in >> o >> file >> crc)
        if (o < crcs.size())
          crcs[o][file] = crc;
    }
    for (size_t o = 0; indexed && o < program.outputs.size(); ++o) {
      const ExecutableValue &output = program.outputs[o];
      if (output.sharding.partialKind != PartialKind::None)
        continue;
      indexed = writeShardedArrayIndex(
          (fs::path(temporary) / ("result_" + std::to_string(o))).string(),
          program.mesh, output.sharding, program.slots[output.slot].dtype,
          output.globalShape, crcs[o]);
    }
  }
  if (Status status = agree(process, indexed, "indexing " + temporary);
      !status)
    return status;
  Status renamed = Status::success();
  if (process.rank() == 0) {
    std::error_code error;
    fs::rename(temporary, outputs, error);
    if (error)
      renamed = Status::error("cannot rename " + temporary + " to " +
                              outputs + ": " + error.message());
  }
  return agree(process, renamed, "renaming " + temporary);
}

} // namespace

Expected<DistributedRunResult>
runDistributed(MpiProcess &process, const Executable &program,
               const DistributedRunOptions &options) {
  process.setTimeout(options.timeout);
  Expected<ProcessLayout> layout = ProcessLayout::create(
      program.mesh, process.size(), process.rank());
  if (!layout)
    return layout.status();
  DistributedRunResult result;
  result.layout = *layout;
  Expected<std::unique_ptr<Communicator>> communicator =
      options.devices.communicator
          ? options.devices.communicator(process, program.mesh, *layout)
          : createMpiCommunicator(process, program.mesh, *layout,
                                  options.timeout);
  if (!communicator)
    return communicator.status();

  Expected<std::vector<std::vector<HostArray>>> inputs =
      loadLocalInputs(program, *layout, options);
  if (Status status = agree(process,
                            inputs ? Status::success() : inputs.status(),
                            "loading its inputs");
      !status)
    return status;

  // A common start, so the time is the program's, not the loading's.
  if (Status status = agree(process, Status::success(), "starting"); !status)
    return status;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<HostArray>> outputsByDevice;
  RunStatistics statistics;
  statistics.repeats = std::max(options.repeats, 1);
  Status ran =
      options.devices.run
          ? options.devices.run(program, layout->localDevices,
                                communicator->get(), *inputs, outputsByDevice,
                                &statistics)
          : runDevicesAsThreads(program, layout->localDevices,
                                communicator->get(), *inputs, outputsByDevice,
                                &statistics);
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  // A failed run may have left requests to a stalled rank pending: no
  // agreement that could wait for it, the caller exits.
  if (!ran)
    return ran;
  Expected<int64_t> peak =
      process.allMax(statistics.peakBytesPerDevice, "memory figures");
  if (!peak)
    return peak.status();
  result.statistics.peakBytesPerDevice = *peak;
  result.statistics.repeats = statistics.repeats;
  result.statistics.stepSeconds = std::move(statistics.stepSeconds);
  result.statistics.stepTimes = std::move(statistics.stepTimes);

  bool partialOutputs = false;
  for (const ExecutableValue &output : program.outputs)
    partialOutputs |= output.sharding.partialKind != PartialKind::None;
  bool gather =
      options.gatherOutputs || (partialOutputs && !options.outputs.empty());
  if (gather) {
    std::vector<std::vector<uint8_t>> packed;
    if (Status status = process.gather(packOutputs(*layout, outputsByDevice),
                                       0, packed, "the outputs");
        !status)
      return status;
    Status assembled = Status::success();
    if (process.rank() == 0) {
      Expected<std::vector<std::vector<HostArray>>> all =
          unpackOutputs(program, *layout, packed);
      Expected<std::vector<HostArray>> globals =
          all ? assembleOutputs(program, *all)
              : Expected<std::vector<HostArray>>(all.status());
      if (globals)
        result.outputs = std::move(*globals);
      else
        assembled = globals.status();
    }
    if (Status status = agree(process, assembled, "assembling the outputs");
        !status)
      return status;
  }
  if (!options.outputs.empty())
    if (Status status =
            writeDistributedOutputs(process, program, *layout, outputsByDevice,
                                    &result.outputs, options.outputs);
        !status)
      return status;
  return result;
}

} // namespace partita
