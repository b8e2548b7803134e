//===- ValueNames.cpp - How values and ops are named to users -------------===//

#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;

std::string partita::describeLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return isa<UnknownLoc>(name.getChildLoc())
               ? name.getName().str()
               : name.getName().str() + " (" +
                     describeLocation(name.getChildLoc()) + ")";
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::Twine(file.getFilename().getValue()) + ":" +
            llvm::Twine(file.getLine()) + ":" + llvm::Twine(file.getColumn()))
        .str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (!isa<UnknownLoc>(inner))
        return describeLocation(inner);
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(callSite.getCallee());
  return "unknown location";
}

std::string partita::describeOp(Operation *op) {
  return (op->getName().getStringRef() + " at " +
          describeLocation(op->getLoc()))
      .str();
}

std::string partita::shortName(Value value) {
  Location loc = value.getLoc();
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    auto name = dyn_cast<NameLoc>(op->getLoc());
    if (!name)
      return "";
    std::string text = name.getName().str();
    if (op->getNumResults() > 1)
      text += "#" + std::to_string(result.getResultNumber());
    return text;
  }
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

std::string partita::describeValue(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *parent = arg.getOwner()->getParentOp();
    std::string base = "argument " + std::to_string(arg.getArgNumber());
    if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
      base += " (" + name.getName().str() + ")";
    if (auto function = dyn_cast<func::FuncOp>(parent))
      return base + " of @" + function.getSymName().str();
    return base + " of " + describeOp(parent);
  }
  auto result = cast<OpResult>(value);
  Operation *op = result.getOwner();
  std::string text = isa<NameLoc>(op->getLoc())
                         ? cast<NameLoc>(op->getLoc()).getName().str()
                         : describeOp(op);
  if (op->getNumResults() > 1)
    text += " #" + std::to_string(result.getResultNumber());
  return text;
}
