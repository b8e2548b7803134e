//===- Layout.h - Where the blocks of a sharded tensor live -----*- C++ -*-===//
//
// Index math shared by the compiler and the runtime: local shapes, the
// global index ranges each device holds, which devices hold an element.
//
// Uneven dimensions (docs/ShardingRepresentation.md): a dimension of size d over k shards has chunk
// c = ceil(d / k); shard i holds [i*c, min((i+1)*c, d)) - trailing shards may
// be short or empty - and every device allocates c elements (padded).
//
// All functions expect a sharding that passed validateSharding for the mesh
// and a shape of matching rank; they do not re-check.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_LAYOUT_H
#define PARTITA_SHARDING_LAYOUT_H

#include "partita/Sharding/Sharding.h"

#include <cstdint>
#include <vector>

namespace partita {

/// A half-open range [begin, end) of global indices along one dimension.
struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const IndexRange &o) const {
    return begin == o.begin && end == o.end;
  }
};

/// Number of shards of dimension `dim` (product of its axes' sizes).
int64_t numShards(const Mesh &mesh, const DimSharding &dim);

/// Per dimension, the number of shards.
std::vector<int64_t> shardCounts(const Mesh &mesh, const Sharding &sharding);

/// True when every dimension divides evenly by its shard count.
bool isEvenlySharded(const Mesh &mesh, const Sharding &sharding,
                     const std::vector<int64_t> &globalShape);

/// The per-device (padded) shape: ceil(d / k) per dimension.
std::vector<int64_t> localShape(const Mesh &mesh, const Sharding &sharding,
                                const std::vector<int64_t> &globalShape);

/// Per dimension, the shard index device `deviceId` holds.
std::vector<int64_t> shardIndices(const Mesh &mesh, const Sharding &sharding,
                                  int64_t deviceId);

/// Per dimension, the global indices device `deviceId` holds (unpadded; may
/// be empty for trailing shards of uneven dimensions).
std::vector<IndexRange> deviceBlock(const Mesh &mesh, const Sharding &sharding,
                                    const std::vector<int64_t> &globalShape,
                                    int64_t deviceId);

/// Sorted ids of the devices that hold global element `index`.
std::vector<int64_t> devicesHolding(const Mesh &mesh, const Sharding &sharding,
                                    const std::vector<int64_t> &globalShape,
                                    const std::vector<int64_t> &index);

/// Bytes each device allocates for the tensor (padded local shape).
int64_t bytesPerDevice(const Mesh &mesh, const Sharding &sharding,
                       const std::vector<int64_t> &globalShape,
                       int64_t elementBytes);

} // namespace partita

#endif // PARTITA_SHARDING_LAYOUT_H
