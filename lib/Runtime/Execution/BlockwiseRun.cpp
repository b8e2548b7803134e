//===- BlockwiseRun.cpp - A run that never holds a whole array ------------===//
//
// Inputs made per device block on the device's thread, outputs taken one
// distinct block at a time (docs/Runtime.md, "Runs without whole arrays").
// Every value equals the whole-array path's: random inputs are a function
// of each element's global index, a partial sum's addends are drawn as
// splitPartialSum() draws them, and output blocks are checked and summed
// as assembleOutputs() does.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Execution/BlockwiseRun.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

using namespace partita;

InputRegion partita::randomInputRegions(const Executable &program,
                                        uint64_t seed) {
  return
      [&program, seed](size_t index, const std::vector<IndexRange> &ranges,
                       const std::vector<int64_t> &paddedShape, uint8_t *into) {
        drawRandomInputRegion(program, index, seed, index, ranges, paddedShape,
                              into);
        return Status::success();
      };
}

RunMemory partita::blockwiseRunMemory(const Executable &program,
                                      const std::string &paths) {
  RunMemory memory = runMemory(program, RunKind::Blockwise);
  if (paths.empty())
    return memory;
  std::vector<std::string> list = splitCommaList(paths);
  for (size_t i = 0; i < list.size() && i < program.inputs.size(); ++i) {
    std::error_code error;
    if (std::filesystem::is_directory(list[i], error))
      memory.hostInputs +=
          static_cast<double>(numElementsOf(program.inputs[i].globalShape)) *
          dtypeSize(program.slots[program.inputs[i].slot].dtype);
  }
  return memory;
}

namespace {

/// One `--inputs` entry: a .npy file read a region at a time, or a
/// sharded-array directory read whole when first asked for.
struct InputFile {
  std::string path;
  bool directory = false;
  NpyLayout layout;
  std::mutex reading;
  std::optional<HostArray> whole;
};

} // namespace

Expected<InputRegion> partita::fileInputRegions(const Executable &program,
                                                const std::string &paths) {
  Expected<std::vector<std::string>> list = inputPaths(program, paths);
  if (!list)
    return list.status();
  auto files = std::make_shared<std::vector<InputFile>>(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    InputFile &file = (*files)[i];
    file.path = (*list)[i];
    std::error_code error;
    file.directory = std::filesystem::is_directory(file.path, error);
    if (file.directory)
      continue;
    Expected<NpyLayout> layout = readNpyLayout(file.path);
    if (!layout)
      return layout.status();
    if (Status status =
            checkInput(program, i, layout->dtype, layout->shape, file.path);
        !status)
      return status;
    file.layout = std::move(*layout);
  }
  return InputRegion([&program, files](size_t index,
                                       const std::vector<IndexRange> &ranges,
                                       const std::vector<int64_t> &paddedShape,
                                       uint8_t *into) {
    InputFile &file = (*files)[index];
    if (!file.directory)
      return readNpyRegionInto(file.path, file.layout, ranges, paddedShape,
                               into);
    std::lock_guard<std::mutex> lock(file.reading);
    if (!file.whole) {
      Expected<HostArray> whole = readShardedArray(file.path);
      if (!whole)
        return whole.status();
      if (Status status = checkInput(program, index, *whole, file.path);
          !status)
        return status;
      file.whole = std::move(*whole);
    }
    HostArray block = extractBlock(*file.whole, ranges, paddedShape);
    std::memcpy(into, block.bytes.data(), block.bytes.size());
    return Status::success();
  });
}

namespace {

/// The coordinates of `device` on the partial axes of `sharding`.
std::vector<int64_t> partialKey(const Mesh &mesh, const Sharding &sharding,
                                int64_t device) {
  std::vector<int64_t> coords = mesh.coordinates(device), key;
  for (const std::string &axis : sharding.partialAxes)
    key.push_back(coords[mesh.axisIndex(axis)]);
  return key;
}

/// The distinct block of output `o` that `holders` (by partial position,
/// each position's devices in order) hold: each position's replicas
/// checked against its first, the positions' addends added in order. The
/// program may be a view with outputs only (no slots): every block must
/// have `localShape` and the first one's dtype.
Expected<HostArray> outputBlockOf(
    const Executable &program, size_t o,
    const std::map<std::vector<int64_t>, std::vector<int64_t>> &holders,
    const std::vector<std::vector<HostArray>> &outputsByDevice,
    const std::vector<IndexRange> &ranges,
    const std::vector<int64_t> &shardIndex,
    const std::vector<int64_t> &localShape) {
  const ExecutableValue &output = program.outputs[o];
  std::optional<HostArray> sum;
  std::optional<DType> dtype;
  for (const auto &[key, devices] : holders) {
    for (int64_t d : devices) {
      if (o >= outputsByDevice[d].size())
        return Status::error("output " + output.name + ": device " +
                             std::to_string(d) + " returned no block");
      const HostArray &block = outputsByDevice[d][o];
      if (!dtype)
        dtype = block.dtype;
      if (block.dtype != *dtype || block.shape != localShape ||
          !block.checkConsistent())
        return Status::error("output " + output.name + ": device " +
                             std::to_string(d) +
                             " returned a block of another type");
    }
    const HostArray &first = outputsByDevice[devices.front()][o];
    for (size_t k = 1; k < devices.size(); ++k)
      if (Status same = checkReplica(first, devices.front(),
                                     outputsByDevice[devices[k]][o], devices[k],
                                     ranges, shardIndex);
          !same)
        return Status::error("output " + output.name + ": " + same.message());
    if (!sum) {
      sum = first;
      continue;
    }
    for (int64_t e = 0; e < sum->numElements(); ++e)
      setElementFromDouble(
          *sum, e, elementAsDouble(*sum, e) + elementAsDouble(first, e));
  }
  return std::move(*sum);
}

} // namespace

Status partita::forEachOutputBlock(
    const Executable &program,
    const std::vector<std::vector<HostArray>> &outputsByDevice,
    const OutputBlockSink &sink) {
  const Mesh &mesh = program.mesh;
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    const ExecutableValue &output = program.outputs[o];
    if (output.sharding.partialKind != PartialKind::None &&
        output.sharding.partialKind != PartialKind::Sum)
      return Status::error("output " + output.name +
                           " is a partial max or min; only sums are assembled");
    Sharding whole = withoutPartial(output.sharding);
    if (Status status = checkShardedLayout(mesh, whole, output.globalShape);
        !status)
      return Status::error("output " + output.name + ": " + status.message());
    // Each shard's holders, by partial position; shards in the order of
    // their first holder.
    std::map<std::vector<int64_t>,
             std::map<std::vector<int64_t>, std::vector<int64_t>>>
        holders;
    std::vector<std::pair<std::vector<int64_t>, int64_t>> order;
    for (int64_t d = 0; d < mesh.numDevices(); ++d) {
      std::vector<int64_t> shard = shardIndices(mesh, whole, d);
      auto [entry, inserted] = holders.try_emplace(shard);
      if (inserted)
        order.push_back({shard, d});
      entry->second[partialKey(mesh, output.sharding, d)].push_back(d);
    }
    for (const auto &[shard, first] : order) {
      std::vector<IndexRange> ranges =
          deviceBlock(mesh, whole, output.globalShape, first);
      Expected<HostArray> block =
          outputBlockOf(program, o, holders[shard], outputsByDevice, ranges,
                        shard, localShape(mesh, whole, output.globalShape));
      if (!block)
        return block.status();
      if (Status taken = sink(o, ranges, *block); !taken)
        return taken;
    }
  }
  return Status::success();
}

Status partita::runOnCpuDevicesBlockwise(const Executable &program,
                                         const InputRegion &region,
                                         const OutputBlockSink &sink,
                                         RunStatistics *statistics) {
  InProcessCommunicator communicator(program.mesh);
  std::vector<int64_t> devices(program.mesh.numDevices());
  for (size_t d = 0; d < devices.size(); ++d)
    devices[d] = static_cast<int64_t>(d);
  std::vector<std::vector<HostArray>> deviceOutputs;
  if (Status status = runDevicesAsThreads(
          program, devices, &communicator,
          [&](size_t index, int64_t device, HostArray &made,
              void *into) -> Expected<const HostArray *> {
            // Straight into the device's buffer (zeroed first: a reused
            // buffer holds what its last user left), else a block.
            if (into) {
              const TensorType &local =
                  program.slots[program.inputs[index].slot];
              std::memset(into, 0, static_cast<size_t>(local.bytes()));
              if (Status status =
                      writeDeviceInputBlock(program, index, device, region,
                                            static_cast<uint8_t *>(into));
                  !status)
                return status;
              return nullptr;
            }
            Expected<HostArray> block =
                deviceInputBlock(program, index, device, region);
            if (!block)
              return block.status();
            made = std::move(*block);
            return &made;
          },
          deviceOutputs, statistics);
      !status.ok())
    return status;
  return forEachOutputBlock(program, deviceOutputs, sink);
}

Expected<std::unique_ptr<BlockwiseOutputs>>
BlockwiseOutputs::create(const Executable &program,
                         const std::string &outputsDirectory,
                         const std::string &expectDirectory) {
  std::unique_ptr<BlockwiseOutputs> outputs(new BlockwiseOutputs());
  outputs->program = &program;
  size_t count = program.outputs.size();
  outputs->summaries.resize(count);
  if (!outputsDirectory.empty()) {
    std::error_code error;
    std::filesystem::create_directories(outputsDirectory, error);
    if (error)
      return Status::error("cannot create '" + outputsDirectory +
                           "': " + error.message());
    for (size_t o = 0; o < count; ++o) {
      const ExecutableValue &output = program.outputs[o];
      Expected<std::unique_ptr<NpyRegionWriter>> writer =
          NpyRegionWriter::create(
              outputsDirectory + "/result_" + std::to_string(o) + ".npy",
              program.slots[output.slot].dtype, output.globalShape);
      if (!writer)
        return writer.status();
      outputs->writers.push_back(std::move(*writer));
    }
  }
  if (expectDirectory.empty())
    return outputs;
  outputs->expectDirectory = expectDirectory;
  Expected<std::vector<double>> slack =
      readToleranceSlack(expectDirectory, count);
  if (!slack)
    return slack.status();
  outputs->slack = std::move(*slack);
  outputs->comparisons.resize(count);
  for (size_t o = 0; o < count; ++o) {
    std::string path =
        expectDirectory + "/result_" + std::to_string(o) + ".npy";
    Expected<NpyLayout> layout = readNpyLayout(path);
    if (!layout)
      return layout.status();
    Comparison &comparison = outputs->comparisons[o];
    const ExecutableValue &output = program.outputs[o];
    if (layout->dtype != program.slots[output.slot].dtype ||
        layout->shape != output.globalShape) {
      comparison.sameType = false;
      comparison.within = false;
    } else {
      // The scale is the whole expected array's: read it once, in slabs
      // of leading rows.
      std::vector<IndexRange> slab;
      for (int64_t extent : layout->shape)
        slab.push_back({0, extent});
      int64_t rows = slab.empty() ? 1 : std::max<int64_t>(1, slab[0].end);
      int64_t rowBytes =
          std::max<int64_t>(1, *checkedNumBytes(layout->dtype, layout->shape) /
                                   std::max<int64_t>(rows, 1));
      int64_t step = std::max<int64_t>(1, (int64_t(16) << 20) / rowBytes);
      for (int64_t begin = 0; begin < rows; begin += step) {
        std::vector<int64_t> shape = layout->shape;
        if (!slab.empty()) {
          slab[0] = {begin, std::min(rows, begin + step)};
          shape[0] = slab[0].size();
        }
        Expected<HostArray> part = readNpyRegion(path, *layout, slab, shape);
        if (!part)
          return part.status();
        for (int64_t e = 0; e < part->numElements(); ++e) {
          double value = elementAsDouble(*part, e);
          if (!std::isnan(value))
            comparison.scale = std::max(comparison.scale, std::fabs(value));
        }
      }
    }
    outputs->expected.push_back(std::move(*layout));
  }
  return outputs;
}

BlockwiseOutputs::~BlockwiseOutputs() = default;

OutputBlockSink BlockwiseOutputs::sink() {
  return [this](size_t output, const std::vector<IndexRange> &ranges,
                const HostArray &block) { return take(output, ranges, block); };
}

Status BlockwiseOutputs::take(size_t o, const std::vector<IndexRange> &ranges,
                              const HostArray &block) {
  const std::vector<int64_t> &shape = program->outputs[o].globalShape;
  Summary &summary = summaries[o];
  (void)forEachRegionRow(ranges, shape, block.shape,
                         [&](int64_t, int64_t local, int64_t length) {
                           for (int64_t e = local; e < local + length; ++e) {
                             double value = elementAsDouble(block, e);
                             summary.sum += value;
                             summary.low = std::min(summary.low, value);
                             summary.high = std::max(summary.high, value);
                           }
                           return Status::success();
                         });
  if (!writers.empty())
    if (Status written = writers[o]->write(ranges, block); !written)
      return written;
  if (comparisons.empty() || !comparisons[o].sameType)
    return Status::success();
  std::string path = expectDirectory + "/result_" + std::to_string(o) + ".npy";
  Expected<HostArray> want =
      readNpyRegion(path, expected[o], ranges, block.shape);
  if (!want)
    return want.status();
  Tolerance tolerance = toleranceOf(block.dtype);
  return forEachRegionRow(
      ranges, shape, block.shape, [&](int64_t, int64_t local, int64_t length) {
        for (int64_t e = local; e < local + length; ++e)
          compareElement(comparisons[o], elementAsDouble(block, e),
                         elementAsDouble(*want, e), tolerance, slack[o]);
        return Status::success();
      });
}

std::vector<std::string> BlockwiseOutputs::summaryLines() const {
  std::vector<std::string> lines;
  for (size_t o = 0; o < summaries.size(); ++o) {
    const ExecutableValue &output = program->outputs[o];
    lines.push_back(summaryText(program->slots[output.slot].dtype,
                                output.globalShape, summaries[o].sum,
                                summaries[o].low, summaries[o].high));
  }
  return lines;
}

Status BlockwiseOutputs::finishWriting() {
  for (std::unique_ptr<NpyRegionWriter> &writer : writers)
    if (Status done = writer->finish(); !done)
      return done;
  writers.clear();
  return Status::success();
}

Status BlockwiseOutputs::finishExpecting(std::string &report) const {
  bool ok = true;
  for (size_t o = 0; o < comparisons.size(); ++o) {
    report += "  expect " +
              describeComparison(program->outputs[o].name, comparisons[o]) +
              "\n";
    ok &= comparisons[o].within;
  }
  if (!ok)
    return Status::error("the outputs do not match the expected ones in '" +
                         expectDirectory + "'");
  return Status::success();
}
