//===- Cost.cpp - Estimated time of collectives and reshards --------------===//
//
// The cost model of docs/Partitioning.md ("The moves and their costs") and
// planReshard's memo table. The search itself is in ReshardSearch.cpp; what
// each step does to a sharding, in ReshardStep.cpp.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Cost.h"
#include "ReshardSearch.h"
#include "partita/Sharding/EnumName.h"

#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <cstdio>
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

AxisLink Interconnect::linkOn(const Mesh &mesh,
                               const std::vector<std::string> &axisNames) const {
  if (axisNames.empty() || !interNode || devicesPerNode <= 0)
    return linkFor(axisNames);
  AxisLink worst{1e300, 0.0};
  for (const std::string &name : axisNames) {
    AxisLink link = defaultLink;
    if (auto it = axes.find(name); it != axes.end()) {
      link = it->second;
    } else if (int index = mesh.axisIndex(name); index >= 0) {
      // The devices one group of this axis spans: its size times the
      // stride of its coordinate in a row-major device id.
      int64_t span = 1;
      for (size_t a = static_cast<size_t>(index); a < mesh.axes().size(); ++a)
        span *= mesh.axes()[a].size;
      if (span > devicesPerNode)
        link = *interNode;
    }
    worst.bandwidthGBps = std::min(worst.bandwidthGBps, link.bandwidthGBps);
    worst.latencyUs = std::max(worst.latencyUs, link.latencyUs);
  }
  return worst;
}

const char *partita::collectiveName(CollectiveKind kind) {
  static const char *const names[] = {"all_gather", "all_slice",
                                      "all_reduce", "reduce_scatter",
                                      "all_to_all", "collective_permute"};
  return enumName<CollectiveKind::CollectivePermute>(kind, names);
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

/// A mesh and an interconnect plans were cached for.
struct PlanContext {
  Mesh mesh;
  Interconnect interconnect;
};

/// The memoized plans of one thread. Compiles on different threads (plan's
/// layouts side by side) share nothing, so no call takes a lock: one lock
/// for every thread cost partita plan a tenth of its time in contention.
struct PlanCache {
  /// The meshes and interconnects of the plans cached so far, numbered: a
  /// compilation plans for one of each, so a key holds the number instead
  /// of spelling them out (cleared with the plans).
  std::vector<PlanContext> contexts;
  /// Bumped whenever the numbering starts over, and part of every key.
  uint64_t generation = 0;
  /// Buckets for every entry up front: a rehash of a large table stalls
  /// one unlucky call for milliseconds.
  std::unordered_map<std::string, ReshardPlan> plans{kMaxCachedPlans};
};

PlanCache &planCache() {
  thread_local PlanCache cache;
  return cache;
}

bool sameLink(const AxisLink &a, const AxisLink &b) {
  return a.bandwidthGBps == b.bandwidthGBps && a.latencyUs == b.latencyUs;
}

bool sameLinks(const Interconnect &a, const Interconnect &b) {
  if (!sameLink(a.defaultLink, b.defaultLink) || a.axes.size() != b.axes.size())
    return false;
  if (a.devicesPerNode != b.devicesPerNode ||
      a.interNode.has_value() != b.interNode.has_value() ||
      (a.interNode && !sameLink(*a.interNode, *b.interNode)))
    return false;
  for (auto x = a.axes.begin(), y = b.axes.begin(); x != a.axes.end();
       ++x, ++y)
    if (x->first != y->first || !sameLink(x->second, y->second))
      return false;
  return true;
}

/// Empties this thread's cache and its numbering.
void startOver() {
  PlanCache &cache = planCache();
  cache.plans.clear();
  cache.contexts.clear();
  ++cache.generation;
}

/// The number of (mesh, interconnect) in this thread's cache. More than
/// kMaxContexts of them and the cache starts over.
uint64_t contextNumber(const Mesh &mesh, const Interconnect &interconnect) {
  constexpr size_t kMaxContexts = 256;
  std::vector<PlanContext> &contexts = planCache().contexts;
  for (size_t i = contexts.size(); i-- > 0;)
    if (contexts[i].mesh == mesh &&
        sameLinks(contexts[i].interconnect, interconnect))
      return i;
  if (contexts.size() >= kMaxContexts)
    startOver();
  contexts.push_back({mesh, interconnect});
  return contexts.size() - 1;
}

void appendWord(std::string &key, uint64_t word) {
  key.append(reinterpret_cast<const char *>(&word), sizeof(word));
}

/// A count: one byte below 255, else a marker and the word.
void appendCount(std::string &key, uint64_t count) {
  if (count < 255) {
    key += static_cast<char>(count);
    return;
  }
  key += static_cast<char>(255);
  appendWord(key, count);
}

/// The parts of `sharding` a plan depends on: its axes per dimension and its
/// partial axes and kind. Axes are their index on the mesh, or a marker and
/// the name when the mesh has no such axis (the search then rejects it).
/// With `normalForm`, the axes are those reshardNormalForm keeps (axes of
/// size 1 dropped), which is all the search reads of the source.
void appendSharding(std::string &key, const Mesh &mesh,
                    const Sharding &sharding, bool normalForm) {
  auto kept = [&](int index) {
    return !normalForm || index < 0 || mesh.axes()[index].size != 1;
  };
  auto append = [&](const std::vector<std::string> &axes) {
    size_t count = 0;
    for (const std::string &axis : axes)
      count += kept(mesh.axisIndex(axis));
    appendCount(key, count);
    for (const std::string &axis : axes) {
      int index = mesh.axisIndex(axis);
      if (!kept(index))
        continue;
      if (index >= 0 && index < 255) {
        key += static_cast<char>(index);
      } else {
        key += static_cast<char>(255);
        appendCount(key, axis.size());
        key += axis;
      }
    }
  };
  appendCount(key, sharding.dims.size());
  for (const DimSharding &dim : sharding.dims)
    append(dim.axes);
  size_t before = key.size();
  append(sharding.partialAxes);
  bool partial = key[before] != 0;
  appendCount(key, partial ? static_cast<uint64_t>(sharding.partialKind) : 0);
}

/// Everything a plan depends on, as bytes: the (mesh, interconnect) number
/// and its generation,
/// the source in normal form, the target verbatim but closed and without a
/// priority (it becomes the last step's `after`), the shape and the element
/// size.
std::string cacheKey(const Mesh &mesh, const Sharding &from, const Sharding &to,
                     const std::vector<int64_t> &shape, int64_t elementBytes,
                     const Interconnect &interconnect) {
  std::string key;
  key.reserve(96);
  uint64_t context = contextNumber(mesh, interconnect);
  appendWord(key, planCache().generation);
  appendWord(key, context);
  appendSharding(key, mesh, from, /*normalForm=*/true);
  appendSharding(key, mesh, to, /*normalForm=*/false);
  appendCount(key, shape.size());
  for (int64_t extent : shape)
    appendWord(key, static_cast<uint64_t>(extent));
  appendWord(key, static_cast<uint64_t>(elementBytes));
  return key;
}

/// The plan for (from, to) from this thread's cache, or searched for and
/// stored, as `use` sees it (in the cache, so a caller that needs only the
/// cost copies nothing).
template <typename Use>
auto withPlan(const Mesh &mesh, const Sharding &from, const Sharding &to,
              const std::vector<int64_t> &globalShape, int64_t elementBytes,
              const Interconnect &interconnect, Use use) {
  std::string key =
      cacheKey(mesh, from, to, globalShape, elementBytes, interconnect);
  std::unordered_map<std::string, ReshardPlan> &plans = planCache().plans;
  if (auto it = plans.find(key); it != plans.end())
    return use(it->second);
  ReshardPlan plan;
  // The naive plan is one path of the search, so it is only needed when the
  // search gives up (invalid input, or a plan longer than it looks).
  if (!detail::searchCheapestReshard(mesh, from, to, globalShape, elementBytes,
                                     interconnect, plan))
    plan = naiveReshardPlan(mesh, from, to, globalShape, elementBytes,
                            interconnect);
  if (plans.size() >= kMaxCachedPlans)
    plans.clear();
  return use(plans.emplace(std::move(key), std::move(plan)).first->second);
}

} // namespace

ReshardPlan partita::planReshard(const Mesh &mesh, const Sharding &from,
                                 const Sharding &to,
                                 const std::vector<int64_t> &globalShape,
                                 int64_t elementBytes,
                                 const Interconnect &interconnect) {
  return withPlan(mesh, from, to, globalShape, elementBytes, interconnect,
                  [](const ReshardPlan &plan) { return plan; });
}

double partita::reshardTimeUs(const Mesh &mesh, const Sharding &from,
                              const Sharding &to,
                              const std::vector<int64_t> &globalShape,
                              int64_t elementBytes,
                              const Interconnect &interconnect) {
  return withPlan(mesh, from, to, globalShape, elementBytes, interconnect,
                  [](const ReshardPlan &plan) { return plan.timeUs(); });
}

void partita::clearReshardPlanCache() {
  startOver();
}
