//===- Liveness.cpp - When each buffer of a function is alive -------------===//

#include "partita/Analysis/Liveness.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
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

bool partita::mayWriteInPlace(Operation *op) {
  if (!isa<PartitaDialect>(op->getDialect()) || op->getNumResults() != 1)
    return false;
  // Not collectives: the in-process communicator's peers read a device's
  // input while it writes its output. Not cumsum, sharding ops or barriers
  // either: only ops whose every result element depends on the same index
  // of the operands.
  if (isa<AllGatherOp, AllSliceOp, AllReduceOp, ReduceScatterOp, AllToAllOp,
          CollectivePermuteOp, CumsumOp, ShardingConstraintOp,
          LogicalConstraintOp, ReshardOp>(op))
    return false;
  // A reshape's result is its operand's bytes as they are: sharing them,
  // the runtime copies nothing.
  // A dynamic_update_slice writes its update into its operand's bytes (a
  // KV cache's one new position per decode step: no copy of the cache).
  return op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
         isa<SelectOp, ReshapeOp, DynamicUpdateSliceOp>(op);
}

bool partita::isAsyncCollective(Operation *op) {
  if (!isa<AllGatherOp, AllReduceOp, ReduceScatterOp, AllToAllOp,
           CollectivePermuteOp>(op))
    return false;
  auto module = op->getParentOfType<ModuleOp>();
  return module && module->hasAttr(PartitaDialect::kAsyncCollectivesAttrName);
}

Operation *partita::collectiveWaitPoint(Operation *collective) {
  Block *block = collective->getBlock();
  Operation *first = nullptr;
  for (Operation *user : collective->getResult(0).getUsers())
    if (Operation *ancestor = block->findAncestorOpInBlock(*user))
      if (!first || ancestor->isBeforeInBlock(first))
        first = ancestor;
  // A reduce_scatter holds its operand, the group's times its result, until
  // its wait: no later than the next reduce_scatter's start.
  if (isa<ReduceScatterOp>(collective))
    for (Operation *next = collective->getNextNode();
         next && (!first || next->isBeforeInBlock(first));
         next = next->getNextNode())
      if (isa<ReduceScatterOp>(next))
        return next;
  return first ? first : &block->back();
}

namespace {

/// In-place elementwise results: an operand of the result's type that dies
/// at the op hands its storage over one point early (of a
/// dynamic_update_slice, which reads its update after, only the operand).
void linkInPlaceResults(func::FuncOp function,
                        llvm::DenseMap<Operation *, int64_t> &point,
                        const llvm::DenseMap<Value, size_t> &bufferOf,
                        BufferLiveness &liveness) {
  function.getBody().walk([&](Operation *op) {
    if (!mayWriteInPlace(op))
      return;
    Value result = op->getResult(0);
    int64_t at = point[op];
    for (Value operand : isa<DynamicUpdateSliceOp>(op)
                             ? op->getOperands().take_front(1)
                             : op->getOperands()) {
      auto it = bufferOf.find(operand);
      bool sameBytes =
          operand.getType() == result.getType() ||
          (isa<ReshapeOp>(op) &&
           cast<ShapedType>(operand.getType()).getElementType() ==
               cast<ShapedType>(result.getType()).getElementType());
      if (!sameBytes || it == bufferOf.end())
        continue;
      LiveBuffer &buffer = liveness.buffers[it->second];
      if (buffer.end != at || buffer.begin > at - 1)
        continue;
      buffer.end = at - 1;
      if (auto produced = bufferOf.find(result); produced != bufferOf.end())
        liveness.buffers[produced->second].inPlaceOf = operand;
      return;
    }
  });
}

} // namespace

BufferLiveness partita::analyzeLiveness(func::FuncOp function) {
  BufferLiveness liveness;
  if (function.isExternal())
    return liveness;
  // Program points: 0 is the function's entry (where arguments begin), then
  // ops in pre-order; an op's region ends at `last[op]`.
  liveness.points = 1;
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
    if (int64_t bytes = tensorBytes(arg.getType())) {
      bool donated = function.getArgAttr(arg.getArgNumber(),
                                         PartitaDialect::kDonatedAttrName) !=
                     nullptr;
      int64_t end =
          donated ? std::max<int64_t>(0, endOf(arg, &function.getBody().front()))
                  : finalPoint;
      liveness.buffers.push_back({arg, nullptr, 0, end, bytes});
    }
  function.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (int64_t bytes = tensorBytes(arg.getType())) {
            int64_t end = std::max(point[op], endOf(arg, &block));
            // A loop's carries are written again at the end of every
            // iteration (from the yield's copies): alive until the yield.
            if (isa<LoopOp>(op) && arg.getArgNumber() > 0 &&
                !block.empty())
              end = std::max(end, point[block.getTerminator()]);
            liveness.buffers.push_back({arg, nullptr, point[op], end, bytes});
          }
    for (Value result : op->getResults())
      if (int64_t bytes = tensorBytes(result.getType()))
        liveness.buffers.push_back(
            {result, nullptr, point[op],
             std::max(point[op], endOf(result, op->getBlock())), bytes});
  });

  // A loop copies every yielded value aside before it becomes the next
  // carry (a yielded value may sit in another carry's storage): those
  // temporaries are alive at the yield.
  function.getBody().walk([&](YieldOp yield) {
    if (!isa<LoopOp>(yield->getParentOp()))
      return;
    for (OpOperand &operand : yield->getOpOperands())
      if (int64_t bytes = tensorBytes(operand.get().getType()))
        liveness.buffers.push_back(
            {Value(), &operand, point[yield], point[yield], bytes});
  });

  llvm::DenseMap<Value, size_t> bufferOf;
  for (size_t b = 0; b < liveness.buffers.size(); ++b)
    bufferOf[liveness.buffers[b].value] = b;

  // Asynchronous collectives (partita.async_collectives): in flight from
  // the op to the wait before the first use of the result (or the block's
  // terminator), so the operand and the result are both alive until then.
  // An all_reduce whose operand dies at it runs in place instead: the
  // result takes over the operand's storage (always: `sharesStorage`).
  function.getBody().walk([&](Operation *op) {
      if (!isAsyncCollective(op))
        return;
      int64_t at = point[op];
      int64_t wait = point[collectiveWaitPoint(op)];
      auto result = bufferOf.find(op->getResult(0));
      auto operand = bufferOf.find(op->getOperand(0));
      if (result == bufferOf.end() || operand == bufferOf.end())
        return;
      LiveBuffer &out = liveness.buffers[result->second];
      LiveBuffer &in = liveness.buffers[operand->second];
      out.end = std::max(out.end, wait);
      if (isa<AllReduceOp>(op) && in.end == at && in.begin < at &&
          op->getOperand(0).getType() == op->getResult(0).getType()) {
        in.end = at - 1;
        out.inPlaceOf = op->getOperand(0);
        out.sharesStorage = true;
        return;
      }
      in.end = std::max(in.end, wait);
    });

  linkInPlaceResults(function, point, bufferOf, liveness);

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
