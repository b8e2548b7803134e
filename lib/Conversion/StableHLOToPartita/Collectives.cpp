//===- Collectives.cpp - StableHLO collectives into partita ---------------===//
//
// Conversions of the collectives of a manual computation (all_reduce,
// all_gather, reduce_scatter, all_to_all, collective_permute): JAX names
// device groups, partita names mesh axes, so the axes whose groups are the
// replica groups (or hold the permutation's pairs) are searched for.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "partita/Sharding/Mesh.h"

#include <algorithm>
#include <map>
#include <set>

namespace partita {
namespace stablehlo_import {

namespace {

/// The rows of a replica_groups or source_target_pairs attribute.
std::vector<std::vector<int64_t>> integerRows(Attribute attr) {
  std::vector<std::vector<int64_t>> rows;
  auto elements = dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!elements || elements.getType().getRank() != 2)
    return rows;
  int64_t width = elements.getType().getDimSize(1);
  int64_t index = 0;
  for (const APInt &value : elements) {
    if (index++ % width == 0)
      rows.emplace_back();
    rows.back().push_back(value.getSExtValue());
  }
  return rows;
}

} // namespace

std::optional<Mesh> Importer::manualMeshOf(Operation *op) {
  // Looked up in the module: symbol lookups stop at unregistered ops with
  // a region (an all_reduce with its body), which might be symbol tables.
  auto meshOp =
      manualMesh ? module.lookupSymbol<MeshOp>(manualMesh.getAttr()) : MeshOp();
  if (!meshOp) {
    fail(op) << "a collective outside a manual computation (shard_map)";
    return std::nullopt;
  }
  return meshOp.getMesh().toMesh();
}

std::optional<SmallVector<std::string>>
Importer::axesOfGroups(Operation *op,
                       const std::vector<std::vector<int64_t>> &groups) {
  std::optional<Mesh> manual = manualMeshOf(op);
  if (!manual)
    return std::nullopt;
  const Mesh &mesh = *manual;
  // Every ordered set of axes, fewest first.
  std::vector<std::vector<std::string>> candidates;
  int rank = mesh.rank();
  for (int mask = 1; mask < (1 << rank); ++mask) {
    std::vector<std::string> names;
    for (int a = 0; a < rank; ++a)
      if (mask & (1 << a))
        names.push_back(mesh.axes()[a].name);
    std::sort(names.begin(), names.end());
    do
      candidates.push_back(names);
    while (std::next_permutation(names.begin(), names.end()));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto &a, const auto &b) {
                     return a.size() < b.size();
                   });
  for (const std::vector<std::string> &axes : candidates) {
    bool matches = !groups.empty();
    for (const std::vector<int64_t> &group : groups) {
      if (group.empty() || group.front() < 0 ||
          group.front() >= mesh.numDevices()) {
        matches = false;
        break;
      }
      Expected<CollectiveGroup> resolved =
          resolveGroup(mesh, group.front(), axes);
      matches &= resolved && resolved->members == group;
      if (!matches)
        break;
    }
    if (matches)
      return SmallVector<std::string>(axes.begin(), axes.end());
  }
  std::string text;
  for (const std::vector<int64_t> &group : groups) {
    text += text.empty() ? "[" : ", [";
    for (size_t i = 0; i < group.size(); ++i)
      text += (i ? ", " : "") + std::to_string(group[i]);
    text += "]";
  }
  fail(op) << "replica groups " << text << " are not the groups of any "
           << "mesh axes of " << mesh.toString();
  return std::nullopt;
}

std::optional<SmallVector<std::string>>
Importer::axesOfMeshAxesGroups(Operation *op, StringRef text) {
  std::optional<Mesh> manual = manualMeshOf(op);
  if (!manual)
    return std::nullopt;
  const Mesh &mesh = *manual;
  if (text.contains("sub_axis")) {
    fail(op) << "replica groups over parts of mesh axes (" << text
             << ") are not supported";
    return std::nullopt;
  }
  SmallVector<std::string> axes;
  StringRef rest = text;
  while (true) {
    size_t at = rest.find("name = \"");
    if (at == StringRef::npos)
      break;
    rest = rest.drop_front(at + 8);
    StringRef name = rest.take_until([](char c) { return c == '"'; });
    rest = rest.drop_front(name.size());
    if (mesh.axisIndex(name.str()) < 0) {
      fail(op) << "replica groups name axis '" << name
               << "', which mesh " << mesh.toString() << " does not have";
      return std::nullopt;
    }
    axes.push_back(name.str());
  }
  if (axes.empty()) {
    fail(op) << "replica groups over no mesh axes: " << text;
    return std::nullopt;
  }
  return axes;
}

FailureOr<SmallVector<Value>> Importer::collective(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return reject(op, name + " over several values at once is not supported");
  Location loc = op->getLoc();
  Type type = op->getResult(0).getType();
  Value operand = op->getOperand(0);
  if (name == "stablehlo.collective_permute") {
    std::vector<std::vector<int64_t>> pairs =
        integerRows(property(op, "source_target_pairs"));
    // The axes whose groups contain every pair, with the same positions in
    // every group.
    auto meshOp = manualMesh
                      ? module.lookupSymbol<MeshOp>(manualMesh.getAttr())
                      : MeshOp();
    if (!meshOp)
      return reject(op, "a collective outside a manual computation "
                        "(shard_map)");
    Mesh mesh = meshOp.getMesh().toMesh();
    std::vector<std::vector<int64_t>> all;
    for (int64_t d = 0; d < mesh.numDevices(); ++d)
      all.push_back({d});
    std::optional<SmallVector<std::string>> found;
    SmallVector<int64_t> positions;
    for (int size = 1; size <= mesh.rank() && !found; ++size) {
      std::vector<std::string> names;
      for (const MeshAxis &axis : mesh.axes())
        names.push_back(axis.name);
      std::sort(names.begin(), names.end());
      // Ordered choices of `size` axes.
      std::vector<std::vector<std::string>> choices;
      do {
        std::vector<std::string> choice(names.begin(), names.begin() + size);
        if (std::find(choices.begin(), choices.end(), choice) ==
            choices.end())
          choices.push_back(choice);
      } while (std::next_permutation(names.begin(), names.end()));
      for (const std::vector<std::string> &axes : choices) {
        std::map<std::vector<int64_t>, std::set<std::pair<int64_t, int64_t>>>
            byGroup;
        bool ok = !pairs.empty();
        for (const std::vector<int64_t> &pair : pairs) {
          Expected<CollectiveGroup> source = resolveGroup(mesh, pair[0], axes);
          Expected<CollectiveGroup> target = resolveGroup(mesh, pair[1], axes);
          if (!source || !target || source->members != target->members) {
            ok = false;
            break;
          }
          byGroup[source->members].insert(
              {source->position, target->position});
        }
        if (!ok)
          continue;
        // Every group must make the same moves (groups with no pair at all
        // are allowed only if no group has one).
        std::set<std::vector<int64_t>> groups;
        for (int64_t d = 0; d < mesh.numDevices(); ++d)
          groups.insert(resolveGroup(mesh, d, axes)->members);
        const auto &first = byGroup.begin()->second;
        ok = byGroup.size() == groups.size();
        for (const auto &entry : byGroup)
          ok &= entry.second == first;
        if (!ok)
          continue;
        found = SmallVector<std::string>(axes.begin(), axes.end());
        for (const auto &[s, t] : first) {
          positions.push_back(s);
          positions.push_back(t);
        }
        break;
      }
    }
    if (!found)
      return reject(op, "source_target_pairs that are not the same "
                        "permutation within the groups of some mesh axes");
    SmallVector<StringRef> refs(found->begin(), found->end());
    return SmallVector<Value>{CollectivePermuteOp::create(
        builder, loc, type, operand, manualMesh,
        builder.getStrArrayAttr(refs),
        builder.getDenseI64ArrayAttr(positions))};
  }

  Attribute groupsAttr = property(op, "replica_groups");
  std::optional<SmallVector<std::string>> axes;
  std::string groupsText = groupsAttr ? printed(groupsAttr) : "";
  if (StringRef(groupsText).starts_with(
          "#stablehlo.replica_group_mesh_axes")) {
    // JAX 0.12 names the mesh axes: <mesh = @m, axes = [#stablehlo.axis_ref
    // <name = "data">, ...]>.
    axes = axesOfMeshAxesGroups(op, groupsText);
  } else {
    axes = axesOfGroups(op, integerRows(groupsAttr));
  }
  if (!axes)
    return failure();
  SmallVector<StringRef> refs(axes->begin(), axes->end());
  ArrayAttr axesAttr = builder.getStrArrayAttr(refs);
  auto dimension = [&](StringRef key) -> std::optional<int64_t> {
    if (auto attr = dyn_cast_or_null<IntegerAttr>(property(op, key)))
      return attr.getInt();
    return std::nullopt;
  };
  if (name == "stablehlo.all_gather") {
    std::optional<int64_t> dim = dimension("all_gather_dim");
    if (!dim)
      return reject(op, "stablehlo.all_gather without all_gather_dim");
    return SmallVector<Value>{
        AllGatherOp::create(builder, loc, type, operand, manualMesh, axesAttr,
                            builder.getI64IntegerAttr(*dim))};
  }
  if (name == "stablehlo.all_to_all") {
    std::optional<int64_t> split = dimension("split_dimension");
    std::optional<int64_t> concat = dimension("concat_dimension");
    if (!split || !concat)
      return reject(op, "stablehlo.all_to_all without split and concat "
                        "dimensions");
    return SmallVector<Value>{AllToAllOp::create(
        builder, loc, type, operand, manualMesh, axesAttr,
        builder.getI64IntegerAttr(*split), builder.getI64IntegerAttr(*concat))};
  }
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  if (!kind)
    return reject(op, name + " whose body is not one add, maximum, minimum, "
                             "and or or");
  auto kindAttr = ReductionKindAttr::get(context, *kind);
  if (name == "stablehlo.all_reduce")
    return SmallVector<Value>{AllReduceOp::create(
        builder, loc, type, kindAttr, operand, manualMesh, axesAttr)};
  std::optional<int64_t> dim = dimension("scatter_dimension");
  if (!dim)
    return reject(op, "stablehlo.reduce_scatter without scatter_dimension");
  return SmallVector<Value>{
      ReduceScatterOp::create(builder, loc, type, kindAttr, operand,
                              manualMesh, axesAttr,
                              builder.getI64IntegerAttr(*dim))};
}

} // namespace stablehlo_import
} // namespace partita
