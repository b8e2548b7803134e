//===- Cost.h - Estimated time of collectives and reshards ------*- C++ -*-===//
//
// The cost model of BRIEF §7, shared by propagation (to settle conflicts),
// the partitioner (to pick reshard plans) and the report:
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

#include <map>
#include <string>
#include <vector>

namespace partita {

/// Link figures of one mesh axis.
struct AxisLink {
  double bandwidthGBps = 450.0;
  double latencyUs = 5.0;
};

/// Link figures per mesh axis; axes not listed use `defaultLink` (one NVLink
/// node: 450 GB/s, 5 µs).
struct Interconnect {
  std::map<std::string, AxisLink> axes;
  AxisLink defaultLink;

  /// The slowest bandwidth and largest latency among `axisNames`.
  AxisLink linkFor(const std::vector<std::string> &axisNames) const;
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

/// One collective of a reshard plan.
struct ReshardStep {
  CollectiveKind kind;
  std::vector<std::string> axes;
  /// Tensor dimension the step works on (the split dimension of an
  /// all_to_all; -1 for all_reduce).
  int dim = -1;
  /// Concatenation dimension of an all_to_all.
  int concatDim = -1;
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

/// A plan from `from` to `to` for a tensor of `globalShape` with elements of
/// `elementBytes` bytes: partial axes are reduced first (reduce_scatter where
/// `to` splits a dimension over the axis, else all_reduce), axes that change
/// dimension move with all_to_all, new axes are sliced (free), and axes
/// `to` lacks are gathered. Open/closed flags and priorities are ignored.
ReshardPlan planReshard(const Mesh &mesh, const Sharding &from,
                        const Sharding &to,
                        const std::vector<int64_t> &globalShape,
                        int64_t elementBytes, const Interconnect &interconnect);

} // namespace partita

#endif // PARTITA_SHARDING_COST_H
