//===- ReshardOptimalityTest.cpp - Reshard plans cost the least -----------===//
//
// On 2x2 and 2x4 meshes (and 2x2x2 with a slow axis), for every pair of
// closed shardings (partial sums included), planReshard's plan costs what
// the cheapest sequence of at most four moves costs, found here by an
// exhaustive breadth-first enumeration: moves generated without the
// planner's restrictions, successors by applyReshardStep, costs by
// collectiveTimeUs. Plans are never dearer than naiveReshardPlan, and a
// reshard that only needs local slicing is free and slices only. Also
// prints the planner's speed.
//
//===----------------------------------------------------------------------===//

#include "ReshardTestSupport.h"

#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Layout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <random>

using namespace partita;
using namespace partita::reshard_test;

namespace {

/// Every ordered sequence of distinct names drawn from `names`.
std::vector<std::vector<std::string>>
orderedSubsets(const std::vector<std::string> &names) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> prefix;
  std::vector<bool> taken(names.size(), false);
  auto grow = [&](auto &self) -> void {
    for (size_t i = 0; i < names.size(); ++i) {
      if (taken[i])
        continue;
      taken[i] = true;
      prefix.push_back(names[i]);
      out.push_back(prefix);
      self(self);
      prefix.pop_back();
      taken[i] = false;
    }
  };
  grow(grow);
  return out;
}

/// Every placement of `axes` into ordered dimension lists.
void placements(const std::vector<std::string> &axes, size_t next,
                Sharding &current, std::vector<Sharding> &out) {
  if (next == axes.size()) {
    out.push_back(current);
    return;
  }
  for (DimSharding &dim : current.dims) {
    for (size_t at = 0; at <= dim.axes.size(); ++at) {
      dim.axes.insert(dim.axes.begin() + at, axes[next]);
      placements(axes, next + 1, current, out);
      dim.axes.erase(dim.axes.begin() + at);
    }
  }
}

/// Every primitive move from `current` (in normal form), generated without
/// the planner's restrictions; applyReshardStep rejects what does not apply.
std::vector<ReshardStep> candidateMoves(const Mesh &mesh,
                                        const Sharding &current,
                                        const std::vector<int64_t> &shape,
                                        PartialKind makePartialKind) {
  std::vector<ReshardStep> moves;
  auto add = [&](CollectiveKind kind, std::vector<std::string> axes, int dim,
                 int concatDim = -1) {
    ReshardStep step;
    step.kind = kind;
    step.axes = std::move(axes);
    step.dim = dim;
    step.concatDim = concatDim;
    moves.push_back(std::move(step));
  };
  std::vector<std::string> unused;
  for (const MeshAxis &axis : mesh.axes()) {
    bool used = std::count(current.partialAxes.begin(),
                           current.partialAxes.end(), axis.name) > 0;
    for (const DimSharding &dim : current.dims)
      used = used || std::count(dim.axes.begin(), dim.axes.end(), axis.name);
    if (!used && axis.size > 1)
      unused.push_back(axis.name);
  }
  int rank = current.rank();
  for (int d = 0; d < rank; ++d) {
    const std::vector<std::string> &axes = current.dims[d].axes;
    for (size_t k = 1; k <= axes.size(); ++k) {
      std::vector<std::string> minor(axes.end() - k, axes.end());
      add(CollectiveKind::AllGather, minor, d);
      for (int t = 0; t < rank; ++t)
        if (t != d)
          add(CollectiveKind::AllToAll, minor, t, d);
    }
    for (const std::vector<std::string> &group : orderedSubsets(unused))
      add(CollectiveKind::AllSlice, group, d);
  }
  if (makePartialKind != PartialKind::None)
    for (const std::vector<std::string> &group : orderedSubsets(unused)) {
      add(CollectiveKind::AllSlice, group, -1);
      moves.back().after.partialKind = makePartialKind;
    }
  for (const std::vector<std::string> &group :
       orderedSubsets(current.partialAxes)) {
    add(CollectiveKind::AllReduce, group, -1);
    for (int d = 0; d < rank; ++d)
      add(CollectiveKind::ReduceScatter, group, d);
  }
  std::vector<std::string> dimAxes = current.dimAxes();
  Sharding empty = current;
  for (DimSharding &dim : empty.dims)
    dim.axes.clear();
  std::vector<Sharding> arrangements;
  placements(dimAxes, 0, empty, arrangements);
  // Any group of dimension axes; only those that contain every moved axis
  // have pairs.
  std::vector<std::vector<std::string>> groups;
  for (uint32_t subset = 1; subset < (1u << dimAxes.size()); ++subset) {
    groups.emplace_back();
    for (size_t i = 0; i < dimAxes.size(); ++i)
      if (subset & (1u << i))
        groups.back().push_back(dimAxes[i]);
  }
  for (const Sharding &after : arrangements) {
    if (after == current ||
        localShape(mesh, after, shape) != localShape(mesh, current, shape))
      continue;
    for (const std::vector<std::string> &group : groups) {
      auto pairs = collectivePermutePairs(mesh, current, after, group);
      if (!pairs)
        continue;
      add(CollectiveKind::CollectivePermute, group, -1);
      moves.back().after = after;
      moves.back().pairs = *pairs;
    }
  }
  return moves;
}

/// The cheapest time from `from` to every sharding reachable in at most
/// `maxMoves` moves, by canonical spelling.
std::map<std::string, double> cheapestWithin(const Mesh &mesh,
                                             const Sharding &from,
                                             const std::vector<int64_t> &shape,
                                             const Interconnect &links,
                                             int maxMoves) {
  std::map<std::string, std::pair<double, Sharding>> best;
  Sharding start = reshardNormalForm(mesh, from);
  best[canonical(mesh, start)] = {0.0, start};
  for (int round = 0; round < maxMoves; ++round) {
    std::map<std::string, std::pair<double, Sharding>> next = best;
    for (const auto &[key, entry] : best) {
      const auto &[time, current] = entry;
      double input =
          static_cast<double>(bytesPerDevice(mesh, current, shape, 4));
      for (const ReshardStep &step :
           candidateMoves(mesh, current, shape, PartialKind::Sum)) {
        Expected<Sharding> after = applyReshardStep(mesh, current, step);
        if (!after)
          continue;
        int64_t groupSize = 1;
        for (const std::string &axis : step.axes)
          groupSize *= mesh.axisSize(axis);
        double total = time + collectiveTimeUs(step.kind, groupSize, input,
                                               links.linkFor(step.axes));
        std::string afterKey = canonical(mesh, *after);
        auto it = next.find(afterKey);
        if (it == next.end() || total < it->second.first)
          next[afterKey] = {total, reshardNormalForm(mesh, *after)};
      }
    }
    best = std::move(next);
  }
  std::map<std::string, double> times;
  for (const auto &[key, entry] : best)
    times[key] = entry.first;
  return times;
}

} // namespace

TEST_CASE("reshard plans are optimal", "[reshard]") {
  Interconnect slowX;
  slowX.axes["x"] = AxisLink{50.0, 20.0};
  struct Case {
    const char *mesh;
    std::vector<int64_t> shape;
    Interconnect links;
    /// Exhaustive search from every `sourceStride`-th source only.
    size_t sourceStride = 1;
  };
  for (const Case &c :
       {Case{"x=2,y=2", {8, 16}, {}}, Case{"x=2,y=4", {8, 16}, {}},
        Case{"x=2,y=2", {8, 8, 16}, {}}, Case{"x=2,y=4", {16, 8, 8}, {}},
        Case{"x=2,y=4", {8, 16}, slowX}, Case{"x=2,y=4", {8, 8, 16}, slowX},
        Case{"x=2,y=2,z=2", {8, 16}, slowX},
        Case{"x=2,y=2,z=2", {8, 16, 8}, slowX, 13}}) {
    Mesh m = mesh(c.mesh);
    std::vector<Sharding> all =
        allShardings(m, static_cast<int>(c.shape.size()), PartialKind::Sum);
    int checked = 0, slicingOnly = 0, compared = 0, exact = 0;
    for (size_t source = 0; source < all.size(); source += c.sourceStride) {
      const Sharding &from = all[source];
      std::map<std::string, double> optimum =
          cheapestWithin(m, from, c.shape, c.links, 4);
      for (const Sharding &to : all) {
        ReshardPlan plan = planReshard(m, from, to, c.shape, 4, c.links);
        INFO(c.mesh << " " << from.toString() << " -> " << to.toString() << "\n"
                    << describePlan(plan));
        double naive =
            naiveReshardPlan(m, from, to, c.shape, 4, c.links).timeUs();
        CHECK(plan.timeUs() <= naive + 1e-9);
        auto it = optimum.find(canonical(m, to));
        if (it != optimum.end()) {
          ++compared;
          CHECK(plan.timeUs() <= it->second + 1e-9);
          if (plan.steps.size() <= 4) {
            ++exact;
            CHECK(plan.timeUs() >= it->second - 1e-9);
          }
        }
        // Local slicing suffices when every target dimension extends the
        // source's and partial axes are only added.
        bool onlySlices =
            from.partialKind == PartialKind::None ||
            (from.partialKind == to.partialKind &&
             std::all_of(from.partialAxes.begin(), from.partialAxes.end(),
                         [&](const std::string &axis) {
                           return std::count(to.partialAxes.begin(),
                                             to.partialAxes.end(), axis) > 0;
                         }));
        for (int d = 0; d < from.rank(); ++d) {
          const std::vector<std::string> &have = from.dims[d].axes;
          const std::vector<std::string> &want = to.dims[d].axes;
          onlySlices = onlySlices && have.size() <= want.size() &&
                       std::equal(have.begin(), have.end(), want.begin());
        }
        if (onlySlices) {
          ++slicingOnly;
          CHECK(plan.timeUs() == 0);
          for (const ReshardStep &step : plan.steps)
            CHECK(step.kind == CollectiveKind::AllSlice);
        }
        ++checked;
      }
    }
    std::cout << "optimal " << c.mesh << " rank " << c.shape.size() << ": "
              << checked << " pairs, " << compared
              << " within 4 moves of the source (" << exact
              << " plans of at most 4 steps equal the optimum), " << slicingOnly
              << " slicing only\n";
  }
}

TEST_CASE("reshard planning speed", "[reshard][speed]") {
  Interconnect slowX;
  slowX.axes["x"] = AxisLink{50.0, 20.0};
  struct Case {
    const char *mesh;
    std::vector<int64_t> shape;
    Interconnect links;
    /// How many random pairs to plan.
    size_t samples;
  };
  for (const Case &c : {Case{"x=2,y=2,z=2", {8, 8, 8}, {}, 6000},
                        Case{"x=2,y=2,z=2", {8, 16, 8}, slowX, 6000},
                        Case{"x=2,y=4,z=8", {64, 64, 64}, slowX, 4000},
                        Case{"w=2,x=2,y=2,z=2", {16, 16, 16}, slowX, 2000}}) {
    Mesh m = mesh(c.mesh);
    std::vector<Sharding> all =
        allShardings(m, static_cast<int>(c.shape.size()), PartialKind::Sum);
    std::vector<std::pair<size_t, size_t>> pairs;
    std::mt19937 random(7);
    std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
    for (size_t k = 0; k < c.samples; ++k)
      pairs.emplace_back(pick(random), pick(random));
    clearReshardPlanCache();
    double total = 0, cost = 0;
    std::vector<double> times;
    for (auto [i, j] : pairs) {
      auto start = std::chrono::steady_clock::now();
      cost += planReshard(m, all[i], all[j], c.shape, 4, c.links).timeUs();
      double us = std::chrono::duration<double, std::micro>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      total += us;
      times.push_back(us);
    }
    std::sort(times.begin(), times.end());
    auto start = std::chrono::steady_clock::now();
    for (auto [i, j] : pairs)
      cost += planReshard(m, all[i], all[j], c.shape, 4, c.links).timeUs();
    double cached = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    double mean = total / pairs.size();
    std::cout << "planReshard " << c.mesh << " rank " << c.shape.size() << ": "
              << pairs.size() << " random pairs, uncached " << mean
              << " us mean, " << times[times.size() * 99 / 100]
              << " us 99th percentile, " << times.back()
              << " us slowest; cached " << cached / pairs.size() << " us\n";
    CHECK(cost > 0);
    // Loose, so that a loaded machine does not fail it: the point is to
    // catch a search that explodes.
    CHECK(mean < 5000);
  }
}
