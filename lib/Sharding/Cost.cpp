//===- Cost.cpp - Estimated time of collectives and reshards --------------===//
//
// The cost model of docs/Partitioning.md ("The moves and their costs") and
// planReshard's memo table. The search itself is in ReshardSearch.cpp; what
// each step does to a sharding, in ReshardStep.cpp.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Cost.h"
#include "ReshardSearch.h"

#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_map>

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

/// More memoized plans than this and the cache starts over.
constexpr size_t kMaxCachedPlans = 1 << 16;

/// Everything a plan depends on, spelled out.
std::string cacheKey(const Mesh &mesh, const Sharding &from, const Sharding &to,
                     const std::vector<int64_t> &shape, int64_t elementBytes,
                     const Interconnect &interconnect) {
  std::string key = mesh.toString() + ";";
  for (int64_t id : mesh.deviceIds())
    key += std::to_string(id) + ",";
  // `to` verbatim: it becomes the last step's `after`.
  Sharding target = to;
  for (DimSharding &dim : target.dims)
    dim.open = false;
  target.priority.reset();
  key += ";" + reshardNormalForm(mesh, from).toString() + ";" +
         target.toString() + ";";
  for (int64_t extent : shape)
    key += std::to_string(extent) + ",";
  key += ";" + std::to_string(elementBytes) + ";";
  auto link = [&](const AxisLink &l) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g/%.17g", l.bandwidthGBps,
                  l.latencyUs);
    return std::string(text);
  };
  key += link(interconnect.defaultLink);
  for (const auto &[name, axisLink] : interconnect.axes)
    key += ";" + name + "=" + link(axisLink);
  return key;
}

std::mutex cacheMutex;
std::unordered_map<std::string, ReshardPlan> &planCache() {
  // Buckets for every entry up front: a rehash of a large table stalls one
  // unlucky call for milliseconds.
  static std::unordered_map<std::string, ReshardPlan> cache(kMaxCachedPlans);
  return cache;
}

} // namespace

ReshardPlan partita::planReshard(const Mesh &mesh, const Sharding &from,
                                 const Sharding &to,
                                 const std::vector<int64_t> &globalShape,
                                 int64_t elementBytes,
                                 const Interconnect &interconnect) {
  std::string key =
      cacheKey(mesh, from, to, globalShape, elementBytes, interconnect);
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = planCache().find(key);
    if (it != planCache().end())
      return it->second;
  }
  ReshardPlan plan;
  // The naive plan is one path of the search, so it is only needed when the
  // search gives up (invalid input, or a plan longer than it looks).
  if (!detail::searchCheapestReshard(mesh, from, to, globalShape, elementBytes,
                                     interconnect, plan))
    plan = naiveReshardPlan(mesh, from, to, globalShape, elementBytes,
                            interconnect);
  std::lock_guard<std::mutex> lock(cacheMutex);
  if (planCache().size() >= kMaxCachedPlans)
    planCache().clear();
  planCache().emplace(std::move(key), plan);
  return plan;
}

void partita::clearReshardPlanCache() {
  std::lock_guard<std::mutex> lock(cacheMutex);
  planCache().clear();
}
