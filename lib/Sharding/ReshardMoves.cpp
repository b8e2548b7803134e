//===- ReshardMoves.cpp - The moves of planReshard's search ---------------===//
//
// From one state of the search (ReshardSearch.h), every primitive move of
// Cost.h: all_gather and all_to_all of the minor-most axes of a dimension,
// all_slice of unused axes, making a value partial, all_reduce and
// reduce_scatter of partial axes, and collective_permute to every other
// arrangement with the same shard counts. A dimension that does not divide
// evenly changes its shard count only where the padded blocks line up.
//
//===----------------------------------------------------------------------===//

#include "ReshardSearch.h"

#include <algorithm>
#include <cmath>

using namespace partita;
using namespace partita::detail;

namespace {

/// Every ordered sequence of distinct axes drawn from `axes`.
void orderedSubsets(const AxisIds &axes, AxisIds &prefix, uint32_t taken,
                    std::vector<AxisIds> &out) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (taken & (1u << i))
      continue;
    prefix.push_back(axes[i]);
    out.push_back(prefix);
    orderedSubsets(axes, prefix, taken | (1u << i), out);
    prefix.pop_back();
  }
}

AxisIds maskAxes(uint32_t mask) {
  AxisIds axes;
  for (int a = 0; a < kMaxMeshAxes; ++a)
    if (mask & (1u << a))
      axes.push_back(a);
  return axes;
}

} // namespace

template <typename MakeCode>
void ReshardSearch::relax(int from, Move move, double localInputBytes,
                          MakeCode makeCode) {
  int64_t size = groupSize(move.axes);
  double time = 0, bytes = 0;
  if (move.kind != CollectiveKind::AllSlice) {
    bytes = collectiveBytesPerDevice(move.kind, size, localInputBytes);
    time =
        collectiveTimeUs(move.kind, size, localInputBytes, linkFor(move.axes));
  }
  PathCost cost = nodes[from].cost;
  cost.picoseconds += std::llround(time * 1e6);
  cost.steps += 1;
  cost.millibytes += std::llround(bytes * 1e3);
  if (cost.picoseconds > boundPicoseconds)
    return;
  addNode(makeCode(), cost, from, std::move(move));
}

void ReshardSearch::expand(int id) {
  const Arrangement current = decode(nodes[id].code);
  const double bytes = localBytes(current);
  const std::vector<int64_t> counts = shardCounts(current);
  const uint32_t unused = universe & ~(current.dimMask() | current.partial);
  const AxisIds none;
  auto suffix = [&](int dim, size_t count) {
    const AxisIds &axes = current.dims[dim];
    return axes.substr(axes.size() - count);
  };

  for (int d = 0; d < rank; ++d) {
    for (size_t k = 1; k <= current.dims[d].size(); ++k) {
      AxisIds group = suffix(d, k);
      int64_t size = groupSize(group);
      if (!blocksLineUp(d, counts[d] / size, counts[d]))
        continue;
      relax(id, Move{CollectiveKind::AllGather, group, d, -1}, bytes, [&] {
        return encodeEdited(current, d, k, -1, none, current.partial,
                            current.kind);
      });
      for (int t = 0; t < rank; ++t) {
        if (t == d || !blocksLineUp(t, counts[t], counts[t] * size))
          continue;
        relax(id, Move{CollectiveKind::AllToAll, group, t, d}, bytes, [&] {
          return encodeEdited(current, d, k, t, group, current.partial,
                              current.kind);
        });
      }
    }
  }

  AxisIds prefix;
  if (unused) {
    std::vector<AxisIds> slices;
    orderedSubsets(maskAxes(unused), prefix, 0, slices);
    for (int d = 0; d < rank; ++d)
      for (const AxisIds &group : slices)
        if (blocksLineUp(d, counts[d], counts[d] * groupSize(group)))
          relax(id, Move{CollectiveKind::AllSlice, group, d, -1}, bytes, [&] {
            return encodeEdited(current, -1, 0, d, group, current.partial,
                                current.kind);
          });
  }

  // Making a value partial is free. A whole value only becomes partial the
  // way `to` is; a partial one may grow over any axis, because a
  // reduce_scatter over more devices moves fewer bytes than an all_reduce.
  PartialKind partialKind = current.partial ? current.kind : target.kind;
  uint32_t makePartial = current.partial ? unused : target.partial & unused;
  if (makePartial && partialKind != PartialKind::None) {
    for (uint32_t subset = makePartial; subset;
         subset = (subset - 1) & makePartial) {
      AxisIds group;
      for (int axis : partialOrder)
        if (subset & (1u << axis))
          group.push_back(static_cast<char>(axis));
      relax(id, Move{CollectiveKind::AllSlice, group, -1, -1}, bytes, [&] {
        return encodeEdited(current, -1, 0, -1, none, current.partial | subset,
                            partialKind);
      });
    }
  }

  if (current.partial) {
    for (uint32_t subset = current.partial; subset;
         subset = (subset - 1) & current.partial)
      relax(id, Move{CollectiveKind::AllReduce, maskAxes(subset), -1, -1},
            bytes, [&] {
              return encodeEdited(current, -1, 0, -1, none,
                                  current.partial & ~subset, current.kind);
            });
    AxisIds partialAxes = maskAxes(current.partial);
    std::vector<AxisIds> groups;
    if (partialAxes.size() <= 3) {
      orderedSubsets(partialAxes, prefix, 0, groups);
    } else {
      for (int axis : partialAxes)
        groups.push_back(AxisIds(1, static_cast<char>(axis)));
      groups.push_back(partialAxes);
    }
    for (const AxisIds &group : groups) {
      uint32_t mask = 0;
      for (int axis : group)
        mask |= 1u << axis;
      for (int d = 0; d < rank; ++d)
        if (blocksLineUp(d, counts[d], counts[d] * groupSize(group)))
          relax(id, Move{CollectiveKind::ReduceScatter, group, d, -1}, bytes,
                [&] {
                  return encodeEdited(current, -1, 0, d, group,
                                      current.partial & ~mask, current.kind);
                });
    }
  }

  expandPermutes(id, current, bytes);
}

/// collective_permute: every other arrangement of the dimension axes with
/// the same shard count per dimension (so the same local shape, and every
/// block exists before and after).
void ReshardSearch::expandPermutes(int id, const Arrangement &current,
                                   double bytes) {
  uint32_t dimAxes = current.dimMask();
  if ((dimAxes & (dimAxes - 1)) == 0)
    return; // Fewer than two axes: nothing to rearrange.
  // Every permute moves all `bytes`: skip them all when even the fastest
  // link cannot stay within the bound.
  // (Two picoseconds of slack cover the rounding of the two terms.)
  if (maxBandwidthGBps > 0 &&
      nodes[id].cost.picoseconds + minLatencyPicoseconds +
              std::llround(bytes / (maxBandwidthGBps * 1e3) * 1e6) - 2 >
          boundPicoseconds)
    return;
  AxisIds axes = maskAxes(dimAxes);
  std::vector<int64_t> counts = shardCounts(current);
  Arrangement candidate = current;
  for (AxisIds &dim : candidate.dims)
    dim.clear();
  // Fills dimension `d` axis by axis until its product reaches counts[d].
  auto place = [&](auto &self, int d, int64_t product, uint32_t left) -> void {
    if (d == rank) {
      if (left)
        return;
      AxisIds group;
      for (int dim = 0; dim < rank; ++dim)
        if (candidate.dims[dim] != current.dims[dim])
          for (int axis : current.dims[dim])
            group.push_back(axis);
      if (group.empty())
        return;
      std::sort(group.begin(), group.end());
      relax(id, Move{CollectiveKind::CollectivePermute, group, -1, -1}, bytes,
            [&] { return encode(candidate); });
      return;
    }
    if (product == counts[d]) {
      self(self, d + 1, 1, left);
      return;
    }
    for (int axis : axes) {
      if (!(left & (1u << axis)) || (counts[d] / product) % axisSizes[axis])
        continue;
      candidate.dims[d].push_back(axis);
      self(self, d, product * axisSizes[axis], left & ~(1u << axis));
      candidate.dims[d].pop_back();
    }
  };
  place(place, 0, 1, dimAxes);
}
