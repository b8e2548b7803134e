//===- Cost.cpp - Estimated time of collectives and reshards --------------===//

#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Layout.h"

#include <algorithm>

using namespace partita;

AxisLink
Interconnect::linkFor(const std::vector<std::string> &axisNames) const {
  if (axisNames.empty())
    return defaultLink;
  AxisLink worst{1e300, 0.0};
  for (const std::string &name : axisNames) {
    auto it = axes.find(name);
    const AxisLink &link = it == axes.end() ? defaultLink : it->second;
    worst.bandwidthGBps = std::min(worst.bandwidthGBps, link.bandwidthGBps);
    worst.latencyUs = std::max(worst.latencyUs, link.latencyUs);
  }
  return worst;
}

const char *partita::collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::AllSlice:
    return "all_slice";
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::CollectivePermute:
    return "collective_permute";
  }
  return "?";
}

double partita::collectiveBytesPerDevice(CollectiveKind kind, int64_t groupSize,
                                         double localInputBytes) {
  double n = static_cast<double>(groupSize);
  switch (kind) {
  case CollectiveKind::AllGather:
    return (n - 1) * localInputBytes;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n * localInputBytes;
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) / n * localInputBytes;
  case CollectiveKind::CollectivePermute:
    return localInputBytes;
  case CollectiveKind::AllSlice:
    return 0;
  }
  return 0;
}

double partita::collectiveTimeUs(CollectiveKind kind, int64_t groupSize,
                                 double localInputBytes, const AxisLink &link) {
  if (kind == CollectiveKind::AllSlice || groupSize <= 1)
    return 0;
  double bytes = collectiveBytesPerDevice(kind, groupSize, localInputBytes);
  // GB/s = 1e3 bytes per microsecond.
  return bytes / (link.bandwidthGBps * 1e3) + link.latencyUs;
}

double ReshardPlan::bytesPerDevice() const {
  double total = 0;
  for (const ReshardStep &step : steps)
    total += step.bytesPerDevice;
  return total;
}

double ReshardPlan::timeUs() const {
  double total = 0;
  for (const ReshardStep &step : steps)
    total += step.timeUs;
  return total;
}

namespace {

/// Builds a plan step by step while tracking the current sharding and its
/// local size.
class PlanBuilder {
public:
  PlanBuilder(const Mesh &mesh, Sharding start,
              const std::vector<int64_t> &shape, int64_t elementBytes,
              const Interconnect &interconnect)
      : mesh(mesh), current(std::move(start)), shape(shape),
        elementBytes(elementBytes), interconnect(interconnect) {}

  double localBytes() const {
    return static_cast<double>(
        bytesPerDevice(mesh, current, shape, elementBytes));
  }

  void add(CollectiveKind kind, std::vector<std::string> axes, int dim,
           int concatDim = -1) {
    int64_t groupSize = 1;
    for (const std::string &axis : axes)
      groupSize *= mesh.axisSize(axis);
    if (groupSize <= 1)
      return;
    ReshardStep step{kind, axes, dim, concatDim, localBytes(), 0, 0};
    step.bytesPerDevice =
        collectiveBytesPerDevice(kind, groupSize, step.localInputBytes);
    step.timeUs = collectiveTimeUs(kind, groupSize, step.localInputBytes,
                                   interconnect.linkFor(axes));
    plan.steps.push_back(std::move(step));
  }

  const Mesh &mesh;
  Sharding current;
  const std::vector<int64_t> &shape;
  int64_t elementBytes;
  const Interconnect &interconnect;
  ReshardPlan plan;
};

bool contains(const std::vector<std::string> &list, const std::string &value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

void erase(std::vector<std::string> &list, const std::string &value) {
  list.erase(std::remove(list.begin(), list.end(), value), list.end());
}

/// Index of the dimension of `sharding` that uses `axis`, or -1.
int dimOfAxis(const Sharding &sharding, const std::string &axis) {
  for (int d = 0; d < sharding.rank(); ++d)
    if (contains(sharding.dims[d].axes, axis))
      return d;
  return -1;
}

} // namespace

ReshardPlan partita::planReshard(const Mesh &mesh, const Sharding &from,
                                 const Sharding &to,
                                 const std::vector<int64_t> &globalShape,
                                 int64_t elementBytes,
                                 const Interconnect &interconnect) {
  PlanBuilder builder(mesh, from, globalShape, elementBytes, interconnect);
  Sharding &cur = builder.current;
  for (DimSharding &dim : cur.dims)
    dim.open = false;

  // 1. Make partial axes whole: reduce_scatter onto the dimension `to`
  //    splits over the axis when that dimension can take it as its next
  //    minor axis, else all_reduce.
  for (const std::string &axis : from.partialAxes) {
    if (from.partialKind == to.partialKind && contains(to.partialAxes, axis))
      continue;
    erase(cur.partialAxes, axis);
    int target = dimOfAxis(to, axis);
    if (target >= 0 && dimOfAxis(cur, axis) < 0) {
      const std::vector<std::string> &wanted = to.dims[target].axes;
      const std::vector<std::string> &have = cur.dims[target].axes;
      bool extendsPrefix =
          have.size() < wanted.size() &&
          std::equal(have.begin(), have.end(), wanted.begin()) &&
          wanted[have.size()] == axis;
      if (extendsPrefix) {
        builder.add(CollectiveKind::ReduceScatter, {axis}, target);
        cur.dims[target].axes.push_back(axis);
        continue;
      }
    }
    builder.add(CollectiveKind::AllReduce, {axis}, -1);
  }
  if (cur.partialAxes.empty())
    cur.partialKind = PartialKind::None;

  // 2. Per dimension, keep the longest prefix shared with `to`; the axes
  //    after it leave the dimension: with all_to_all when `to` puts the axis
  //    on a dimension that can take it now, else with all_gather.
  for (int d = 0; d < cur.rank(); ++d) {
    std::vector<std::string> &have = cur.dims[d].axes;
    const std::vector<std::string> &wanted = to.dims[d].axes;
    size_t keep = 0;
    while (keep < have.size() && keep < wanted.size() &&
           have[keep] == wanted[keep])
      ++keep;
    // Remove minor axes first: only the most minor axis of a dimension can
    // leave it without reordering the blocks.
    while (have.size() > keep) {
      std::string axis = have.back();
      have.pop_back();
      int target = dimOfAxis(to, axis);
      bool canMove = false;
      if (target >= 0 && target != d) {
        const std::vector<std::string> &targetHave = cur.dims[target].axes;
        const std::vector<std::string> &targetWanted = to.dims[target].axes;
        canMove = targetHave.size() < targetWanted.size() &&
                  std::equal(targetHave.begin(), targetHave.end(),
                             targetWanted.begin()) &&
                  targetWanted[targetHave.size()] == axis;
      }
      if (canMove) {
        // Local size is unchanged by the move; account it before updating.
        have.push_back(axis);
        builder.add(CollectiveKind::AllToAll, {axis}, target, d);
        have.pop_back();
        cur.dims[target].axes.push_back(axis);
      } else {
        have.push_back(axis);
        builder.add(CollectiveKind::AllGather, {axis}, d);
        have.pop_back();
      }
    }
  }

  // 3. Axes `to` adds: slice locally, no traffic.
  for (int d = 0; d < cur.rank(); ++d) {
    const std::vector<std::string> &wanted = to.dims[d].axes;
    std::vector<std::string> &have = cur.dims[d].axes;
    for (size_t k = have.size(); k < wanted.size(); ++k) {
      builder.add(CollectiveKind::AllSlice, {wanted[k]}, d);
      have.push_back(wanted[k]);
    }
  }
  return builder.plan;
}
