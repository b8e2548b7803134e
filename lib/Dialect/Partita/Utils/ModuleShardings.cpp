//===- ModuleShardings.cpp - What a module says about its layout ----------===//

#include "partita/Dialect/Partita/Utils/ModuleShardings.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

using namespace partita;

bool partita::hasShardings(mlir::ModuleOp module) {
  // A sharding, or a list of them (a manual computation's in_shardings).
  auto isSharding = [](mlir::NamedAttribute attr) {
    if (auto list = llvm::dyn_cast<mlir::ArrayAttr>(attr.getValue()))
      return llvm::any_of(list, [](mlir::Attribute entry) {
        return llvm::isa<ShardingAttr>(entry);
      });
    return llvm::isa<ShardingAttr>(attr.getValue());
  };
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    if (auto function = llvm::dyn_cast<mlir::func::FuncOp>(op)) {
      for (unsigned i = 0; i < function.getNumArguments() && !found; ++i)
        found = function.getArgAttr(i, PartitaDialect::kShardingAttrName) !=
                nullptr;
      for (unsigned i = 0; i < function.getNumResults() && !found; ++i)
        found = function.getResultAttr(i, PartitaDialect::kShardingAttrName) !=
                nullptr;
    }
    found = found || llvm::any_of(op->getAttrs(), isSharding);
    return found ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return found;
}

int64_t partita::largestMeshDevices(mlir::ModuleOp module) {
  int64_t devices = 0;
  module.walk([&](MeshOp mesh) {
    devices = std::max<int64_t>(devices, mesh.getMesh().toMesh().numDevices());
  });
  return devices;
}
