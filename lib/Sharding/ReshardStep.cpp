//===- ReshardStep.cpp - What one reshard step does to a sharding ---------===//
//
// The sharding-level meaning of the collectives a reshard plan uses (the
// data-level meaning is in PartitaCollectiveOps.td): the normal form plans
// work on, applyReshardStep, the pairs of a collective_permute that
// rearranges blocks, and the naive baseline plan.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <map>

using namespace partita;

namespace {

using AxisList = std::vector<std::string>;

bool contains(const AxisList &list, const std::string &axis) {
  return std::find(list.begin(), list.end(), axis) != list.end();
}

/// True when `list` ends with `suffix`.
bool endsWith(const AxisList &list, const AxisList &suffix) {
  return suffix.size() <= list.size() &&
         std::equal(suffix.begin(), suffix.end(),
                    list.end() - static_cast<std::ptrdiff_t>(suffix.size()));
}

/// True when `axis` is named by a dimension or the partial list.
bool isUsed(const Sharding &sharding, const std::string &axis) {
  if (contains(sharding.partialAxes, axis))
    return true;
  for (const DimSharding &dim : sharding.dims)
    if (contains(dim.axes, axis))
      return true;
  return false;
}

std::string describeAxes(const AxisList &axes) {
  std::string text = "[";
  for (const std::string &axis : axes)
    text += (text.size() > 1 ? ", \"" : "\"") + axis + "\"";
  return text + "]";
}

Status stepError(const ReshardStep &step, const std::string &why) {
  return Status::error(std::string(collectiveName(step.kind)) + " over " +
                       describeAxes(step.axes) + ": " + why);
}

/// Checks that the step's axes exist, are distinct and non-empty.
Status checkStepAxes(const Mesh &mesh, const ReshardStep &step) {
  if (step.axes.empty())
    return stepError(step, "a step names at least one axis");
  for (size_t i = 0; i < step.axes.size(); ++i) {
    if (mesh.axisIndex(step.axes[i]) < 0)
      return stepError(step, "unknown mesh axis '" + step.axes[i] + "'");
    for (size_t j = 0; j < i; ++j)
      if (step.axes[j] == step.axes[i])
        return stepError(step, "axis '" + step.axes[i] + "' appears twice");
  }
  return Status::success();
}

/// Shard index along a dimension with axis list `axes` of the group member
/// whose coordinates on the group axes `group` are `coords`.
int64_t groupShardIndex(const Mesh &mesh, const AxisList &axes,
                        const AxisList &group,
                        const std::vector<int64_t> &coords) {
  int64_t index = 0;
  for (const std::string &axis : axes) {
    auto it = std::find(group.begin(), group.end(), axis);
    int64_t coord = it == group.end() ? 0 : coords[it - group.begin()];
    index = index * mesh.axisSize(axis) + coord;
  }
  return index;
}

/// Coordinates on `group` of group position `position` (mixed radix, the
/// first axis major).
std::vector<int64_t> groupCoordinates(const Mesh &mesh, const AxisList &group,
                                      int64_t position) {
  std::vector<int64_t> coords(group.size());
  for (size_t i = group.size(); i-- > 0;) {
    int64_t size = mesh.axisSize(group[i]);
    coords[i] = position % size;
    position /= size;
  }
  return coords;
}

} // namespace

Sharding partita::reshardNormalForm(const Mesh &mesh,
                                    const Sharding &sharding) {
  Sharding result;
  result.dims.resize(sharding.dims.size());
  for (size_t d = 0; d < sharding.dims.size(); ++d)
    for (const std::string &axis : sharding.dims[d].axes)
      if (mesh.axisSize(axis) != 1)
        result.dims[d].axes.push_back(axis);
  for (const std::string &axis : sharding.partialAxes)
    if (mesh.axisSize(axis) != 1)
      result.partialAxes.push_back(axis);
  result.partialKind =
      result.partialAxes.empty() ? PartialKind::None : sharding.partialKind;
  return result;
}

bool partita::sameReshardLayout(const Mesh &mesh, const Sharding &a,
                                const Sharding &b) {
  Sharding first = reshardNormalForm(mesh, a);
  Sharding second = reshardNormalForm(mesh, b);
  std::sort(first.partialAxes.begin(), first.partialAxes.end());
  std::sort(second.partialAxes.begin(), second.partialAxes.end());
  return first == second;
}

Expected<std::vector<std::pair<int64_t, int64_t>>>
partita::collectivePermutePairs(const Mesh &mesh, const Sharding &from,
                                const Sharding &to, const AxisList &axes) {
  Sharding source = reshardNormalForm(mesh, from);
  Sharding target = reshardNormalForm(mesh, to);
  if (source.rank() != target.rank())
    return Status::error("collective_permute between shardings of different "
                         "rank");
  AxisList sourcePartial = source.partialAxes,
           targetPartial = target.partialAxes;
  std::sort(sourcePartial.begin(), sourcePartial.end());
  std::sort(targetPartial.begin(), targetPartial.end());
  if (source.partialKind != target.partialKind ||
      sourcePartial != targetPartial)
    return Status::error("collective_permute cannot change partial axes");
  AxisList sourceAxes = source.dimAxes(), targetAxes = target.dimAxes();
  std::sort(sourceAxes.begin(), sourceAxes.end());
  std::sort(targetAxes.begin(), targetAxes.end());
  if (sourceAxes != targetAxes)
    return Status::error("collective_permute needs the same dimension axes "
                         "before and after");
  std::vector<int> changed;
  for (int d = 0; d < source.rank(); ++d) {
    if (source.dims[d].axes == target.dims[d].axes)
      continue;
    if (numShards(mesh, source.dims[d]) != numShards(mesh, target.dims[d]))
      return Status::error("collective_permute changes the shard count of "
                           "dimension " +
                           std::to_string(d));
    for (const std::string &axis : source.dims[d].axes)
      if (!contains(axes, axis))
        return Status::error("collective_permute moves axis '" + axis +
                             "' that is not in its group " +
                             describeAxes(axes));
    changed.push_back(d);
  }
  int64_t groupSize = 1;
  for (const std::string &axis : axes)
    groupSize *= mesh.axisSize(axis);
  // Each position's blocks along the changed dimensions as one number.
  auto blockKey = [&](const Sharding &sharding, int64_t position) {
    std::vector<int64_t> coords = groupCoordinates(mesh, axes, position);
    int64_t key = 0;
    for (int d : changed)
      key = key * numShards(mesh, sharding.dims[d]) +
            groupShardIndex(mesh, sharding.dims[d].axes, axes, coords);
    return key;
  };
  std::map<int64_t, int64_t> sourceOfBlock;
  for (int64_t p = 0; p < groupSize; ++p)
    sourceOfBlock[blockKey(source, p)] = p;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t q = 0; q < groupSize; ++q)
    pairs.emplace_back(sourceOfBlock.at(blockKey(target, q)), q);
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

Expected<Sharding> partita::applyReshardStep(const Mesh &mesh,
                                             const Sharding &sharding,
                                             const ReshardStep &step) {
  if (Status status = validateSharding(mesh, sharding); !status.ok())
    return status;
  if (Status status = checkStepAxes(mesh, step); !status.ok())
    return status;
  Sharding result = reshardNormalForm(mesh, sharding);
  int rank = result.rank();
  auto dimInRange = [&](int dim) { return dim >= 0 && dim < rank; };
  auto removePartial = [&]() -> Status {
    for (const std::string &axis : step.axes) {
      if (!contains(result.partialAxes, axis))
        return stepError(step, "axis '" + axis + "' is not a partial axis of " +
                                   result.toString());
      result.partialAxes.erase(std::find(result.partialAxes.begin(),
                                         result.partialAxes.end(), axis));
    }
    if (result.partialAxes.empty())
      result.partialKind = PartialKind::None;
    return Status::success();
  };
  auto appendUnused = [&](int dim) -> Status {
    for (const std::string &axis : step.axes) {
      if (isUsed(result, axis))
        return stepError(step, "axis '" + axis + "' is already used by " +
                                   result.toString());
      result.dims[dim].axes.push_back(axis);
    }
    return Status::success();
  };
  auto takeMinorAxes = [&](int dim) -> Status {
    AxisList &axes = result.dims[dim].axes;
    if (!endsWith(axes, step.axes))
      return stepError(step, "dimension " + std::to_string(dim) + " of " +
                                 result.toString() +
                                 " does not end with these axes");
    axes.resize(axes.size() - step.axes.size());
    return Status::success();
  };

  switch (step.kind) {
  case CollectiveKind::AllGather:
    if (!dimInRange(step.dim))
      return stepError(step, "dimension out of range");
    if (Status status = takeMinorAxes(step.dim); !status.ok())
      return status;
    return result;
  case CollectiveKind::AllSlice: {
    if (step.dim >= 0) {
      if (!dimInRange(step.dim))
        return stepError(step, "dimension out of range");
      if (Status status = appendUnused(step.dim); !status.ok())
        return status;
      return result;
    }
    // dim -1: make the value partial over the axes.
    PartialKind kind = result.partialKind != PartialKind::None
                           ? result.partialKind
                           : step.after.partialKind;
    if (kind == PartialKind::None)
      return stepError(step, "making a value partial needs the partial kind "
                             "in the step's `after`");
    if (step.after.partialKind != PartialKind::None &&
        step.after.partialKind != kind)
      return stepError(step, "a value partial over " +
                                 std::string(partialKindName(kind)) +
                                 " cannot become partial over " +
                                 partialKindName(step.after.partialKind));
    for (const std::string &axis : step.axes) {
      if (isUsed(result, axis))
        return stepError(step, "axis '" + axis + "' is already used by " +
                                   result.toString());
      result.partialAxes.push_back(axis);
    }
    result.partialKind = kind;
    return result;
  }
  case CollectiveKind::AllReduce:
    if (Status status = removePartial(); !status.ok())
      return status;
    return result;
  case CollectiveKind::ReduceScatter:
    if (!dimInRange(step.dim))
      return stepError(step, "dimension out of range");
    if (Status status = removePartial(); !status.ok())
      return status;
    for (const std::string &axis : step.axes)
      result.dims[step.dim].axes.push_back(axis);
    return result;
  case CollectiveKind::AllToAll:
    if (!dimInRange(step.dim) || !dimInRange(step.concatDim) ||
        step.dim == step.concatDim)
      return stepError(step, "needs two different dimensions in range");
    if (Status status = takeMinorAxes(step.concatDim); !status.ok())
      return status;
    for (const std::string &axis : step.axes)
      result.dims[step.dim].axes.push_back(axis);
    return result;
  case CollectiveKind::CollectivePermute: {
    Sharding target = reshardNormalForm(mesh, step.after);
    if (Status status = validateSharding(mesh, target); !status.ok())
      return status;
    auto pairs = collectivePermutePairs(mesh, result, target, step.axes);
    if (!pairs)
      return stepError(step, pairs.status().message());
    std::vector<std::pair<int64_t, int64_t>> given = step.pairs;
    std::sort(given.begin(), given.end());
    if (given != *pairs)
      return stepError(step, "its pairs do not move every block to where " +
                                 target.toString() + " needs it");
    return target;
  }
  }
  return stepError(step, "unknown collective");
}

namespace {

/// Appends a step from `current` to `after` to `plan`, costed on the local
/// size of `current`; groups of one device are left out.
void appendStep(ReshardPlan &plan, const Mesh &mesh, const Sharding &current,
                Sharding after, CollectiveKind kind, AxisList axes, int dim,
                const std::vector<int64_t> &shape, int64_t elementBytes,
                const Interconnect &interconnect) {
  int64_t groupSize = 1;
  for (const std::string &axis : axes)
    groupSize *= mesh.axisSize(axis);
  if (groupSize <= 1)
    return;
  ReshardStep step;
  step.kind = kind;
  step.dim = dim;
  step.after = std::move(after);
  step.localInputBytes =
      static_cast<double>(bytesPerDevice(mesh, current, shape, elementBytes));
  step.bytesPerDevice =
      collectiveBytesPerDevice(kind, groupSize, step.localInputBytes);
  step.timeUs = collectiveTimeUs(kind, groupSize, step.localInputBytes,
                                 interconnect.linkOn(mesh, axes));
  step.axes = std::move(axes);
  plan.steps.push_back(std::move(step));
}

} // namespace

ReshardPlan partita::naiveReshardPlan(const Mesh &mesh, const Sharding &from,
                                      const Sharding &to,
                                      const std::vector<int64_t> &globalShape,
                                      int64_t elementBytes,
                                      const Interconnect &interconnect) {
  ReshardPlan plan;
  Sharding current = reshardNormalForm(mesh, from);
  Sharding target = reshardNormalForm(mesh, to);
  auto advance = [&](Sharding after, CollectiveKind kind, AxisList axes,
                     int dim) {
    appendStep(plan, mesh, current, after, kind, std::move(axes), dim,
               globalShape, elementBytes, interconnect);
    current = std::move(after);
  };
  if (current.partialKind != PartialKind::None) {
    Sharding after = current;
    after.partialAxes.clear();
    after.partialKind = PartialKind::None;
    advance(after, CollectiveKind::AllReduce, current.partialAxes, -1);
  }
  int rank = std::min(current.rank(), target.rank());
  for (int d = 0; d < rank; ++d) {
    if (current.dims[d].axes == target.dims[d].axes ||
        current.dims[d].axes.empty())
      continue;
    Sharding after = current;
    after.dims[d].axes.clear();
    advance(after, CollectiveKind::AllGather, current.dims[d].axes, d);
  }
  for (int d = 0; d < rank; ++d) {
    if (current.dims[d].axes == target.dims[d].axes)
      continue;
    Sharding after = current;
    after.dims[d].axes = target.dims[d].axes;
    advance(after, CollectiveKind::AllSlice, target.dims[d].axes, d);
  }
  if (target.partialKind != PartialKind::None) {
    Sharding after = current;
    after.partialAxes = target.partialAxes;
    after.partialKind = target.partialKind;
    advance(after, CollectiveKind::AllSlice, target.partialAxes, -1);
  }
  if (!plan.steps.empty()) {
    Sharding last = to;
    for (DimSharding &dim : last.dims)
      dim.open = false;
    last.priority.reset();
    plan.steps.back().after = std::move(last);
  }
  return plan;
}
