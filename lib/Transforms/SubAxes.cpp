//===- SubAxes.cpp - Split mesh axes into sub-axes and join them back ----===//
//
// Shardings name whole mesh axes. A reshape that splits a dimension into
// factors smaller than an axis (grouped-query attention's 2 KV heads over a
// "model" axis of 4) could then keep nothing of the axis on that factor and
// would gather the whole dimension. Declaring the axis as two sub-axes, a
// major part of 2 and a minor part of 2, lets propagation put the major
// part on the KV heads and gather over the minor part only, as GSPMD's
// partial tilings and Shardy's sub-axes do. Propagation and partitioning
// need nothing new: a sub-axis is an axis of the refined mesh, and the
// refined mesh lists the same devices in the same order.
// docs/Propagation.md, "Sub-axes".
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/ShardingRule.h"
#include "partita/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <numeric>
#include <set>

namespace partita {
#define GEN_PASS_DEF_SPLITAXESPASS
#define GEN_PASS_DEF_JOINAXESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

/// On a mesh partita-split-axes refined: the axes it split (the dialect's
/// verifier, lib/Dialect/Partita/IR/PartitaDialect.cpp, checks its form).
constexpr llvm::StringLiteral kSplitAxesAttr = "partita.split_axes";

using AxisList = std::vector<std::string>;
/// For each split axis, its parts, major to minor.
using Parts = std::map<std::string, AxisList>;

/// `axes` with every axis in `parts` replaced by its parts.
AxisList splitList(const AxisList &axes, const Parts &parts) {
  AxisList result;
  for (const std::string &axis : axes) {
    auto it = parts.find(axis);
    if (it == parts.end())
      result.push_back(axis);
    else
      result.insert(result.end(), it->second.begin(), it->second.end());
  }
  return result;
}

/// `axes` with every complete, in-order run of an axis's parts replaced by
/// the axis; false when a part appears without the rest of its run.
bool joinList(const AxisList &axes, const Parts &parts, AxisList &joined) {
  joined.clear();
  for (size_t i = 0; i < axes.size();) {
    std::string_view parent = parentAxis(axes[i]);
    auto it = parent == axes[i] ? parts.end() : parts.find(std::string(parent));
    if (it == parts.end()) {
      joined.push_back(axes[i++]);
      continue;
    }
    const AxisList &run = it->second;
    if (i + run.size() > axes.size() ||
        !std::equal(run.begin(), run.end(), axes.begin() + i))
      return false;
    joined.push_back(it->first);
    i += run.size();
  }
  return true;
}

/// Rewrites every axis list of the module that belongs to mesh `mesh`:
/// shardings (wherever they are attached) and collectives' axes. `rewrite`
/// returns false when a list cannot be rewritten; then nothing is changed
/// and the walk answers false.
bool rewriteAxisLists(
    ModuleOp module, FlatSymbolRefAttr mesh,
    llvm::function_ref<bool(const AxisList &, AxisList &)> rewrite) {
  MLIRContext *context = module.getContext();
  bool ok = true;
  // Shardings, nested anywhere (function argument and result attributes,
  // op attributes, arrays of them).
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](ShardingAttr attr) -> std::optional<Attribute> {
    if (attr.getMesh() != mesh)
      return std::nullopt;
    Sharding sharding = attr.toSharding();
    AxisList out;
    for (DimSharding &dim : sharding.dims) {
      ok &= rewrite(dim.axes, out);
      dim.axes = out;
    }
    ok &= rewrite(sharding.partialAxes, out);
    sharding.partialAxes = out;
    return ShardingAttr::fromSharding(context, mesh, sharding);
  });
  auto axesOf = [&](Operation *op) -> ArrayAttr {
    auto meshAttr = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
    if (!meshAttr || meshAttr != mesh ||
        op->getDialect() != context->getLoadedDialect<PartitaDialect>())
      return {};
    return op->getAttrOfType<ArrayAttr>("axes");
  };
  // A dry run first: the replacer builds new attributes, so a failure is
  // found before anything is written.
  SmallVector<std::pair<Operation *, ArrayAttr>> collectives;
  module.walk([&](Operation *op) {
    ArrayAttr axes = axesOf(op);
    if (!axes)
      return;
    AxisList list, out;
    for (Attribute axis : axes)
      if (auto name = dyn_cast<StringAttr>(axis))
        list.push_back(name.str());
    ok &= rewrite(list, out);
    SmallVector<Attribute> names;
    for (const std::string &name : out)
      names.push_back(StringAttr::get(context, name));
    collectives.emplace_back(op, ArrayAttr::get(context, names));
  });
  module.walk([&](Operation *op) {
    for (NamedAttribute named : op->getAttrs())
      (void)replacer.replace(named.getValue());
  });
  if (!ok)
    return false;
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/false);
  for (auto [op, axes] : collectives)
    op->setAttr("axes", axes);
  return true;
}

/// The divisors g of axis size n that reshapes of the module need: a
/// compound dimension that n divides, whose major factor n does not divide
/// but shares g > 1 with.
std::map<std::string, std::set<int64_t>> wantedParts(ModuleOp module,
                                                     const Mesh &mesh) {
  std::map<std::string, std::set<int64_t>> wanted;
  module.walk([&](ReshapeOp reshape) {
    auto from = dyn_cast<RankedTensorType>(reshape.getOperand().getType());
    auto to = dyn_cast<RankedTensorType>(reshape.getType());
    if (!from || !to || !from.hasStaticShape() || !to.hasStaticShape())
      return;
    std::vector<int64_t> fromShape(from.getShape()), toShape(to.getShape());
    OpShardingRule rule = reshapeRule(fromShape, toShape);
    auto scan = [&](const TensorFactors &tensor,
                    const std::vector<int64_t> &shape) {
      for (size_t d = 0; d < tensor.size() && d < shape.size(); ++d) {
        if (tensor[d].size() < 2)
          continue;
        int64_t major = rule.factors[tensor[d].front()].size;
        for (const MeshAxis &axis : mesh.axes()) {
          int64_t n = axis.size;
          int64_t g = std::gcd(major, n);
          if (n > 1 && shape[d] % n == 0 && major % n != 0 && g > 1)
            wanted[axis.name].insert(g);
        }
      }
    };
    for (const TensorFactors &operand : rule.operands)
      scan(operand, fromShape);
    for (const TensorFactors &result : rule.results)
      scan(result, toShape);
  });
  return wanted;
}

/// Sizes of the parts of an axis of `size` that has to split at every
/// divisor in `cuts`: a chain when each cut divides the next, else the
/// prime factors.
std::vector<int64_t> partSizes(int64_t size, const std::set<int64_t> &cuts) {
  std::vector<int64_t> parts;
  int64_t previous = 1;
  bool chain = true;
  for (int64_t cut : cuts) {
    chain &= cut % previous == 0 && size % cut == 0;
    if (!chain)
      break;
    parts.push_back(cut / previous);
    previous = cut;
  }
  if (chain) {
    parts.push_back(size / previous);
    return parts;
  }
  parts.clear();
  int64_t rest = size;
  for (int64_t p = 2; p * p <= rest; ++p)
    while (rest % p == 0) {
      parts.push_back(p);
      rest /= p;
    }
  if (rest > 1)
    parts.push_back(rest);
  return parts;
}

MeshAttr meshAttrOf(MLIRContext *context, const std::vector<MeshAxis> &axes,
                    ArrayRef<int64_t> deviceIds) {
  SmallVector<MeshAxisAttr> attrs;
  for (const MeshAxis &axis : axes)
    attrs.push_back(MeshAxisAttr::get(
        context, StringAttr::get(context, axis.name), axis.size));
  return MeshAttr::get(context, attrs, deviceIds);
}

struct SplitAxesPass : public partita::impl::SplitAxesPassBase<SplitAxesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    // Axes named by hand-written collectives or manual computations keep
    // their meaning as written.
    std::set<std::string> fixed;
    bool anyManual = false;
    module.walk([&](Operation *op) {
      anyManual |= isa<ManualComputationOp>(op);
      if (op->getDialect() != context->getLoadedDialect<PartitaDialect>())
        return;
      for (StringRef name : {"axes", "manual_axes"})
        if (auto axes = op->getAttrOfType<ArrayAttr>(name);
            axes && op->hasAttr("mesh") == (name == "axes"))
          for (Attribute axis : axes)
            if (auto text = dyn_cast<StringAttr>(axis))
              fixed.insert(text.str());
    });
    if (anyManual)
      return;
    for (MeshOp meshOp : llvm::to_vector(module.getOps<MeshOp>())) {
      Mesh mesh = meshOp.getMesh().toMesh();
      std::map<std::string, std::set<int64_t>> wanted =
          wantedParts(module, mesh);
      Parts parts;
      std::vector<MeshAxis> axes;
      for (const MeshAxis &axis : mesh.axes()) {
        auto it = wanted.find(axis.name);
        if (it == wanted.end() || fixed.count(axis.name)) {
          axes.push_back(axis);
          continue;
        }
        int64_t before = 1;
        for (int64_t size : partSizes(axis.size, it->second)) {
          std::string name = subAxisName(axis.name, before, size);
          if (mesh.axisIndex(name) >= 0)
            break; // A name taken by the user: leave the axis whole.
          parts[axis.name].push_back(name);
          axes.push_back({name, size});
          before *= size;
        }
        if (before != axis.size) {
          for (size_t i = 0; i < parts[axis.name].size(); ++i)
            axes.pop_back();
          parts.erase(axis.name);
          axes.push_back(axis);
        }
      }
      if (parts.empty())
        continue;
      FlatSymbolRefAttr name = FlatSymbolRefAttr::get(meshOp.getSymNameAttr());
      rewriteAxisLists(module, name, [&](const AxisList &in, AxisList &out) {
        out = splitList(in, parts);
        return true;
      });
      meshOp.setMeshAttr(
          meshAttrOf(context, axes, meshOp.getMesh().getDeviceIds()));
      // Which axes this pass split: the only ones partita-join-axes joins
      // (an axis a user named "x:(1)2" is not a part of anything).
      SmallVector<Attribute> split;
      for (const auto &[parent, names] : parts)
        split.push_back(StringAttr::get(context, parent));
      meshOp->setAttr(kSplitAxesAttr, ArrayAttr::get(context, split));
    }
  }
};

struct JoinAxesPass : public partita::impl::JoinAxesPassBase<JoinAxesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    for (MeshOp meshOp : llvm::to_vector(module.getOps<MeshOp>())) {
      auto split = meshOp->getAttrOfType<ArrayAttr>(kSplitAxesAttr);
      if (!split)
        continue;
      std::set<std::string> splitParents;
      for (Attribute parent : split)
        if (auto name = dyn_cast<StringAttr>(parent))
          splitParents.insert(name.str());
      Mesh mesh = meshOp.getMesh().toMesh();
      Parts parts;
      std::vector<MeshAxis> axes;
      bool contiguous = true;
      for (const MeshAxis &axis : mesh.axes()) {
        std::string parent(parentAxis(axis.name));
        if (parent == axis.name || mesh.axisIndex(parent) >= 0 ||
            !splitParents.count(parent)) {
          axes.push_back(axis);
          continue;
        }
        if (!axes.empty() && axes.back().name == parent &&
            parts.count(parent)) {
          axes.back().size *= axis.size;
        } else {
          // The parts of one axis are neighbours, major first.
          contiguous &= !parts.count(parent);
          axes.push_back({parent, axis.size});
        }
        parts[parent].push_back(axis.name);
      }
      if (parts.empty() || !contiguous)
        continue;
      FlatSymbolRefAttr name = FlatSymbolRefAttr::get(meshOp.getSymNameAttr());
      if (!rewriteAxisLists(module, name,
                            [&](const AxisList &in, AxisList &out) {
                              return joinList(in, parts, out);
                            }))
        continue; // A part is used alone: the sub-axes stay.
      meshOp.setMeshAttr(
          meshAttrOf(context, axes, meshOp.getMesh().getDeviceIds()));
      meshOp->removeAttr(kSplitAxesAttr);
    }
  }
};

} // namespace
