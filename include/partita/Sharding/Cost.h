//===- Cost.h - Estimated time of collectives and reshards ------*- C++ -*-===//
//
// The cost model of docs/Partitioning.md ("The moves and their costs"),
// shared by propagation (to settle conflicts), the partitioner (to pick
// reshard plans) and the report:
//
//   bytes per device, n = group size, S = local input bytes:
//     all_gather (n-1)·S; reduce_scatter and all_to_all (n-1)/n·S;
//     all_reduce 2(n-1)/n·S; collective_permute S; all_slice 0.
//   time = bytes / bandwidth + latency, with the slowest bandwidth and the
//   largest latency among the collective's axes.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_COST_H
#define PARTITA_SHARDING_COST_H

#include "partita/Sharding/Sharding.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace partita {

/// Link figures of one mesh axis.
struct AxisLink {
  double bandwidthGBps = 450.0;
  double latencyUs = 5.0;
};

/// Link figures per mesh axis; axes not listed use `defaultLink` (one NVLink
/// node: 450 GB/s, 5 µs) — or, when the spec describes nodes (a cluster
/// file: devices_per_node and inter_node), `interNode` for an axis whose
/// groups span more devices than one node holds.
struct Interconnect {
  std::map<std::string, AxisLink> axes;
  AxisLink defaultLink;
  /// Bucket size of the collective combiner, in bytes per device, when the
  /// spec gives one ("combine_bytes"; 0 turns combining off).
  std::optional<int64_t> combineBytes;
  /// Devices per node (0: one node holds the whole mesh).
  int64_t devicesPerNode = 0;
  /// The link between nodes.
  std::optional<AxisLink> interNode;

  /// The slowest bandwidth and largest latency among `axisNames`, with
  /// axes the spec does not name on `defaultLink`.
  AxisLink linkFor(const std::vector<std::string> &axisNames) const;
  /// The same on `mesh`: an axis the spec does not name whose groups span
  /// more than devicesPerNode devices (its size times the sizes of the axes
  /// minor to it, device ids row-major) is on `interNode`.
  AxisLink linkOn(const Mesh &mesh,
                  const std::vector<std::string> &axisNames) const;
};

/// The collectives of the cost model.
enum class CollectiveKind {
  AllGather,
  AllSlice,
  AllReduce,
  ReduceScatter,
  AllToAll,
  CollectivePermute
};

/// Op name of a collective ("all_gather", ...).
const char *collectiveName(CollectiveKind kind);

/// Bytes each device sends, by the bus-traffic convention above.
double collectiveBytesPerDevice(CollectiveKind kind, int64_t groupSize,
                                double localInputBytes);

/// Estimated time in microseconds.
double collectiveTimeUs(CollectiveKind kind, int64_t groupSize,
                        double localInputBytes, const AxisLink &link);

/// One collective of a reshard plan. Semantics are those of the dialect's
/// collective ops (see PartitaCollectiveOps.td): a group is the devices that
/// agree on every mesh axis not in `axes`; a device's position in its group
/// is the mixed-radix number of its coordinates on `axes`, in that order.
struct ReshardStep {
  CollectiveKind kind;
  /// Mesh axes of the group, in group order (major first).
  std::vector<std::string> axes;
  /// The tensor dimension the step works on: gathered (all_gather), split
  /// (all_slice, reduce_scatter, the split_dim of all_to_all); -1 for
  /// all_reduce and collective_permute. An all_slice with dim -1 makes the
  /// value partial over `axes` with the kind of `after` (a whole value, or
  /// one already partial with that kind; free: for sum the devices at a
  /// group position other than 0 replace their value with zeros, for
  /// max/min every device keeps its value).
  int dim = -1;
  /// all_to_all only: the dimension the received blocks are concatenated
  /// along (the dimension the axes leave).
  int concatDim = -1;
  /// collective_permute only: (source, target) group positions.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  /// The tensor's sharding after this step.
  Sharding after;
  double localInputBytes = 0;
  double bytesPerDevice = 0;
  double timeUs = 0;
};

/// A sequence of collectives that turns one sharding into another.
struct ReshardPlan {
  std::vector<ReshardStep> steps;
  double bytesPerDevice() const;
  double timeUs() const;
};

/// The cheapest plan (by estimated time; ties: fewer steps, then fewer
/// bytes) from `from` to `to` for a tensor of `globalShape` with elements of
/// `elementBytes` bytes, found by a shortest-path search over sequences of
/// primitive moves:
///   all_slice      append an unused axis as the minor axis of a dimension
///   (free) all_gather     remove the minor-most axes of a dimension all_to_all
///   move the minor-most axes of one dimension to the minor end
///                  of another
///   all_reduce     make some partial axes whole
///   reduce_scatter make partial axes whole and append them to a dimension
///   collective_permute  reach a sharding with the same local shape and the
///                  same axes in another arrangement (moves S bytes)
///   making a whole value partial over an axis (sum: all but coordinate 0
///   hold zero; max/min: every device keeps the value) is free.
/// Open/closed flags and priorities are ignored. Results are memoized.
///
/// The planner's collective_permute keeps the shard count of every
/// dimension (the same local shape, for even shapes), with the axes of the
/// dimensions it changes as its group. Making a value partial is a step:
/// all_slice with dim -1 (see ReshardStep::dim). A whole value becomes partial
/// only as `to` is; a partial value may also become partial over more axes
/// (same kind) when a reduce_scatter over the larger group then costs less than
/// an all_reduce. A partial source whose kind differs from `to`'s is reduced
/// first. Axes of size 1 change no block and no group, so plans never name
/// them. Every step's `after` is closed and has no priority; the last step's
/// `after` is `to` (closed, no priority), earlier ones are in the normal form
/// of reshardNormalForm. A dimension that does not divide evenly changes its
/// shard count only by moves whose padded blocks line up (the count goes to
/// or from 1, or the chunks nest exactly); the partitioner pads a split
/// dimension to a multiple of the group size before a split and trims a
/// dimension to the new local shape after a concatenation.
ReshardPlan planReshard(const Mesh &mesh, const Sharding &from,
                        const Sharding &to,
                        const std::vector<int64_t> &globalShape,
                        int64_t elementBytes, const Interconnect &interconnect);

/// planReshard(...).timeUs() without copying the plan (propagation asks for
/// costs only, a million times on a large train step).
double reshardTimeUs(const Mesh &mesh, const Sharding &from,
                     const Sharding &to,
                     const std::vector<int64_t> &globalShape,
                     int64_t elementBytes, const Interconnect &interconnect);

/// The baseline the planner must never lose to: all_reduce every partial
/// axis, all_gather every dimension that differs from `to` (whole), then
/// all_slice into `to`. That is one all_reduce over all partial axes, one
/// all_gather per differing dimension over all its axes, one all_slice per
/// dimension `to` splits differently, and an all_slice with dim -1 when `to`
/// is partial; axes of size 1 are left out.
ReshardPlan naiveReshardPlan(const Mesh &mesh, const Sharding &from,
                             const Sharding &to,
                             const std::vector<int64_t> &globalShape,
                             int64_t elementBytes,
                             const Interconnect &interconnect);

/// The sharding after `step` is applied to `sharding`, or a failure when the
/// step does not apply (an axis that is not where the step expects it).
/// The step is checked against the normal form of `sharding`
/// (reshardNormalForm); a collective_permute must name the `after` it
/// reaches and the pairs collectivePermutePairs gives for its axes.
Expected<Sharding> applyReshardStep(const Mesh &mesh, const Sharding &sharding,
                                    const ReshardStep &step);

/// `sharding` as the planner sees it: dimensions closed, no priority, no axis
/// of size 1, and no partial kind when no partial axis is left.
Sharding reshardNormalForm(const Mesh &mesh, const Sharding &sharding);

/// The pairs (source position, target position) of a collective_permute
/// over the group `axes` after which every device holds its block under
/// `to`, given its block under `from`. Both must have the same partial axes
/// and kind, the same dimension axes and the same shard count per
/// dimension, and `axes` must contain every axis of each dimension whose
/// axis list differs; otherwise a failure. Every position is a target once
/// (a device that keeps its block is a pair p -> p).
Expected<std::vector<std::pair<int64_t, int64_t>>>
collectivePermutePairs(const Mesh &mesh, const Sharding &from,
                       const Sharding &to,
                       const std::vector<std::string> &axes);

/// True when `a` and `b` put the same block (and the same partial axes and
/// kind) on every device: their normal forms agree up to the order of the
/// partial axes. planReshard returns no steps for such a pair.
bool sameReshardLayout(const Mesh &mesh, const Sharding &a, const Sharding &b);

/// Forgets every planReshard result this thread memoized (benchmarks and
/// tests; each thread keeps its own).
void clearReshardPlanCache();

} // namespace partita

#endif // PARTITA_SHARDING_COST_H
