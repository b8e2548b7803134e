//===- Liveness.cpp - When each buffer of a function is alive -------------===//

#include "partita/Analysis/Liveness.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace partita;

int64_t partita::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = tensor.getElementTypeBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

BufferLiveness partita::analyzeLiveness(func::FuncOp function) {
  BufferLiveness liveness;
  if (function.isExternal())
    return liveness;
  // Program points: ops in pre-order; an op's region ends at `last[op]`.
  llvm::DenseMap<Operation *, int64_t> point, last;
  function.getBody().walk<WalkOrder::PreOrder>(
      [&](Operation *op) { point[op] = liveness.points++; });
  function.getBody().walk<WalkOrder::PostOrder>([&](Operation *op) {
    int64_t end = point[op];
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block)
          end = std::max(end, last[&inner]);
    last[op] = end;
  });
  int64_t finalPoint = std::max<int64_t>(liveness.points - 1, 0);

  auto endOf = [&](Value value, Block *home) {
    int64_t end = -1;
    for (OpOperand &use : value.getUses()) {
      // The ancestor of the user in the value's own block: a use inside a
      // nested loop body keeps the value alive until that loop ends.
      Operation *user =
          home ? home->findAncestorOpInBlock(*use.getOwner()) : nullptr;
      if (!user)
        user = use.getOwner();
      end = std::max(end, last.lookup(user));
    }
    return end;
  };

  for (BlockArgument arg : function.getArguments())
    if (int64_t bytes = tensorBytes(arg.getType()))
      liveness.buffers.push_back({arg, 0, finalPoint, bytes});
  function.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (int64_t bytes = tensorBytes(arg.getType()))
            liveness.buffers.push_back({arg, point[op],
                                        std::max(point[op], endOf(arg, &block)),
                                        bytes});
    for (Value result : op->getResults())
      if (int64_t bytes = tensorBytes(result.getType()))
        liveness.buffers.push_back(
            {result, point[op],
             std::max(point[op], endOf(result, op->getBlock())), bytes});
  });

  // Sweep the points: +bytes at begin, -bytes after end.
  std::vector<int64_t> delta(liveness.points + 1, 0);
  for (const LiveBuffer &buffer : liveness.buffers) {
    delta[buffer.begin] += buffer.bytes;
    delta[buffer.end + 1] -= buffer.bytes;
  }
  int64_t live = 0;
  for (int64_t p = 0; p < liveness.points; ++p) {
    live += delta[p];
    if (live > liveness.peakBytes) {
      liveness.peakBytes = live;
      liveness.peakPoint = p;
    }
  }
  return liveness;
}
