//===- ReshardTest.cpp - Reshard plans run on real data -------------------===//
//
// planReshard (and naiveReshardPlan) against a simulation: for every pair of
// closed shardings (partial values included) of rank-2 and rank-3 tensors on
// 2x2, 2x4 and 2x2x2 meshes, each device starts with its block of a global
// array of unique values (for a partial source, integer addends or
// candidates that combine to it), every step of the plan runs through a
// reference collective written here on per-device buffers (groups and
// positions as PartitaCollectiveOps.td defines them), and every device must
// end with its block under the target (for a partial target, the
// combination over its partial group). Uneven shapes compare the unpadded
// part of each block. Each step must also agree with applyReshardStep and
// carry the cost of its input.
//
// test/unit/Sharding/ReshardOptimalityTest.cpp checks the costs against an exhaustive
// search.
//
//===----------------------------------------------------------------------===//

#include "ReshardTestSupport.h"

#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Layout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>

using namespace partita;
using namespace partita::reshard_test;

namespace {

//===-- Per-device buffers and the reference collectives -----------------===//

/// A dense row-major local buffer.
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<int64_t> data;
};

int64_t volume(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

/// Calls `visit(index, linear)` for every index of `shape`, row-major.
template <typename Visit>
void forEachIndex(const std::vector<int64_t> &shape, Visit visit) {
  int64_t count = volume(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    visit(index, linear);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Element at `index` of `buffer`, zero outside it.
int64_t at(const Buffer &buffer, const std::vector<int64_t> &index) {
  int64_t linear = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= buffer.shape[d])
      return 0;
    linear = linear * buffer.shape[d] + index[d];
  }
  return buffer.data[linear];
}

/// The window of `buffer` starting at `offset` with `shape` (zeros where it
/// leaves the buffer: padding).
Buffer window(const Buffer &buffer, const std::vector<int64_t> &offset,
              const std::vector<int64_t> &shape) {
  Buffer result{shape, std::vector<int64_t>(volume(shape))};
  std::vector<int64_t> source(shape.size());
  forEachIndex(shape, [&](const std::vector<int64_t> &index, int64_t linear) {
    for (size_t d = 0; d < index.size(); ++d)
      source[d] = index[d] + offset[d];
    result.data[linear] = at(buffer, source);
  });
  return result;
}

/// Block `position` of `groupSize` along `dim`, the dimension first padded to
/// a multiple of the group size (what the partitioner does before a split).
Buffer splitBlock(const Buffer &buffer, int dim, int64_t groupSize,
                  int64_t position) {
  std::vector<int64_t> offset(buffer.shape.size(), 0), shape = buffer.shape;
  shape[dim] = (buffer.shape[dim] + groupSize - 1) / groupSize;
  offset[dim] = position * shape[dim];
  return window(buffer, offset, shape);
}

Buffer concatenate(const std::vector<const Buffer *> &parts, int dim) {
  std::vector<int64_t> shape = parts[0]->shape;
  shape[dim] = 0;
  for (const Buffer *part : parts)
    shape[dim] += part->shape[dim];
  Buffer result{shape, std::vector<int64_t>(volume(shape))};
  std::vector<int64_t> source;
  forEachIndex(shape, [&](const std::vector<int64_t> &index, int64_t linear) {
    source = index;
    size_t part = 0;
    while (source[dim] >= parts[part]->shape[dim])
      source[dim] -= parts[part++]->shape[dim];
    result.data[linear] = at(*parts[part], source);
  });
  return result;
}

int64_t combine(PartialKind kind, int64_t a, int64_t b) {
  switch (kind) {
  case PartialKind::Max:
    return std::max(a, b);
  case PartialKind::Min:
    return std::min(a, b);
  default:
    return a + b;
  }
}

/// The devices of `device`'s group over `axes`, in group order, and the
/// device's position among them.
std::vector<int64_t> groupOf(const Mesh &mesh,
                             const std::vector<std::string> &axes,
                             int64_t device, int64_t &position) {
  std::vector<int64_t> coords = mesh.coordinates(device);
  int64_t size = 1;
  position = 0;
  for (const std::string &axis : axes) {
    size *= mesh.axisSize(axis);
    position = position * mesh.axisSize(axis) + coords[mesh.axisIndex(axis)];
  }
  std::vector<int64_t> members;
  for (int64_t p = 0; p < size; ++p) {
    int64_t rest = p;
    for (size_t i = axes.size(); i-- > 0;) {
      int64_t axisSize = mesh.axisSize(axes[i]);
      coords[mesh.axisIndex(axes[i])] = rest % axisSize;
      rest /= axisSize;
    }
    members.push_back(mesh.deviceAt(coords));
  }
  return members;
}

/// `kind`-combination of the buffers of the group.
Buffer reduceGroup(const std::vector<Buffer> &buffers,
                   const std::vector<int64_t> &members, PartialKind kind) {
  Buffer result = buffers[members[0]];
  for (size_t i = 1; i < members.size(); ++i)
    for (size_t e = 0; e < result.data.size(); ++e)
      result.data[e] =
          combine(kind, result.data[e], buffers[members[i]].data[e]);
  return result;
}

/// One collective on every device, as the dialect defines it.
std::vector<Buffer> runCollective(const Mesh &mesh,
                                  const std::vector<Buffer> &in,
                                  const ReshardStep &step, PartialKind kind) {
  std::vector<Buffer> out(in.size());
  for (int64_t device = 0; device < static_cast<int64_t>(in.size()); ++device) {
    int64_t position = 0;
    std::vector<int64_t> members = groupOf(mesh, step.axes, device, position);
    int64_t size = static_cast<int64_t>(members.size());
    switch (step.kind) {
    case CollectiveKind::AllGather: {
      std::vector<const Buffer *> parts;
      for (int64_t member : members)
        parts.push_back(&in[member]);
      out[device] = concatenate(parts, step.dim);
      break;
    }
    case CollectiveKind::AllSlice:
      if (step.dim >= 0) {
        out[device] = splitBlock(in[device], step.dim, size, position);
        break;
      }
      out[device] = in[device];
      if (step.after.partialKind == PartialKind::Sum && position != 0)
        std::fill(out[device].data.begin(), out[device].data.end(), 0);
      break;
    case CollectiveKind::AllReduce:
      out[device] = reduceGroup(in, members, kind);
      break;
    case CollectiveKind::ReduceScatter:
      out[device] =
          splitBlock(reduceGroup(in, members, kind), step.dim, size, position);
      break;
    case CollectiveKind::AllToAll: {
      std::vector<Buffer> blocks;
      for (int64_t member : members)
        blocks.push_back(splitBlock(in[member], step.dim, size, position));
      std::vector<const Buffer *> parts;
      for (const Buffer &block : blocks)
        parts.push_back(&block);
      out[device] = concatenate(parts, step.concatDim);
      break;
    }
    case CollectiveKind::CollectivePermute:
      out[device] = in[device];
      std::fill(out[device].data.begin(), out[device].data.end(), 0);
      for (auto [source, target] : step.pairs)
        if (target == position)
          out[device] = in[members[source]];
      break;
    }
  }
  return out;
}

//===-- Running a plan
//-----------------------------------------------------===//

int64_t globalValue(int64_t linear) { return 1000 * (linear + 1); }

/// A small deterministic integer in [-50, 50] for element `linear` on
/// partial position `position`.
int64_t noise(int64_t linear, int64_t position) {
  uint64_t h = static_cast<uint64_t>(linear) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(position) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return static_cast<int64_t>(h % 101) - 50;
}

/// What each device holds under `sharding`: its block of the global array,
/// padded with zeros. A partial value is split over its partial group: for
/// sum, integer addends; for max (min), the value at group position 0 and
/// something smaller (larger) elsewhere.
std::vector<Buffer> initialBuffers(const Mesh &mesh, const Sharding &sharding,
                                   const std::vector<int64_t> &shape) {
  std::vector<Buffer> buffers;
  std::vector<int64_t> local = localShape(mesh, sharding, shape);
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<IndexRange> block = deviceBlock(mesh, sharding, shape, device);
    int64_t position = 0;
    std::vector<int64_t> members =
        groupOf(mesh, sharding.partialAxes, device, position);
    Buffer buffer{local, std::vector<int64_t>(volume(local))};
    forEachIndex(local, [&](const std::vector<int64_t> &index, int64_t e) {
      int64_t linear = 0;
      for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] >= block[d].size())
          return;
        linear = linear * shape[d] + block[d].begin + index[d];
      }
      int64_t value = globalValue(linear);
      switch (sharding.partialKind) {
      case PartialKind::Max:
        value -= position == 0 ? 0 : 51 + noise(linear, position);
        break;
      case PartialKind::Min:
        value += position == 0 ? 0 : 51 + noise(linear, position);
        break;
      default:
        if (position != 0)
          value = noise(linear, position);
        else
          for (size_t p = 1; p < members.size(); ++p)
            value -= noise(linear, static_cast<int64_t>(p));
      }
      buffer.data[e] = value;
    });
    buffers.push_back(std::move(buffer));
  }
  return buffers;
}

/// Runs `plan` on real data and checks its bookkeeping; returns a failure
/// description or "".
std::string simulate(const Mesh &mesh, const Sharding &from, const Sharding &to,
                     const std::vector<int64_t> &shape, const ReshardPlan &plan,
                     const Interconnect &links) {
  bool even =
      isEvenlySharded(mesh, from, shape) && isEvenlySharded(mesh, to, shape);
  std::vector<Buffer> buffers = initialBuffers(mesh, from, shape);
  Sharding current = reshardNormalForm(mesh, from);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const ReshardStep &step = plan.steps[i];
    std::string where =
        "step " + std::to_string(i) + " (" + collectiveName(step.kind) + "): ";
    Expected<Sharding> next = applyReshardStep(mesh, current, step);
    if (!next)
      return where + next.status().message();
    if (canonical(mesh, *next) != canonical(mesh, step.after))
      return where + "after is " + step.after.toString() + ", expected " +
             next->toString();
    int64_t groupSize = 1;
    for (const std::string &axis : step.axes)
      groupSize *= mesh.axisSize(axis);
    double input = static_cast<double>(bytesPerDevice(mesh, current, shape, 4));
    double time =
        collectiveTimeUs(step.kind, groupSize, input, links.linkFor(step.axes));
    if (groupSize <= 1 || step.localInputBytes != input ||
        std::abs(step.timeUs - time) > 1e-9 ||
        step.bytesPerDevice !=
            collectiveBytesPerDevice(step.kind, groupSize, input) *
                (step.kind != CollectiveKind::AllSlice))
      return where + "wrong group size or cost";
    buffers = runCollective(mesh, buffers, step, current.partialKind);
    std::vector<int64_t> local = localShape(mesh, *next, shape);
    for (Buffer &buffer : buffers) {
      if (buffer.shape == local)
        continue;
      if (even)
        return where + "a device's local shape is wrong";
      // Uneven: the partitioner trims (or pads) to the new local shape.
      buffer = window(buffer, std::vector<int64_t>(shape.size(), 0), local);
    }
    current = *next;
  }
  if (canonical(mesh, current) != canonical(mesh, to))
    return "the plan ends at " + current.toString();
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    int64_t position = 0;
    std::vector<int64_t> members =
        groupOf(mesh, current.partialAxes, device, position);
    Buffer value = reduceGroup(buffers, members, current.partialKind);
    std::vector<IndexRange> block = deviceBlock(mesh, to, shape, device);
    std::vector<int64_t> global(shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      global[d] = block[d].size();
    bool ok = true;
    forEachIndex(global, [&](const std::vector<int64_t> &index, int64_t) {
      int64_t linear = 0;
      for (size_t d = 0; d < index.size(); ++d)
        linear = linear * shape[d] + block[d].begin + index[d];
      ok = ok && at(value, index) == globalValue(linear);
    });
    if (!ok)
      return "device " + std::to_string(device) + " holds a wrong block";
  }
  return "";
}

/// Plans and simulates every pair, and simulates the naive plan too;
/// returns how many plans are strictly cheaper than the naive one.
int checkAllPairs(const Mesh &mesh, const std::vector<int64_t> &shape,
                  const std::vector<Sharding> &sources,
                  const std::vector<Sharding> &targets,
                  size_t targetStride = 1) {
  Interconnect links;
  int cheaper = 0, checked = 0;
  for (const Sharding &from : sources) {
    for (size_t t = 0; t < targets.size(); t += targetStride) {
      const Sharding &to = targets[t];
      ReshardPlan plan = planReshard(mesh, from, to, shape, 4, links);
      ReshardPlan naive = naiveReshardPlan(mesh, from, to, shape, 4, links);
      for (const ReshardPlan *run : {&plan, &naive}) {
        std::string failure = simulate(mesh, from, to, shape, *run, links);
        if (!failure.empty()) {
          INFO(mesh.toString()
               << " " << from.toString() << " -> " << to.toString() << "\n"
               << describePlan(*run));
          FAIL_CHECK(failure);
        }
      }
      if (plan.timeUs() > naive.timeUs() + 1e-9) {
        INFO(from.toString() << " -> " << to.toString());
        FAIL_CHECK("plan " << plan.timeUs() << " us, naive " << naive.timeUs()
                           << " us");
      }
      cheaper += plan.timeUs() < naive.timeUs() - 1e-9;
      ++checked;
    }
  }
  CHECK(checked ==
        static_cast<int>(sources.size() *
                         ((targets.size() + targetStride - 1) / targetStride)));
  return cheaper;
}

} // namespace

TEST_CASE("reshard plans move the right blocks", "[reshard]") {
  struct Case {
    const char *mesh;
    std::vector<int64_t> shape;
  };
  for (const Case &c :
       {Case{"x=2,y=2", {8, 8}}, Case{"x=2,y=4", {8, 8}},
        Case{"x=2,y=2", {8, 8, 8}}, Case{"x=2,y=4", {8, 8, 8}},
        Case{"x=2,y=2,z=2", {8, 8}}, Case{"x=2,y=2,z=2", {8, 8, 8}}}) {
    Mesh m = mesh(c.mesh);
    int rank = static_cast<int>(c.shape.size());
    std::vector<Sharding> all = allShardings(m, rank, PartialKind::Sum);
    int cheaper = checkAllPairs(m, c.shape, all, all);
    std::cout << "reshard " << c.mesh << " rank " << rank << ": "
              << all.size() * all.size() << " pairs simulated, " << cheaper
              << " strictly cheaper than the naive plan\n";
  }
}

TEST_CASE("reshard plans on uneven shapes", "[reshard]") {
  struct Case {
    const char *mesh;
    std::vector<int64_t> shape;
    size_t targetStride;
  };
  for (const Case &c :
       {Case{"x=2,y=4", {6, 10}, 1}, Case{"x=2,y=4", {3, 5}, 1},
        Case{"x=2,y=2,z=2", {6, 5, 3}, 3}, Case{"x=3,y=2", {4, 9}, 1}}) {
    Mesh m = mesh(c.mesh);
    std::vector<Sharding> all =
        allShardings(m, static_cast<int>(c.shape.size()), PartialKind::Sum);
    checkAllPairs(m, c.shape, all, all, c.targetStride);
  }
}

TEST_CASE("reshard plans with max and min partial values", "[reshard]") {
  Mesh m = mesh("x=2,y=2,z=2");
  std::vector<Sharding> whole = allShardings(m, 2, PartialKind::None);
  std::vector<Sharding> sums = allShardings(m, 2, PartialKind::Sum);
  std::vector<Sharding> maxes = allShardings(m, 2, PartialKind::Max);
  std::vector<Sharding> mins = allShardings(m, 2, PartialKind::Min);
  // A kind the source does not have: reduce first, then make partial.
  checkAllPairs(m, {8, 8}, maxes, sums);
  checkAllPairs(m, {8, 8}, mins, maxes);
  checkAllPairs(m, {8, 8}, whole, mins);
  Sharding from = *parsePartitionSpec("P(\"x\", None)", 2);
  from.partialKind = PartialKind::Max;
  from.partialAxes = {"y"};
  Sharding to = *parsePartitionSpec("P(\"x\", None)", 2);
  to.partialKind = PartialKind::Sum;
  to.partialAxes = {"y"};
  ReshardPlan plan = planReshard(m, from, to, {8, 8}, 4, {});
  REQUIRE(plan.steps.size() == 2);
  CHECK(plan.steps[0].kind == CollectiveKind::AllReduce);
  CHECK(plan.steps[1].kind == CollectiveKind::AllSlice);
  CHECK(plan.steps[1].dim == -1);
  CHECK(plan.steps[1].after == to);
}

TEST_CASE("reshard plans honour device ids and skip size-1 axes", "[reshard]") {
  Mesh shuffled = *Mesh::create({{"x", 2}, {"y", 4}}, {5, 2, 7, 0, 3, 6, 1, 4});
  std::vector<Sharding> all = allShardings(shuffled, 2, PartialKind::Sum);
  checkAllPairs(shuffled, {8, 8}, all, all);

  Mesh withOne = mesh("x=2,one=1,y=2");
  all = allShardings(withOne, 2, PartialKind::Sum);
  checkAllPairs(withOne, {4, 8}, all, all);
  for (const Sharding &from : all)
    for (const Sharding &to : all) {
      ReshardPlan plan = planReshard(withOne, from, to, {4, 8}, 4, {});
      if (sameReshardLayout(withOne, from, to))
        CHECK(plan.steps.empty());
      for (const ReshardStep &step : plan.steps)
        CHECK(std::count(step.axes.begin(), step.axes.end(), "one") == 0);
      if (!plan.steps.empty())
        CHECK(plan.steps.back().after == to);
    }
}

TEST_CASE("reshard plans are deterministic and memoized", "[reshard]") {
  Mesh m = mesh("x=2,y=2,z=2");
  std::vector<Sharding> all = allShardings(m, 3, PartialKind::Sum);
  Interconnect links;
  links.axes["y"] = AxisLink{100.0, 10.0};
  auto spell = [](const ReshardPlan &plan) {
    std::string text = describePlan(plan);
    for (const ReshardStep &step : plan.steps)
      for (auto [source, target] : step.pairs)
        text += std::to_string(source) + ">" + std::to_string(target) + " ";
    return text;
  };
  std::vector<std::string> first;
  for (size_t i = 0; i < all.size(); i += 7)
    for (size_t j = 0; j < all.size(); j += 5)
      first.push_back(
          spell(planReshard(m, all[i], all[j], {8, 16, 8}, 2, links)));
  clearReshardPlanCache();
  size_t k = 0;
  for (size_t i = 0; i < all.size(); i += 7)
    for (size_t j = 0; j < all.size(); j += 5)
      CHECK(spell(planReshard(m, all[i], all[j], {8, 16, 8}, 2, links)) ==
            first[k++]);
  // Open dimensions and priorities do not change the plan.
  Sharding from = all[40], to = all[99];
  ReshardPlan closed = planReshard(m, from, to, {8, 16, 8}, 2, links);
  for (DimSharding &dim : from.dims)
    dim.open = true;
  from.priority = 2;
  CHECK(spell(planReshard(m, from, to, {8, 16, 8}, 2, links)) == spell(closed));
}

TEST_CASE("applyReshardStep rejects steps that do not apply", "[reshard]") {
  Mesh m = mesh("x=2,y=2,z=2");
  Sharding sharding = *parsePartitionSpec("P((\"x\", \"y\"), None)", 2);
  auto step = [](CollectiveKind kind, std::vector<std::string> axes, int dim,
                 int concatDim = -1) {
    ReshardStep result;
    result.kind = kind;
    result.axes = std::move(axes);
    result.dim = dim;
    result.concatDim = concatDim;
    return result;
  };
  auto message = [&](const ReshardStep &s) {
    Expected<Sharding> result = applyReshardStep(m, sharding, s);
    return result ? std::string("ok: ") + result->toString()
                  : result.status().message();
  };
  CHECK(message(step(CollectiveKind::AllGather, {"y"}, 0)) ==
        "ok: [{\"x\"}, {}]");
  CHECK(message(step(CollectiveKind::AllGather, {"x"}, 0)) ==
        "all_gather over [\"x\"]: dimension 0 of [{\"x\", \"y\"}, {}] "
        "does not end with these axes");
  CHECK(message(step(CollectiveKind::AllToAll, {"y"}, 1, 0)) ==
        "ok: [{\"x\"}, {\"y\"}]");
  CHECK(message(step(CollectiveKind::AllSlice, {"y"}, 1)) ==
        "all_slice over [\"y\"]: axis 'y' is already used by "
        "[{\"x\", \"y\"}, {}]");
  CHECK(message(step(CollectiveKind::AllReduce, {"z"}, -1)) ==
        "all_reduce over [\"z\"]: axis 'z' is not a partial axis of "
        "[{\"x\", \"y\"}, {}]");
  CHECK(message(step(CollectiveKind::AllGather, {"w"}, 0)) ==
        "all_gather over [\"w\"]: unknown mesh axis 'w'");
  CHECK(message(step(CollectiveKind::AllSlice, {"z"}, -1)) ==
        "all_slice over [\"z\"]: making a value partial needs the partial "
        "kind in the step's `after`");
  ReshardStep permute = step(CollectiveKind::CollectivePermute, {"x", "y"}, -1);
  permute.after = *parsePartitionSpec("P((\"y\", \"x\"), None)", 2);
  CHECK(message(permute).find("do not move every block") != std::string::npos);
  permute.pairs = {{0, 0}, {1, 2}, {2, 1}, {3, 3}};
  CHECK(message(permute) == "ok: [{\"y\", \"x\"}, {}]");
  permute.after = *parsePartitionSpec("P(\"y\", \"x\")", 2);
  CHECK(message(permute).find("shard count") != std::string::npos);
}

TEST_CASE("naive reshard plans", "[reshard]") {
  Mesh m = mesh("x=2,y=4");
  Sharding from = *parsePartitionSpec("P(\"x\", \"y\")", 2);
  from.dims[1].axes.clear();
  from.partialKind = PartialKind::Sum;
  from.partialAxes = {"y"};
  Sharding to = *parsePartitionSpec("P(\"y\", \"x\")", 2);
  ReshardPlan naive = naiveReshardPlan(m, from, to, {8, 8}, 4, {});
  REQUIRE(naive.steps.size() == 4);
  CHECK(naive.steps[0].kind == CollectiveKind::AllReduce);
  CHECK(naive.steps[1].kind == CollectiveKind::AllGather);
  CHECK(naive.steps[2].kind == CollectiveKind::AllSlice);
  CHECK(naive.steps[3].kind == CollectiveKind::AllSlice);
  CHECK(naive.steps[3].after == to);
  // all_reduce 2 x 3/4 x 128 B, all_gather 1 x 128 B, two latencies (the
  // slices are free).
  CHECK(naive.timeUs() == Approx((192.0 + 128.0) / 450e3 + 10.0));
  ReshardPlan plan = planReshard(m, from, to, {8, 8}, 4, {});
  std::cout << "P(x) partial sum{y} -> P(y, x) on x=2,y=4:\n"
            << describePlan(plan) << "naive:\n"
            << describePlan(naive);
  CHECK(plan.timeUs() < naive.timeUs());
}
