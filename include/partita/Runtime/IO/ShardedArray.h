//===- ShardedArray.h - Global arrays and per-device blocks -----*- C++ -*-===//
//
// Moving data between the global view (one HostArray) and the device view
// (one padded block per device) of a sharded tensor. The index math is the
// sharding algebra's (Layout.h); this file adds the copying, the padding with
// zeros, and the check that replicas agree when blocks come back.
//
// Blocks are indexed by device id, always all devices of the mesh, and have
// the padded local shape (docs/ShardingRepresentation.md); the elements past a short trailing
// shard's end are zero when we slice and are ignored when we assemble.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_SHARDEDARRAY_H
#define PARTITA_RUNTIME_SHARDEDARRAY_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Layout.h"

#include <functional>
#include <vector>

namespace partita {

/// `sharding` without its partial kind and axes: how each addend (or a
/// partial max's every copy) is laid out.
Sharding withoutPartial(const Sharding &sharding);

/// Checks that blocks of a `globalShape` array can be laid out by `sharding`
/// on `mesh`: the sharding is valid for the mesh, its rank matches the
/// shape's, and it is not partial (a partial value has no single global
/// array to slice; reduce it first).
Status checkShardedLayout(const Mesh &mesh, const Sharding &sharding,
                          const std::vector<int64_t> &globalShape);

/// The elements of `global` inside `ranges` (one range per dimension, within
/// the shape), in an array of `paddedShape` whose remaining elements are
/// zero. `paddedShape` must be at least the ranges' sizes in every dimension.
HostArray extractBlock(const HostArray &global,
                       const std::vector<IndexRange> &ranges,
                       const std::vector<int64_t> &paddedShape);

/// Copies the leading ranges-sized corner of `block` into `global` at
/// `ranges`. The dtypes must match and the corner must fit in `block`.
void placeBlock(HostArray &global, const HostArray &block,
                const std::vector<IndexRange> &ranges);

/// Calls `row(globalOffset, localOffset, length)` (in elements, C order)
/// for each innermost row of the region `ranges` of an array of
/// `globalShape`, the region placed at the origin of an array of
/// `paddedShape`; stops at and returns the first failure. An empty region
/// has no rows.
Status forEachRegionRow(
    const std::vector<IndexRange> &ranges,
    const std::vector<int64_t> &globalShape,
    const std::vector<int64_t> &paddedShape,
    const std::function<Status(int64_t globalOffset, int64_t localOffset,
                               int64_t length)> &row);

/// The padded block device `deviceId` holds of `global`.
Expected<HostArray> sliceDeviceBlock(const HostArray &global, const Mesh &mesh,
                                     const Sharding &sharding,
                                     int64_t deviceId);

/// The padded blocks of every device, indexed by device id.
Expected<std::vector<HostArray>> sliceAllDeviceBlocks(const HostArray &global,
                                                      const Mesh &mesh,
                                                      const Sharding &sharding);

/// The global array of `globalShape` rebuilt from `blocksByDevice` (one per
/// device of the mesh, by device id, all of the padded local shape and one
/// dtype). Devices holding the same shard must agree bit-for-bit on its
/// elements (padding excluded); the failure names the first element, in C
/// order, where a device disagrees with the lowest-numbered holder.
Expected<HostArray>
assembleDeviceBlocks(const Mesh &mesh, const Sharding &sharding,
                     const std::vector<int64_t> &globalShape,
                     const std::vector<HostArray> &blocksByDevice);

/// Checks that device `device`'s `block` agrees with `holder`'s (both of
/// the padded local shape, holding shard `shardIndex`, the global block
/// `ranges`) as assembleDeviceBlocks() checks replicas; its failure.
Status checkReplica(const HostArray &holderBlock, int64_t holder,
                    const HostArray &block, int64_t device,
                    const std::vector<IndexRange> &ranges,
                    const std::vector<int64_t> &shardIndex);

/// "[0:4, 2:3]": ranges in Python slice notation.
std::string formatRanges(const std::vector<IndexRange> &ranges);

} // namespace partita

#endif // PARTITA_RUNTIME_SHARDEDARRAY_H
