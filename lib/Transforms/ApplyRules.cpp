//===- ApplyRules.cpp - Logical axis names to shardings -------------------===//
//
// The import step of logical annotations: arguments named with logical axes
// get shardings from a rules table, logical constraints on activations become
// sharding constraints or go away. Everything else stays propagation's job.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Transforms/LogicalRules.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <set>

namespace partita {
#define GEN_PASS_DEF_APPLYRULESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

std::vector<std::string> axisNames(ArrayAttr names) {
  std::vector<std::string> axes;
  for (Attribute name : names)
    axes.push_back(cast<StringAttr>(name).str());
  return axes;
}

std::vector<int64_t> shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return {tensor.getShape().begin(), tensor.getShape().end()};
}

/// What applying a rules table needs: the table, the mesh it is for (and
/// the mesh's symbol, for the shardings made), and the padding a split may
/// add.
struct RuleContext {
  MLIRContext *context;
  const LogicalRules &table;
  const Mesh &mesh;
  FlatSymbolRefAttr meshRef;
  double maxPadding;
};

/// The warnings of skipped rules. Each is said once, at its first tensor,
/// with how many more it skipped (a 16-layer GQA model repeated one warning
/// 32 times).
class SkippedRuleWarnings {
public:
  /// Records `warnings` for the tensor at `loc` that `what` names.
  void add(Location loc, const std::string &what,
           const std::vector<std::string> &warnings) {
    for (const std::string &warning : warnings) {
      auto same = llvm::find_if(
          pending, [&](const auto &entry) { return entry.first == warning; });
      if (same != pending.end())
        ++same->second.more;
      else
        pending.push_back({warning, Pending{loc, what}});
    }
  }

  /// Emits each recorded warning, in the order they were first seen.
  void emit() const {
    for (const auto &[warning, first] : pending) {
      InFlightDiagnostic diagnostic = emitWarning(first.loc);
      diagnostic << first.what << ": " << warning;
      if (first.more > 0)
        diagnostic << " (here and for " << first.more << " more "
                   << (first.more == 1 ? "tensor" : "tensors") << ")";
    }
  }

private:
  struct Pending {
    Location loc;
    std::string what;
    int64_t more = 0;
  };
  std::vector<std::pair<std::string, Pending>> pending;
};

/// Replaces the uses of `op`'s result by its input and erases it.
void dropConstraint(LogicalConstraintOp op) {
  op.getResult().replaceAllUsesWith(op.getInput());
  op.erase();
}

/// Gives each argument of `function` named with logical axes, and without
/// a sharding, the sharding the rules make of its axes.
void shardArguments(func::FuncOp function, FunctionAttrEditor &attrs,
                    const RuleContext &rules, SkippedRuleWarnings &warn) {
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto names =
        attrs.argOfType<ArrayAttr>(i, PartitaDialect::kLogicalAxesAttrName);
    if (!names || attrs.arg(i, PartitaDialect::kShardingAttrName))
      continue;
    std::string role;
    if (auto attr = attrs.argOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName))
      role = stringifyRole(attr.getValue()).str();
    std::vector<std::string> warnings;
    Sharding sharding =
        applyLogicalRules(rules.table, rules.mesh, axisNames(names),
                          shapeOf(function.getArgument(i).getType()), role,
                          rules.maxPadding, warnings);
    warn.add(function.getArgument(i).getLoc(),
             "argument " + std::to_string(i) + " of @" +
                 function.getSymName().str(),
             warnings);
    attrs.setArg(
        i, PartitaDialect::kShardingAttrName,
        ShardingAttr::fromSharding(rules.context, rules.meshRef, sharding));
  }
}

/// Gives each result of `function` that is an argument's new value, and
/// has no sharding, the argument's layout.
void shardAliasedResults(func::FuncOp function, FunctionAttrEditor &attrs) {
  for (unsigned r = 0; r < function.getNumResults(); ++r) {
    auto aliases =
        attrs.resultOfType<IntegerAttr>(r, PartitaDialect::kAliasesAttrName);
    if (!aliases || attrs.result(r, PartitaDialect::kShardingAttrName))
      continue;
    if (Attribute sharding =
            attrs.arg(aliases.getInt(), PartitaDialect::kShardingAttrName))
      attrs.setResult(r, PartitaDialect::kShardingAttrName, sharding);
  }
}

/// The axes the batch is split over (data parallelism): gradients are
/// partial sums over them.
std::set<std::string> batchAxesOf(const RuleContext &rules) {
  std::set<std::string> batchAxes;
  std::vector<std::string> ignored;
  Sharding batch = applyLogicalRules(rules.table, rules.mesh, {"batch"},
                                     {rules.mesh.numDevices()}, "input",
                                     rules.maxPadding, ignored);
  for (const auto &dim : batch.dims)
    batchAxes.insert(dim.axes.begin(), dim.axes.end());
  return batchAxes;
}

/// Replaces the logical constraint `op` by the sharding constraint (or,
/// for a gradient or optimizer state, the reshard) the rules make of its
/// axes, or drops it when that constrains nothing.
void applyToConstraint(LogicalConstraintOp op, const RuleContext &rules,
                       const std::set<std::string> &batchAxes,
                       SkippedRuleWarnings &warn) {
  std::vector<std::string> warnings;
  bool accumulator = op.getRole() && *op.getRole() == kGradAccumulatorRole;
  Sharding sharding =
      applyLogicalRules(rules.table, rules.mesh, axisNames(op.getAxes()),
                        shapeOf(op.getInput().getType()),
                        accumulator    ? std::string("grad")
                        : op.getRole() ? op.getRole()->str()
                                       : "activation",
                        rules.maxPadding, warnings);
  // A micro-batch's gradient is moved into its buffer's layout before
  // it is accumulated only when that layout splits it over a batch
  // axis (ZeRO-2, FSDP: a reduce-scatter per micro-batch keeps the
  // accumulator split); otherwise the accumulator stays partial and is
  // reduced once after the loop (docs/Training.md).
  if (accumulator) {
    bool splitOverBatch = false;
    for (const auto &dim : sharding.dims)
      for (const std::string &axis : dim.axes)
        splitOverBatch |= batchAxes.count(axis) != 0;
    if (!splitOverBatch)
      return dropConstraint(op);
  }
  warn.add(op.getLoc(), "logical constraint", warnings);
  // An activation layout nothing maps is no constraint; a layout named
  // for an argument role (a gradient, a weight slice) is kept even when
  // whole.
  if (sharding.isReplicated() && !op.getRole())
    return dropConstraint(op);
  OpBuilder builder(op);
  auto attr =
      ShardingAttr::fromSharding(rules.context, rules.meshRef, sharding);
  // A gradient is moved into its buffer's (or the optimizer state's)
  // layout where it is complete, without pulling that layout into the
  // ops that compute it (a reshard, not a constraint): they keep the
  // batch split and produce partial sums, which the move reduces.
  Value moved =
      op.getRole() && (*op.getRole() == "grad" || accumulator ||
                       *op.getRole() == "opt_state")
          ? builder.create<ReshardOp>(op.getLoc(), op.getInput(), attr)
                .getResult()
          : builder
                .create<ShardingConstraintOp>(op.getLoc(), op.getInput(), attr)
                .getResult();
  op.getResult().replaceAllUsesWith(moved);
  op.erase();
}

struct ApplyRulesPass : public partita::impl::ApplyRulesPassBase<ApplyRulesPass> {
  using ApplyRulesPassBase::ApplyRulesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(maxPadding >= 0 && maxPadding <= 1)) {
      // An option, not a place in the input: no location.
      mlir::emitError(UnknownLoc::get(module.getContext()))
          << "max-padding must be a fraction in [0, 1], got " << maxPadding;
      return signalPassFailure();
    }
    SmallVector<LogicalConstraintOp> constraints;
    module.walk([&](LogicalConstraintOp op) { constraints.push_back(op); });
    if (rules.empty()) {
      for (LogicalConstraintOp op : constraints)
        dropConstraint(op);
      return;
    }
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    if (meshes.size() != 1) {
      module.emitError() << "logical axis rules need a module with exactly "
                            "one partita.mesh; this one has "
                         << meshes.size();
      return signalPassFailure();
    }
    MeshOp meshOp = meshes.front();
    Mesh mesh = meshOp.getMesh().toMesh();
    Expected<LogicalRules> table = loadLogicalRules(rules, mesh);
    if (!table) {
      module.emitError() << table.status().message();
      return signalPassFailure();
    }
    RuleContext context{&getContext(), *table, mesh,
                        FlatSymbolRefAttr::get(meshOp.getSymNameAttr()),
                        maxPadding};
    SkippedRuleWarnings warn;
    for (auto function : module.getOps<func::FuncOp>()) {
      FunctionAttrEditor attrs(function);
      shardArguments(function, attrs, context, warn);
      // A result that is an argument's new value takes its layout.
      shardAliasedResults(function, attrs);
    }
    std::set<std::string> batchAxes = batchAxesOf(context);
    for (LogicalConstraintOp op : constraints)
      applyToConstraint(op, context, batchAxes, warn);
    warn.emit();
  }
};

} // namespace
