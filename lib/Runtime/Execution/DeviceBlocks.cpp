//===- DeviceBlocks.cpp - Global values to device blocks and back ---------===//
//
// What a run on a mesh reads and returns: each global input cut into the
// blocks its sharding gives each device (a partial sum split into random
// addends), and each output assembled from the devices' blocks (a partial
// sum's addends added up).
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Execution/BlockwiseRun.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Sharding/Layout.h"

#include <cstring>
#include <map>
#include <random>

using namespace partita;

namespace {

/// The devices of `device`'s partial group (those differing from it only
/// on the partial axes), in device order: the first, with coordinate 0 on
/// every partial axis, is the group's leader.
std::vector<int64_t> partialGroup(const Mesh &mesh, const Sharding &sharding,
                                  int64_t device) {
  std::vector<int64_t> group;
  std::vector<int64_t> coords = mesh.coordinates(device);
  for (int64_t d = 0; d < mesh.numDevices(); ++d) {
    std::vector<int64_t> other = mesh.coordinates(d);
    for (const std::string &axis : sharding.partialAxes)
      other[mesh.axisIndex(axis)] = coords[mesh.axisIndex(axis)];
    if (other == coords)
      group.push_back(d);
  }
  return group;
}

/// Fills `block` with the addends group member `device` (not the leader)
/// holds of a partial-sum input: uniform in [-1, 1] for floats, [0, 4) for
/// integers, rounded to the dtype; zeros for booleans and with
/// PartialInputs::FirstMember.
void fillAddends(const Mesh &mesh, const Sharding &sharding, uint64_t seed,
                 int64_t device, HostArray &block, PartialInputs policy) {
  if (block.dtype == DType::Bool || policy == PartialInputs::FirstMember) {
    std::fill(block.bytes.begin(), block.bytes.end(), 0);
    return;
  }
  std::vector<bool> usedAxes(mesh.axes().size(), false);
  for (const std::string &axis : sharding.partialAxes)
    usedAxes[mesh.axisIndex(axis)] = true;
  for (const DimSharding &dim : sharding.dims)
    for (const std::string &axis : dim.axes)
      usedAxes[mesh.axisIndex(axis)] = true;
  bool isFloat = block.dtype == DType::F32 || block.dtype == DType::F64 ||
                 block.dtype == DType::BF16 || block.dtype == DType::F16;
  // Replicas (devices differing only on axes the value does not use) get
  // the same addends, so they compute the same bits.
  std::vector<int64_t> coords = mesh.coordinates(device);
  uint64_t state = seed * 7919ULL + 1;
  for (size_t axis = 0; axis < coords.size(); ++axis)
    if (usedAxes[axis])
      state = state * 1000003ULL + static_cast<uint64_t>(coords[axis]);
  std::mt19937_64 random(state);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int64_t e = 0; e < block.numElements(); ++e)
    setElementFromDouble(block, e,
                         isFloat ? uniform(random)
                                 : static_cast<double>(random() % 4));
}

/// `leader` less `addends`, element by element, rounded to the dtype.
void subtractAddends(HostArray &leader, const HostArray &addends) {
  for (int64_t e = 0; e < leader.numElements(); ++e)
    setElementFromDouble(
        leader, e, elementAsDouble(leader, e) - elementAsDouble(addends, e));
}

/// Splits the blocks of a partial-sum input into addends over each partial
/// group: every member but the first gets random addends (fillAddends),
/// the first the rest, so the group sums to the value.
void splitPartialSum(const Mesh &mesh, const Sharding &sharding, uint64_t seed,
                     std::vector<HostArray *> &blocks, PartialInputs policy) {
  for (size_t d = 0; d < blocks.size(); ++d) {
    int64_t leader =
        partialGroup(mesh, sharding, static_cast<int64_t>(d)).front();
    if (leader == static_cast<int64_t>(d))
      continue;
    fillAddends(mesh, sharding, seed, static_cast<int64_t>(d), *blocks[d],
                policy);
    subtractAddends(*blocks[leader], *blocks[d]);
  }
}

} // namespace

Expected<std::vector<HostArray>>
partita::inputBlocksByDevice(const Executable &program, size_t index,
                             const HostArray &global, PartialInputs policy) {
  const ExecutableValue &input = program.inputs[index];
  if (global.shape != input.globalShape)
    return Status::error("input " + std::to_string(index) + " (" + input.name +
                         ") has the wrong shape");
  Sharding whole = withoutPartial(input.sharding);
  Expected<std::vector<HostArray>> blocks =
      sliceAllDeviceBlocks(global, program.mesh, whole);
  if (!blocks)
    return Status::error("input " + input.name + ": " +
                         blocks.status().message());
  if (input.sharding.partialKind == PartialKind::Sum) {
    std::vector<HostArray *> all;
    for (HostArray &block : *blocks)
      all.push_back(&block);
    splitPartialSum(program.mesh, input.sharding, index, all, policy);
  }
  return blocks;
}

Expected<std::vector<std::vector<HostArray>>>
partita::deviceInputBlocks(const Executable &program,
                           const std::vector<HostArray> &globalInputs,
                           PartialInputs policy) {
  int64_t devices = program.mesh.numDevices();
  if (globalInputs.size() != program.inputs.size())
    return Status::error("the program takes " +
                         std::to_string(program.inputs.size()) +
                         " inputs, got " + std::to_string(globalInputs.size()));
  std::vector<std::vector<HostArray>> deviceInputs(devices);
  for (size_t i = 0; i < globalInputs.size(); ++i) {
    Expected<std::vector<HostArray>> blocks =
        inputBlocksByDevice(program, i, globalInputs[i], policy);
    if (!blocks)
      return blocks.status();
    for (int64_t d = 0; d < devices; ++d)
      deviceInputs[d].push_back(std::move((*blocks)[d]));
  }
  return deviceInputs;
}

Status partita::writeDeviceInputBlock(const Executable &program, size_t index,
                                      int64_t device, const InputRegion &region,
                                      uint8_t *into, PartialInputs policy) {
  const ExecutableValue &input = program.inputs[index];
  const Mesh &mesh = program.mesh;
  Sharding whole = withoutPartial(input.sharding);
  if (Status status = checkShardedLayout(mesh, whole, input.globalShape);
      !status)
    return Status::error("input " + input.name + ": " + status.message());
  const TensorType &local = program.slots[input.slot];
  std::vector<int64_t> padded = localShape(mesh, whole, input.globalShape);
  if (padded != local.shape)
    return Status::error("input " + input.name +
                         ": the program's block does not match its sharding");
  std::vector<IndexRange> ranges =
      deviceBlock(mesh, whole, input.globalShape, device);
  if (input.sharding.partialKind != PartialKind::Sum)
    return region(index, ranges, padded, into);
  // As splitPartialSum() makes it: a member its addends, the leader the
  // value less every other member's addends, in device order.
  std::vector<int64_t> group = partialGroup(mesh, input.sharding, device);
  HostArray block = HostArray::zeros(local.dtype, padded);
  if (group.front() != device) {
    fillAddends(mesh, input.sharding, index, device, block, policy);
  } else {
    if (Status status = region(index, ranges, padded, block.bytes.data());
        !status)
      return status;
    HostArray addends = HostArray::zeros(local.dtype, padded);
    for (size_t m = 1; m < group.size(); ++m) {
      fillAddends(mesh, input.sharding, index, group[m], addends, policy);
      subtractAddends(block, addends);
    }
  }
  std::memcpy(into, block.bytes.data(), block.bytes.size());
  return Status::success();
}

Expected<HostArray> partita::deviceInputBlock(const Executable &program,
                                              size_t index, int64_t device,
                                              const InputRegion &region,
                                              PartialInputs policy) {
  const TensorType &local = program.slots[program.inputs[index].slot];
  HostArray block = HostArray::zeros(local.dtype, local.shape);
  if (Status status = writeDeviceInputBlock(program, index, device, region,
                                            block.bytes.data(), policy);
      !status)
    return status;
  return block;
}

Expected<std::vector<HostArray>> partita::assembleOutputs(
    const Executable &program,
    const std::vector<std::vector<HostArray>> &outputsByDevice) {
  // Each distinct block placed where it belongs (forEachOutputBlock checks
  // the replicas and adds a partial sum's addends). `program` may be a view
  // with outputs only: an output takes its blocks' dtype.
  std::vector<HostArray> results(program.outputs.size());
  std::vector<bool> made(program.outputs.size(), false);
  if (Status status = forEachOutputBlock(
          program, outputsByDevice,
          [&](size_t o, const std::vector<IndexRange> &ranges,
              const HostArray &block) {
            if (!made[o]) {
              results[o] =
                  HostArray::zeros(block.dtype, program.outputs[o].globalShape);
              made[o] = true;
            }
            placeBlock(results[o], block, ranges);
            return Status::success();
          });
      !status)
    return status;
  return results;
}
