//===- ShardedArray.cpp - Global arrays and per-device blocks -------------===//
//
// Every copy here moves an axis-aligned box between two C-ordered arrays.
// The box is walked one innermost row at a time so each row is a single
// memcpy (or memcmp, for the replica check).
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/ShardedArray.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

namespace partita {

namespace {

/// Row-major element strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t linearOffset(const std::vector<int64_t> &index,
                     const std::vector<int64_t> &strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i)
    offset += index[i] * strides[i];
  return offset;
}

/// Calls `visitRow(rowStart, sourceOffset, destOffset, rowLength)` for each
/// innermost row of a `box`-shaped region that starts at `sourceStart` in an
/// array of `sourceShape` and at `destStart` in one of `destShape`. Offsets
/// are in elements; rowStart is the row's first index relative to the box.
/// Stops early when visitRow returns false.
template <typename VisitRow>
void forEachRow(const std::vector<int64_t> &box,
                const std::vector<int64_t> &sourceShape,
                const std::vector<int64_t> &sourceStart,
                const std::vector<int64_t> &destShape,
                const std::vector<int64_t> &destStart, VisitRow visitRow) {
  for (int64_t dim : box)
    if (dim == 0)
      return;
  std::vector<int64_t> sourceStrides = stridesOf(sourceShape);
  std::vector<int64_t> destStrides = stridesOf(destShape);
  size_t rank = box.size();
  int64_t rowLength = rank == 0 ? 1 : box.back();
  std::vector<int64_t> rowStart(rank, 0);
  std::vector<int64_t> sourceIndex(rank), destIndex(rank);
  while (true) {
    for (size_t i = 0; i < rank; ++i) {
      sourceIndex[i] = sourceStart[i] + rowStart[i];
      destIndex[i] = destStart[i] + rowStart[i];
    }
    if (!visitRow(rowStart, linearOffset(sourceIndex, sourceStrides),
                  linearOffset(destIndex, destStrides), rowLength))
      return;
    // Advance the odometer over every dimension but the innermost.
    int dim = static_cast<int>(rank) - 2;
    for (; dim >= 0; --dim) {
      if (++rowStart[dim] < box[dim])
        break;
      rowStart[dim] = 0;
    }
    if (dim < 0)
      return;
  }
}

std::vector<int64_t> rangeBegins(const std::vector<IndexRange> &ranges) {
  std::vector<int64_t> begins;
  for (const IndexRange &range : ranges)
    begins.push_back(range.begin);
  return begins;
}

std::vector<int64_t> rangeSizes(const std::vector<IndexRange> &ranges) {
  std::vector<int64_t> sizes;
  for (const IndexRange &range : ranges)
    sizes.push_back(range.size());
  return sizes;
}

/// The first global index (C order) inside `ranges` where `candidate`
/// differs from `reference`, both blocks of the same shape; empty when they
/// agree.
/// Whether two float elements differ by at most `tolerance` of the larger
/// magnitude (never for integers: tolerance 0).
bool withinRounding(const HostArray &a, int64_t i, const HostArray &b,
                    int64_t j, double tolerance) {
  if (tolerance == 0)
    return false;
  double x = elementAsDouble(a, i), y = elementAsDouble(b, j);
  return std::fabs(x - y) <= tolerance * std::max(std::fabs(x), std::fabs(y));
}

std::optional<std::vector<int64_t>>
firstDifference(const HostArray &reference, const HostArray &candidate,
                const std::vector<IndexRange> &ranges) {
  int64_t elementSize = dtypeSize(reference.dtype);
  double tolerance = reference.dtype == DType::F64   ? 1e-12
                     : reference.dtype == DType::F32 ? 1e-5
                     : (reference.dtype == DType::BF16 ||
                        reference.dtype == DType::F16)
                         ? 1e-2
                         : 0.0;
  std::vector<int64_t> origin(ranges.size(), 0);
  std::optional<std::vector<int64_t>> found;
  forEachRow(rangeSizes(ranges), reference.shape, origin, candidate.shape,
             origin,
             [&](const std::vector<int64_t> &rowStart, int64_t offset, int64_t,
                 int64_t rowLength) {
               const uint8_t *a = reference.bytes.data() + offset * elementSize;
               const uint8_t *b = candidate.bytes.data() + offset * elementSize;
               if (std::memcmp(a, b, rowLength * elementSize) == 0)
                 return true;
               // Floats may differ by rounding: a shard_map output that
               // JAX takes as replicated may be summed in another order on
               // each device (JAX keeps one copy).
               int64_t column = 0;
               while (column < rowLength &&
                      (std::memcmp(a + column * elementSize,
                                   b + column * elementSize,
                                   elementSize) == 0 ||
                       withinRounding(reference, offset + column, candidate,
                                      offset + column, tolerance)))
                 ++column;
               if (column == rowLength)
                 return true;
               std::vector<int64_t> index = rowStart;
               if (!index.empty())
                 index.back() += column;
               for (size_t i = 0; i < index.size(); ++i)
                 index[i] += ranges[i].begin;
               found = index;
               return false;
             });
  return found;
}

int64_t flatIndexIn(const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &index) {
  return linearOffset(index, stridesOf(shape));
}

} // namespace

Sharding withoutPartial(const Sharding &sharding) {
  Sharding whole = sharding;
  whole.partialKind = PartialKind::None;
  whole.partialAxes.clear();
  return whole;
}

Status checkShardedLayout(const Mesh &mesh, const Sharding &sharding,
                          const std::vector<int64_t> &globalShape) {
  if (Status valid = validateSharding(mesh, sharding, &globalShape); !valid)
    return valid;
  if (sharding.partialKind != PartialKind::None)
    return Status::error("the sharding " + sharding.toString() +
                         " is partial, so devices hold addends or candidates "
                         "rather than blocks of one array; reduce the value "
                         "before slicing or assembling it");
  return Status::success();
}

std::string formatRanges(const std::vector<IndexRange> &ranges) {
  std::string text = "[";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i)
      text += ", ";
    text +=
        std::to_string(ranges[i].begin) + ":" + std::to_string(ranges[i].end);
  }
  return text + "]";
}

namespace {

/// Copies the box of `sizes` at `fromBegins` of `from` to `toBegins` of
/// `to` (arrays of one dtype), a row at a time.
void copyBox(const std::vector<int64_t> &sizes, const HostArray &from,
             const std::vector<int64_t> &fromBegins, HostArray &to,
             const std::vector<int64_t> &toBegins) {
  int64_t elementSize = dtypeSize(from.dtype);
  forEachRow(sizes, from.shape, fromBegins, to.shape, toBegins,
             [&](const std::vector<int64_t> &, int64_t source, int64_t dest,
                 int64_t rowLength) {
               std::memcpy(to.bytes.data() + dest * elementSize,
                           from.bytes.data() + source * elementSize,
                           rowLength * elementSize);
               return true;
             });
}

} // namespace

Status
forEachRegionRow(const std::vector<IndexRange> &ranges,
                 const std::vector<int64_t> &globalShape,
                 const std::vector<int64_t> &paddedShape,
                 const std::function<Status(int64_t, int64_t, int64_t)> &row) {
  Status result = Status::success();
  forEachRow(rangeSizes(ranges), globalShape, rangeBegins(ranges), paddedShape,
             std::vector<int64_t>(ranges.size(), 0),
             [&](const std::vector<int64_t> &, int64_t global, int64_t local,
                 int64_t length) {
               result = row(global, local, length);
               return result.ok();
             });
  return result;
}

HostArray extractBlock(const HostArray &global,
                       const std::vector<IndexRange> &ranges,
                       const std::vector<int64_t> &paddedShape) {
  HostArray block = HostArray::zeros(global.dtype, paddedShape);
  copyBox(rangeSizes(ranges), global, rangeBegins(ranges), block,
          std::vector<int64_t>(ranges.size(), 0));
  return block;
}

void placeBlock(HostArray &global, const HostArray &block,
                const std::vector<IndexRange> &ranges) {
  copyBox(rangeSizes(ranges), block, std::vector<int64_t>(ranges.size(), 0),
          global, rangeBegins(ranges));
}

Expected<HostArray> sliceDeviceBlock(const HostArray &global, const Mesh &mesh,
                                     const Sharding &sharding,
                                     int64_t deviceId) {
  if (Status layout = checkShardedLayout(mesh, sharding, global.shape); !layout)
    return layout;
  if (Status consistent = global.checkConsistent(); !consistent)
    return consistent;
  if (deviceId < 0 || deviceId >= mesh.numDevices())
    return Status::error("device " + std::to_string(deviceId) +
                         " is not on the mesh " + mesh.toString() + " (ids 0-" +
                         std::to_string(mesh.numDevices() - 1) + ")");
  return extractBlock(global,
                      deviceBlock(mesh, sharding, global.shape, deviceId),
                      localShape(mesh, sharding, global.shape));
}

Expected<std::vector<HostArray>>
sliceAllDeviceBlocks(const HostArray &global, const Mesh &mesh,
                     const Sharding &sharding) {
  std::vector<HostArray> blocks;
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    Expected<HostArray> block =
        sliceDeviceBlock(global, mesh, sharding, device);
    if (!block)
      return block.status();
    blocks.push_back(std::move(*block));
  }
  return blocks;
}

Expected<HostArray>
assembleDeviceBlocks(const Mesh &mesh, const Sharding &sharding,
                     const std::vector<int64_t> &globalShape,
                     const std::vector<HostArray> &blocksByDevice) {
  if (Status layout = checkShardedLayout(mesh, sharding, globalShape); !layout)
    return layout;
  if (Expected<int64_t> count = checkedNumElements(globalShape); !count)
    return count.status();
  if (static_cast<int64_t>(blocksByDevice.size()) != mesh.numDevices())
    return Status::error("expected one block per device (" +
                         std::to_string(mesh.numDevices()) + ") but got " +
                         std::to_string(blocksByDevice.size()));
  if (blocksByDevice.empty())
    return Status::error("no blocks to assemble");
  std::vector<int64_t> local = localShape(mesh, sharding, globalShape);
  DType dtype = blocksByDevice.front().dtype;
  for (size_t device = 0; device < blocksByDevice.size(); ++device) {
    const HostArray &block = blocksByDevice[device];
    std::string which = "the block of device " + std::to_string(device);
    if (block.dtype != dtype)
      return Status::error(which + " is " + dtypeName(block.dtype) +
                           " but device 0's is " + dtypeName(dtype));
    if (block.shape != local)
      return Status::error(which + " has shape " + formatShape(block.shape) +
                           " but the local shape is " + formatShape(local));
    if (Status consistent = block.checkConsistent(); !consistent)
      return Status::error(which + ": " + consistent.message());
  }

  HostArray global = HostArray::zeros(dtype, globalShape);
  // The lowest-numbered holder of each shard supplies its elements; every
  // other holder must match it.
  std::map<std::vector<int64_t>, int64_t> firstHolder;
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<int64_t> indices = shardIndices(mesh, sharding, device);
    std::vector<IndexRange> ranges =
        deviceBlock(mesh, sharding, globalShape, device);
    auto [entry, inserted] = firstHolder.emplace(indices, device);
    if (inserted) {
      placeBlock(global, blocksByDevice[device], ranges);
      continue;
    }
    int64_t holder = entry->second;
    if (Status same =
            checkReplica(blocksByDevice[holder], holder, blocksByDevice[device],
                         device, ranges, indices);
        !same)
      return same;
  }
  return global;
}

Status checkReplica(const HostArray &holderBlock, int64_t holder,
                    const HostArray &block, int64_t device,
                    const std::vector<IndexRange> &ranges,
                    const std::vector<int64_t> &shardIndex) {
  std::optional<std::vector<int64_t>> mismatch =
      firstDifference(holderBlock, block, ranges);
  if (!mismatch)
    return Status::success();
  std::vector<int64_t> localIndex = *mismatch;
  for (size_t i = 0; i < localIndex.size(); ++i)
    localIndex[i] -= ranges[i].begin;
  int64_t flat = flatIndexIn(block.shape, localIndex);
  return Status::error(
      "replicas disagree at global index " + formatShape(*mismatch) +
      ": device " + std::to_string(device) + " holds " +
      block.formatElement(flat) + " but device " + std::to_string(holder) +
      " holds " + holderBlock.formatElement(flat) + " (both hold shard " +
      formatShape(shardIndex) + ", global block " + formatRanges(ranges) + ")");
}

} // namespace partita
