//===- ReplicateAroundManual.cpp - Replicate outside manual regions -------===//
//
// The `--check` reference of a shard_map program (docs/Runtime.md,
// "Differential testing"): manual regions are per-device code, so the
// program cannot run on one device; replicated around them and partitioned,
// it computes what the user's program must compute.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace partita {
#define GEN_PASS_DEF_REPLICATEAROUNDMANUALPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

/// The mesh of the first manual computation that names one, or null.
FlatSymbolRefAttr manualMesh(ModuleOp module) {
  FlatSymbolRefAttr mesh;
  module.walk([&](ManualComputationOp manual) {
    if (!mesh && !manual.getInShardings().empty())
      mesh = cast<ShardingAttr>(manual.getInShardings()[0]).getMesh();
    if (!mesh && !manual.getOutShardings().empty())
      mesh = cast<ShardingAttr>(manual.getOutShardings()[0]).getMesh();
  });
  return mesh;
}

/// Replicated on `mesh` for a ranked tensor, null for any other type.
Attribute replicatedOn(FlatSymbolRefAttr mesh, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return nullptr;
  return ShardingAttr::fromSharding(
      mesh.getContext(), mesh,
      Sharding::replicated(static_cast<int>(tensor.getRank())));
}

void replicateAround(func::FuncOp function, FlatSymbolRefAttr mesh) {
  {
    FunctionAttrEditor attrs(function);
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (Attribute attr =
              replicatedOn(mesh, function.getArgument(i).getType()))
        attrs.setArg(i, PartitaDialect::kShardingAttrName, attr);
    for (unsigned i = 0; i < function.getNumResults(); ++i)
      if (Attribute attr = replicatedOn(mesh, function.getResultTypes()[i]))
        attrs.setResult(i, PartitaDialect::kShardingAttrName, attr);
  }
  SmallVector<ShardingConstraintOp> constraints;
  function.walk([&](Operation *op) {
    if (op->getParentOfType<ManualComputationOp>())
      return;
    op->removeAttr(PartitaDialect::kShardingAttrName);
    if (auto constraint = dyn_cast<ShardingConstraintOp>(op))
      constraints.push_back(constraint);
  });
  for (ShardingConstraintOp constraint : constraints) {
    constraint.getResult().replaceAllUsesWith(constraint.getInput());
    constraint.erase();
  }
}

struct ReplicateAroundManualPass
    : public partita::impl::ReplicateAroundManualPassBase<
          ReplicateAroundManualPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FlatSymbolRefAttr mesh = manualMesh(module);
    if (!mesh)
      return;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        replicateAround(function, mesh);
  }
};

} // namespace
