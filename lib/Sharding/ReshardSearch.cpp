//===- ReshardSearch.cpp - The cheapest collectives between shardings -----===//
//
// The states of planReshard's search (see ReshardSearch.h): encoding, costs,
// the A* bound, the search loop and the plan it reconstructs.
//
//===----------------------------------------------------------------------===//

#include "ReshardSearch.h"

#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <cmath>

using namespace partita;
using namespace partita::detail;

namespace {

int popcount(uint32_t mask) {
  int count = 0;
  for (; mask; mask &= mask - 1)
    ++count;
  return count;
}

} // namespace

ReshardSearch::ReshardSearch(const Mesh &mesh, const Sharding &from,
                             const Sharding &to,
                             const std::vector<int64_t> &shape,
                             int64_t elementBytes,
                             const Interconnect &interconnect)
    : mesh(mesh), shape(shape), elementBytes(elementBytes),
      rank(static_cast<int>(shape.size())) {
  for (const MeshAxis &axis : mesh.axes()) {
    axisSizes.push_back(axis.size);
    axisLinks.push_back(interconnect.linkOn(mesh, {axis.name}));
  }
  source = toArrangement(reshardNormalForm(mesh, from));
  target = toArrangement(reshardNormalForm(mesh, to));
  // Axes neither sharding names still help: slicing one shrinks the
  // buffer a collective on a slow link moves, and a gather on a fast link
  // restores it. Large meshes keep the search small without them.
  uint32_t named =
      source.dimMask() | source.partial | target.dimMask() | target.partial;
  uint32_t all = 0;
  for (int a = 0; a < mesh.rank(); ++a)
    if (axisSizes[a] > 1)
      all |= 1u << a;
  universe = popcount(all) <= kMaxSearchAxes ? all : named;
  double minLatency = 1e300;
  for (int a = 0; a < mesh.rank(); ++a) {
    if (!(universe & (1u << a)))
      continue;
    minLatency = std::min(minLatency, axisLinks[a].latencyUs);
    maxBandwidthGBps = std::max(maxBandwidthGBps, axisLinks[a].bandwidthGBps);
  }
  if (universe)
    minLatencyPicoseconds = std::llround(std::max(minLatency, 0.0) * 1e6);
  for (const AxisLink &link : axisLinks)
    axisLatencyPicoseconds.push_back(
        std::llround(std::max(link.latencyUs, 0.0) * 1e6));
  // Partial axes keep their order from `from`, then from `to`.
  partialOrder = indices(from.partialAxes);
  for (int axis : indices(to.partialAxes))
    if (std::find(partialOrder.begin(), partialOrder.end(), axis) ==
        partialOrder.end())
      partialOrder.push_back(axis);
  for (int a = 0; a < mesh.rank(); ++a)
    if (std::find(partialOrder.begin(), partialOrder.end(), a) ==
        partialOrder.end())
      partialOrder.push_back(a);
}

bool ReshardSearch::run(ReshardPlan &plan, const Sharding &to, int64_t bound) {
  targetCode = encode(target);
  boundPicoseconds = bound;
  addNode(encode(source), PathCost{}, -1, Move{});
  while (!queue.empty()) {
    auto [priority, id] = queue.top();
    queue.pop();
    PathCost cost = nodes[id].cost;
    cost.picoseconds += nodes[id].remainingPicoseconds;
    if (nodes[id].expanded || !(priority == cost))
      continue;
    cost = nodes[id].cost;
    nodes[id].expanded = true;
    if (nodes[id].code == targetCode) {
      plan = reconstruct(id, to);
      return true;
    }
    if (cost.steps < kMaxPlanSteps)
      expand(id);
  }
  return false;
}

AxisIds ReshardSearch::indices(const std::vector<std::string> &names) const {
  AxisIds result;
  for (const std::string &name : names)
    result.push_back(static_cast<char>(mesh.axisIndex(name)));
  return result;
}

Arrangement ReshardSearch::toArrangement(const Sharding &sharding) const {
  Arrangement arrangement;
  for (const DimSharding &dim : sharding.dims)
    arrangement.dims.push_back(indices(dim.axes));
  for (int axis : indices(sharding.partialAxes))
    arrangement.partial |= 1u << axis;
  arrangement.kind = sharding.partialKind;
  return arrangement;
}

Sharding ReshardSearch::toSharding(const Arrangement &arrangement) const {
  Sharding sharding;
  for (const AxisIds &dim : arrangement.dims) {
    DimSharding dimSharding;
    for (int axis : dim)
      dimSharding.axes.push_back(mesh.axes()[axis].name);
    sharding.dims.push_back(std::move(dimSharding));
  }
  for (int axis : partialOrder)
    if (arrangement.partial & (1u << axis))
      sharding.partialAxes.push_back(mesh.axes()[axis].name);
  sharding.partialKind = arrangement.kind;
  return sharding;
}

std::string ReshardSearch::encode(const Arrangement &arrangement) {
  std::string code;
  for (const AxisIds &dim : arrangement.dims) {
    for (int axis : dim)
      code += static_cast<char>(axis);
    code += kDimEnd;
  }
  code += static_cast<char>(arrangement.kind);
  for (int a = 0; a < kMaxMeshAxes; ++a)
    if (arrangement.partial & (1u << a))
      code += static_cast<char>(a);
  return code;
}

std::string ReshardSearch::encodeEdited(const Arrangement &arrangement,
                                        int dropDim, size_t dropCount,
                                        int addDim, const AxisIds &added,
                                        uint32_t partial, PartialKind kind) {
  std::string code;
  for (int d = 0; d < static_cast<int>(arrangement.dims.size()); ++d) {
    const AxisIds &dim = arrangement.dims[d];
    size_t keep = d == dropDim ? dim.size() - dropCount : dim.size();
    for (size_t i = 0; i < keep; ++i)
      code += static_cast<char>(dim[i]);
    if (d == addDim)
      for (int axis : added)
        code += static_cast<char>(axis);
    code += kDimEnd;
  }
  code += static_cast<char>(partial ? kind : PartialKind::None);
  for (int a = 0; a < kMaxMeshAxes; ++a)
    if (partial & (1u << a))
      code += static_cast<char>(a);
  return code;
}

Arrangement ReshardSearch::decode(const std::string &code) const {
  Arrangement arrangement;
  arrangement.dims.resize(rank);
  size_t i = 0;
  for (int d = 0; d < rank; ++d, ++i)
    for (; code[i] != kDimEnd; ++i)
      arrangement.dims[d].push_back(code[i]);
  arrangement.kind = static_cast<PartialKind>(code[i++]);
  for (; i < code.size(); ++i)
    arrangement.partial |= 1u << code[i];
  return arrangement;
}

int64_t ReshardSearch::groupSize(const AxisIds &axes) const {
  int64_t size = 1;
  for (int axis : axes)
    size *= axisSizes[axis];
  return size;
}

std::vector<int64_t>
ReshardSearch::shardCounts(const Arrangement &arrangement) const {
  std::vector<int64_t> counts;
  for (const AxisIds &dim : arrangement.dims)
    counts.push_back(groupSize(dim));
  return counts;
}

double ReshardSearch::localBytes(const Arrangement &arrangement) const {
  double bytes = static_cast<double>(elementBytes);
  for (int d = 0; d < rank; ++d) {
    int64_t size = std::max<int64_t>(shape[d], 0);
    int64_t count = groupSize(arrangement.dims[d]);
    bytes *= static_cast<double>(size / count + (size % count ? 1 : 0));
  }
  return bytes;
}

bool ReshardSearch::blocksLineUp(int dim, int64_t fewer, int64_t more) const {
  int64_t size = shape[dim];
  if (fewer == 1 || size <= 0)
    return true;
  auto chunk = [&](int64_t count) {
    return size / count + (size % count ? 1 : 0);
  };
  return chunk(fewer) == (more / fewer) * chunk(more);
}

AxisLink ReshardSearch::linkFor(const AxisIds &axes) const {
  AxisLink worst{1e300, 0.0};
  for (int axis : axes) {
    worst.bandwidthGBps =
        std::min(worst.bandwidthGBps, axisLinks[axis].bandwidthGBps);
    worst.latencyUs = std::max(worst.latencyUs, axisLinks[axis].latencyUs);
  }
  return worst;
}

void ReshardSearch::addNode(std::string code, PathCost cost, int parent,
                            Move move) {
  auto found = nodeOfCode.find(code);
  if (found == nodeOfCode.end()) {
    int64_t remaining = remainingLowerBound(code);
    if (cost.picoseconds + remaining > boundPicoseconds)
      return;
    if (code == targetCode)
      boundPicoseconds = cost.picoseconds;
    found = nodeOfCode.emplace(code, static_cast<int>(nodes.size())).first;
    nodes.push_back(
        SearchNode{std::move(code), cost, remaining, parent, std::move(move)});
  } else {
    SearchNode &node = nodes[found->second];
    if (node.expanded || !(cost < node.cost))
      return;
    if (cost.picoseconds + node.remainingPicoseconds > boundPicoseconds)
      return;
    if (node.code == targetCode)
      boundPicoseconds = cost.picoseconds;
    node.cost = cost;
    node.parent = parent;
    node.move = std::move(move);
  }
  cost.picoseconds += nodes[found->second].remainingPicoseconds;
  queue.push({cost, found->second});
}

int64_t ReshardSearch::remainingLowerBound(const std::string &code) const {
  int64_t misplaced = 0, unreduced = 0;
  size_t i = 0;
  for (int d = 0; d < rank; ++d, ++i) {
    const AxisIds &wanted = target.dims[d];
    bool onPrefix = true;
    for (size_t position = 0; code[i] != kDimEnd; ++i, ++position) {
      onPrefix =
          onPrefix && position < wanted.size() && code[i] == wanted[position];
      if (!onPrefix)
        misplaced = std::max(misplaced, axisLatencyPicoseconds[code[i]]);
    }
  }
  PartialKind kind = static_cast<PartialKind>(code[i++]);
  uint32_t kept = kind == target.kind ? target.partial : 0;
  for (; i < code.size(); ++i)
    if (!(kept & (1u << code[i])))
      unreduced = std::max(unreduced, axisLatencyPicoseconds[code[i]]);
  return misplaced + unreduced;
}

ReshardPlan ReshardSearch::reconstruct(int id, const Sharding &to) const {
  std::vector<int> path;
  for (int node = id; nodes[node].parent >= 0; node = nodes[node].parent)
    path.push_back(node);
  std::reverse(path.begin(), path.end());
  ReshardPlan plan;
  for (size_t i = 0; i < path.size(); ++i) {
    const SearchNode &node = nodes[path[i]];
    Arrangement before = decode(nodes[node.parent].code);
    Arrangement after = decode(node.code);
    ReshardStep step;
    step.kind = node.move.kind;
    for (int axis : node.move.axes)
      step.axes.push_back(mesh.axes()[axis].name);
    step.dim = node.move.dim;
    step.concatDim = node.move.concatDim;
    step.localInputBytes = localBytes(before);
    if (step.kind != CollectiveKind::AllSlice) {
      int64_t size = groupSize(node.move.axes);
      step.bytesPerDevice =
          collectiveBytesPerDevice(step.kind, size, step.localInputBytes);
      step.timeUs = collectiveTimeUs(step.kind, size, step.localInputBytes,
                                     linkFor(node.move.axes));
    }
    step.after = toSharding(after);
    if (step.kind == CollectiveKind::CollectivePermute) {
      auto pairs = collectivePermutePairs(mesh, toSharding(before), step.after,
                                          step.axes);
      if (pairs)
        step.pairs = std::move(*pairs);
    }
    if (i + 1 == path.size()) {
      step.after = to;
      for (DimSharding &dim : step.after.dims)
        dim.open = false;
      step.after.priority.reset();
    }
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

bool partita::detail::searchCheapestReshard(
    const Mesh &mesh, const Sharding &from, const Sharding &to,
    const std::vector<int64_t> &globalShape, int64_t elementBytes,
    const Interconnect &interconnect, ReshardPlan &plan) {
  if (mesh.rank() > kMaxMeshAxes || from.rank() != to.rank() ||
      from.rank() != static_cast<int>(globalShape.size()) ||
      !validateSharding(mesh, from).ok() || !validateSharding(mesh, to).ok())
    return false;
  // The naive plan is a path of the search: its time bounds the search.
  ReshardPlan naive =
      naiveReshardPlan(mesh, from, to, globalShape, elementBytes, interconnect);
  int64_t bound = 16;
  for (const ReshardStep &step : naive.steps)
    bound += std::llround(step.timeUs * 1e6);
  ReshardSearch search(mesh, from, to, globalShape, elementBytes, interconnect);
  return search.run(plan, to, bound);
}
