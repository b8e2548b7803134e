//===- RemakeValues.cpp - Cheap values made again near their users --------===//

#include "partita/Dialect/Partita/Utils/RemakeValues.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace {

/// The elements of `op`'s one f32 result, or -1 when it has none.
int64_t f32Elements(Operation *op) {
  if (op->getNumResults() != 1)
    return -1;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return -1;
  return type.getNumElements();
}

/// The elements of `op`'s result when a fused chain makes it on the fly
/// (lib/Codegen/Fusion.cpp's candidates): an f32 splat constant, or an f32
/// broadcast of a leading/trailing block (operand dimensions onto
/// consecutive result dimensions of the same sizes); else -1.
int64_t remadeElements(Operation *op) {
  int64_t count = f32Elements(op);
  if (count <= 1)
    return -1;
  if (auto constant = dyn_cast<partita::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat() ? count : -1;
  }
  auto broadcast = dyn_cast<partita::BroadcastOp>(op);
  if (!broadcast)
    return -1;
  auto result = cast<RankedTensorType>(broadcast.getType());
  auto operand = dyn_cast<RankedTensorType>(broadcast.getOperand().getType());
  ArrayRef<int64_t> dims = broadcast.getDims();
  if (!operand || !operand.hasStaticShape() ||
      dims.size() != static_cast<size_t>(operand.getRank()))
    return -1;
  for (size_t d = 0; d < dims.size(); ++d)
    if ((d > 0 && dims[d] != dims[d - 1] + 1) ||
        result.getDimSize(dims[d]) != operand.getDimSize(d))
      return -1;
  return count;
}

} // namespace

bool partita::isFusedChainOp(llvm::StringRef name) {
  using namespace partita;
  static const llvm::StringSet<> names = [] {
    llvm::StringSet<> set;
    for (llvm::StringRef op :
         {NegOp::getOperationName(), AbsOp::getOperationName(),
          SignOp::getOperationName(), ExpOp::getOperationName(),
          LogOp::getOperationName(), Log1pOp::getOperationName(),
          TanhOp::getOperationName(), LogisticOp::getOperationName(),
          SqrtOp::getOperationName(), RsqrtOp::getOperationName(),
          ErfOp::getOperationName(), SinOp::getOperationName(),
          CosOp::getOperationName(), FloorOp::getOperationName(),
          AddOp::getOperationName(), SubOp::getOperationName(),
          MulOp::getOperationName(), DivOp::getOperationName(),
          RemOp::getOperationName(), MaxOp::getOperationName(),
          MinOp::getOperationName(), PowOp::getOperationName()})
      set.insert(op);
    return set;
  }();
  return names.contains(name);
}

int64_t partita::remakeNearFusedUsers(func::FuncOp function) {
  SmallVector<Operation *> candidates;
  function.walk([&](Operation *op) {
    if (remadeElements(op) > 0)
      candidates.push_back(op);
  });
  int64_t copies = 0;
  for (Operation *op : candidates) {
    int64_t count = remadeElements(op);
    Value value = op->getResult(0);
    SmallVector<Operation *> users;
    for (Operation *user : value.getUsers())
      if (user->getBlock() == op->getBlock() && isFusedChainOp(user->getName().getStringRef()) &&
          f32Elements(user) == count && !llvm::is_contained(users, user))
        users.push_back(user);
    // One user right after it: already where a chain takes it.
    if (users.empty() ||
        (value.hasOneUse() && users.front() == op->getNextNode()))
      continue;
    for (Operation *user : users) {
      OpBuilder builder(user);
      Operation *copy = builder.clone(*op);
      user->replaceUsesOfWith(value, copy->getResult(0));
      ++copies;
    }
    if (value.use_empty())
      op->erase();
  }
  return copies;
}
