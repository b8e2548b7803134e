//===- Layout.cpp - Where the blocks of a sharded tensor live -------------===//
//
// Index math shared by the compiler and the runtime. A device's shard index
// along a dimension is the mixed-radix number formed by its coordinates on
// that dimension's axes (major first); partial axes and unnamed axes do not
// change which block a device holds.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Layout.h"

#include <algorithm>

namespace partita {

namespace {

/// ceil(size / shards) without overflow. Inputs are expected to be valid;
/// a non-positive shard count (an unknown axis) counts as one shard so that
/// bad input cannot divide by zero, and a negative (dynamic) size passes
/// through unchanged.
int64_t chunkSize(int64_t size, int64_t shards) {
  if (size < 0)
    return size;
  if (shards <= 0)
    shards = 1;
  return size / shards + (size % shards != 0 ? 1 : 0);
}

/// Shard index along `dim` of the device at mesh coordinates `coords`.
int64_t shardIndexAt(const Mesh &mesh, const DimSharding &dim,
                     const std::vector<int64_t> &coords) {
  int64_t index = 0;
  for (const std::string &axis : dim.axes) {
    int axisIndex = mesh.axisIndex(axis);
    if (axisIndex < 0 || axisIndex >= static_cast<int>(coords.size()))
      continue;
    index = index * mesh.axes()[axisIndex].size + coords[axisIndex];
  }
  return index;
}

} // namespace

int64_t numShards(const Mesh &mesh, const DimSharding &dim) {
  int64_t count = 1;
  for (const std::string &axis : dim.axes)
    count *= mesh.axisSize(axis);
  return count;
}

std::vector<int64_t> shardCounts(const Mesh &mesh, const Sharding &sharding) {
  std::vector<int64_t> counts;
  counts.reserve(sharding.dims.size());
  for (const DimSharding &dim : sharding.dims)
    counts.push_back(numShards(mesh, dim));
  return counts;
}

bool isEvenlySharded(const Mesh &mesh, const Sharding &sharding,
                     const std::vector<int64_t> &globalShape) {
  size_t rank = std::min(globalShape.size(), sharding.dims.size());
  for (size_t d = 0; d < rank; ++d) {
    int64_t shards = numShards(mesh, sharding.dims[d]);
    if (shards <= 0 || globalShape[d] % shards != 0)
      return false;
  }
  return true;
}

std::vector<int64_t> localShape(const Mesh &mesh, const Sharding &sharding,
                                const std::vector<int64_t> &globalShape) {
  std::vector<int64_t> shape = globalShape;
  size_t rank = std::min(globalShape.size(), sharding.dims.size());
  for (size_t d = 0; d < rank; ++d)
    shape[d] = chunkSize(globalShape[d], numShards(mesh, sharding.dims[d]));
  return shape;
}

std::vector<int64_t> shardIndices(const Mesh &mesh, const Sharding &sharding,
                                  int64_t deviceId) {
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  std::vector<int64_t> indices;
  indices.reserve(sharding.dims.size());
  for (const DimSharding &dim : sharding.dims)
    indices.push_back(shardIndexAt(mesh, dim, coords));
  return indices;
}

std::vector<IndexRange> deviceBlock(const Mesh &mesh, const Sharding &sharding,
                                    const std::vector<int64_t> &globalShape,
                                    int64_t deviceId) {
  std::vector<int64_t> indices = shardIndices(mesh, sharding, deviceId);
  std::vector<IndexRange> block;
  block.reserve(globalShape.size());
  for (size_t d = 0; d < globalShape.size(); ++d) {
    int64_t size = std::max<int64_t>(globalShape[d], 0);
    if (d >= indices.size()) {
      block.push_back(IndexRange{0, size});
      continue;
    }
    int64_t chunk = chunkSize(size, numShards(mesh, sharding.dims[d]));
    // Trailing shards of a short dimension are empty ranges at its end,
    // never past it; testing before multiplying also rules out overflow.
    int64_t begin =
        chunk == 0 || indices[d] > size / chunk ? size : indices[d] * chunk;
    block.push_back(IndexRange{begin, begin + std::min(chunk, size - begin)});
  }
  return block;
}

std::vector<int64_t> devicesHolding(const Mesh &mesh, const Sharding &sharding,
                                    const std::vector<int64_t> &globalShape,
                                    const std::vector<int64_t> &index) {
  if (index.size() != globalShape.size() ||
      globalShape.size() != sharding.dims.size())
    return {};
  // The shard that holds the element along each dimension.
  std::vector<int64_t> wanted(index.size());
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= globalShape[d])
      return {};
    wanted[d] =
        index[d] / chunkSize(globalShape[d], numShards(mesh, sharding.dims[d]));
  }
  // Walk mesh positions directly: going through device ids would cost a
  // device_ids lookup per device.
  const std::vector<MeshAxis> &axes = mesh.axes();
  const std::vector<int64_t> &ids = mesh.deviceIds();
  std::vector<int64_t> coords(axes.size(), 0);
  std::vector<int64_t> holders;
  int64_t count = mesh.numDevices();
  for (int64_t position = 0; position < count; ++position) {
    int64_t rest = position;
    for (size_t a = axes.size(); a-- > 0;) {
      coords[a] = rest % axes[a].size;
      rest /= axes[a].size;
    }
    bool holds = true;
    for (size_t d = 0; d < wanted.size() && holds; ++d)
      holds = shardIndexAt(mesh, sharding.dims[d], coords) == wanted[d];
    if (holds)
      holders.push_back(ids.empty() ? position : ids[position]);
  }
  std::sort(holders.begin(), holders.end());
  return holders;
}

int64_t bytesPerDevice(const Mesh &mesh, const Sharding &sharding,
                       const std::vector<int64_t> &globalShape,
                       int64_t elementBytes) {
  int64_t bytes = elementBytes;
  for (int64_t extent : localShape(mesh, sharding, globalShape))
    bytes *= std::max<int64_t>(extent, 0);
  return bytes;
}

} // namespace partita
