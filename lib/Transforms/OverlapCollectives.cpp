//===- OverlapCollectives.cpp - Start collectives early, wait late --------===//
//
// Marks the module's collectives asynchronous (the lowering then emits a
// wait before each one's first use) and moves each collective up its block
// as far as its operands, optimization barriers and the previous
// collective's first use allow. docs/Runtime.md, "Overlapping
// communication".
//
//===----------------------------------------------------------------------===//

#include "partita/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <limits>

namespace partita {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

/// Collectives that move data between devices (all_slice does not).
bool movesData(Operation *op) {
  return isa<AllGatherOp, AllReduceOp, ReduceScatterOp, AllToAllOp,
             CollectivePermuteOp>(op);
}

/// The order of a block's ops as the pass moves them. MLIR's own order
/// (isBeforeInBlock) is recomputed over the whole block after a move fills
/// the gap it left between two neighbours, which made the pass quadratic
/// (0.57 s of an 86-layer GPT train step's 2.8 s compile); here a moved op
/// takes the midpoint of its new neighbours' positions, and the block is
/// renumbered only when a gap is used up.
class BlockOrder {
public:
  explicit BlockOrder(Block &block) : block(block) { renumber(); }

  bool before(Operation *a, Operation *b) const {
    return position.lookup(a) < position.lookup(b);
  }

  /// Moves `op` (of this block) just before `target` (of this block).
  void moveBefore(Operation *op, Operation *target) {
    op->moveBefore(target);
    Operation *previous = op->getPrevNode();
    int64_t low = previous ? position.lookup(previous)
                           : position.lookup(target) - 2 * kStride;
    int64_t high = position.lookup(target);
    if (high - low < 2) {
      renumber();
      return;
    }
    position[op] = low + (high - low) / 2;
  }

private:
  static constexpr int64_t kStride = int64_t(1) << 24;
  void renumber() {
    int64_t next = 0;
    for (Operation &op : block)
      position[&op] = next += kStride;
  }
  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
};

/// The first op of `block` that uses a result of `op` (through an op
/// nested in it, too), or the block's terminator when none does.
Operation *firstUseInBlock(Operation *op, Block &block,
                           const BlockOrder &order) {
  Operation *first = nullptr;
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (ancestor && (!first || order.before(ancestor, first)))
        first = ancestor;
    }
  if (!first && !block.empty())
    first = &block.back();
  return first;
}

/// Whether `op` only rearranges one tensor (a slice, reshape or
/// transpose): cheap, and with no reason to run before its result is
/// needed.
bool isView(Operation *op) {
  return isa<SliceOp, ReshapeOp, TransposeOp>(op) && op->getNumOperands() == 1;
}

/// Whether the lowering may fuse `op` into a chain of elementwise
/// instructions (docs/Runtime.md, "Fusion"): a view placed between two such
/// ops would split the chain in two.
bool joinsChains(Operation *op) {
  return op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
         isa<ConstantOp, BroadcastOp, CompareOp, SelectOp, ConvertOp>(op);
}

/// Whether `a` has one result with as many elements as `b`'s first (the
/// fusion pass's runs are of one element count).
bool sameElementCount(Operation *a, Operation *b) {
  auto typeA = a->getNumResults() == 1
                   ? dyn_cast<RankedTensorType>(a->getResult(0).getType())
                   : RankedTensorType();
  auto typeB = dyn_cast<RankedTensorType>(b->getResult(0).getType());
  return typeA && typeB && typeA.hasStaticShape() && typeB.hasStaticShape() &&
         typeA.getNumElements() == typeB.getNumElements();
}

/// The first op of the chain the lowering may fuse that `use` belongs to:
/// the elementwise ops, constants and broadcasts of its element count right
/// above it, not above `stop`; `use` itself when it joins no chain.
Operation *chainStart(Operation *use, Operation *stop) {
  if (!joinsChains(use) || use->getNumResults() != 1)
    return use;
  while (use->getPrevNode() && use->getPrevNode() != stop &&
         joinsChains(use->getPrevNode()) &&
         sameElementCount(use->getPrevNode(), use))
    use = use->getPrevNode();
  return use;
}

/// Moves `op`, a view in `block`, down to just before the first use of its
/// result — before the elementwise ops, constants and broadcasts of its
/// element count right above that use, which may fuse with it — after first
/// doing the same for the views that read it.
void sinkView(Operation *op, Block &block, BlockOrder &order) {
  SmallVector<Operation *> views;
  for (Operation *user : op->getResult(0).getUsers())
    if (user->getBlock() == &block && isView(user))
      views.push_back(user);
  for (Operation *view : views)
    sinkView(view, block, order);
  Operation *use = firstUseInBlock(op, block, order);
  if (!use || !order.before(op, use))
    return;
  use = chainStart(use, op);
  if (use != op->getNextNode())
    order.moveBefore(op, use);
}

/// Moves the views of each collective's result down to their first uses: a
/// combined bucket's members are sliced out of it right after it, and the
/// collective's wait (before its result's first use) would follow its
/// start at once.
void sinkViewsOfCollectives(Block &block, BlockOrder &order) {
  SmallVector<Operation *> views;
  for (Operation &op : block)
    if (movesData(&op))
      for (Operation *user : op.getResult(0).getUsers())
        if (user->getBlock() == &block && isView(user))
          views.push_back(user);
  for (Operation *view : views)
    sinkView(view, block, order);
}

/// The first point of `block` at which `op` may stand: just after the last
/// of its operands' definitions in the block, not above `floor`.
Operation *earliestPlace(Operation *op, Block &block, const BlockOrder &order,
                         Operation *floor) {
  Operation *target = floor;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
    if (inBlock && !order.before(inBlock, target))
      target = inBlock->getNextNode();
  }
  return target;
}

/// Whether `op` only packs values for the one op that reads it (a combined
/// bucket's reshapes and concatenation): it may move up with that op.
bool isPackFor(Operation *op, Operation *reader) {
  return isa<ConcatenateOp, ReshapeOp>(op) && op->getNumResults() == 1 &&
         op->getNumRegions() == 0 && op->getResult(0).hasOneUse() &&
         *op->getResult(0).getUsers().begin() == reader;
}

/// Moves the ops that pack `op`'s operands (isPackFor) up to just after
/// their own operands, the packs of those first.
void hoistPacks(Operation *op, Block &block, BlockOrder &order,
                Operation *floor) {
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def || def->getBlock() != &block || !isPackFor(def, op))
      continue;
    hoistPacks(def, block, order, floor);
    Operation *target = earliestPlace(def, block, order, floor);
    if (target && target != def && order.before(target, def))
      order.moveBefore(def, target);
  }
}

/// Moves the collectives of `block` up (see the pass description).
void hoistCollectives(Block &block) {
  if (block.empty())
    return;
  BlockOrder order(block);
  sinkViewsOfCollectives(block, order);
  // Collectives but reduce_scatters may be placed before `floor`, never
  // above it.
  Operation *floor = &block.front();
  std::vector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (isa<OptimizationBarrierOp>(op)) {
      Operation *after = op->getNextNode() ? op->getNextNode() : op;
      if (order.before(floor, after))
        floor = after;
      continue;
    }
    if (!movesData(op))
      continue;
    // A reduce_scatter's operand is its result times the group: it starts
    // as soon as its operand (and the bucket packing it) is ready, ahead of
    // earlier collectives and above optimization barriers (its operand
    // does not pass through them), and is waited for no later than the
    // next reduce_scatter's start (Liveness.h's collectiveWaitPoint()), so
    // a train step holds one or two whole gradients, not all of them until
    // the update (docs/Runtime.md, "Overlapping communication"). Stopped
    // at the last barrier, every layer's gradient of a step recomputed
    // per layer stayed alive through the backward pass: GPT-2 medium's
    // FSDP step on data=8, 2.07 -> 1.11 GB per device.
    if (isa<ReduceScatterOp>(op)) {
      hoistPacks(op, block, order, &block.front());
      Operation *target = earliestPlace(op, block, order, &block.front());
      if (target && target != op && order.before(target, op))
        order.moveBefore(op, target);
      continue;
    }
    Operation *target = earliestPlace(op, block, order, floor);
    if (target && target != op && order.before(target, op))
      order.moveBefore(op, target);
    // The next collective may start before this one's first use, not
    // earlier: one collective ahead. When that use is inside a chain the
    // lowering fuses, before the chain: a start in its middle would split
    // it in two.
    if (Operation *use = firstUseInBlock(op, block, order);
        use && order.before(floor, use)) {
      use = chainStart(use, op);
      if (order.before(floor, use))
        floor = use;
    }
  }
}

/// Orders the ops after the block's last collective by the last collective
/// each depends on (stable otherwise): what needs only early collectives'
/// results runs first, and the latest collective is waited for last. A
/// train step's optimizer updates the parameters in their own order, the
/// embedding first, whose gradient is reduced last: without this its wait
/// would follow that collective's start at once. An op that depends on no
/// collective (a constant, a broadcast of one) goes with its first user, so
/// that chains still fuse. A tail with an optimization barrier keeps its
/// order.
void orderTailByCollective(Block &block) {
  Operation *last = nullptr;
  for (Operation &op : block)
    if (movesData(&op))
      last = &op;
  if (!last || !last->getNextNode() ||
      last->getNextNode()->hasTrait<OpTrait::IsTerminator>())
    return;
  // key: the program index of the latest collective an op depends on.
  llvm::DenseMap<Operation *, int64_t> key;
  int64_t collectives = 0;
  for (Operation &op : block) {
    int64_t k = movesData(&op) ? collectives++ : -1;
    op.walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *inBlock = block.findAncestorOpInBlock(*def);
              inBlock && inBlock != &op)
            k = std::max(k, key.lookup(inBlock));
    });
    key[&op] = k;
  }
  SmallVector<Operation *> tail;
  for (Operation *op = last->getNextNode();
       op && !op->hasTrait<OpTrait::IsTerminator>(); op = op->getNextNode()) {
    if (isa<OptimizationBarrierOp>(op))
      return;
    tail.push_back(op);
  }
  // Independent ops take their first user's key (users come later, so
  // walking backwards sees them first).
  for (Operation *op : llvm::reverse(tail)) {
    if (key[op] >= 0)
      continue;
    int64_t k = std::numeric_limits<int64_t>::max();
    for (Operation *user : op->getUsers())
      if (Operation *inBlock = block.findAncestorOpInBlock(*user);
          inBlock && !inBlock->hasTrait<OpTrait::IsTerminator>())
        k = std::min(k, key[inBlock]);
    if (k != std::numeric_limits<int64_t>::max())
      key[op] = k;
  }
  std::stable_sort(tail.begin(), tail.end(), [&](Operation *a, Operation *b) {
    return key.lookup(a) < key.lookup(b);
  });
  Operation *terminator = &block.back();
  for (Operation *op : tail)
    op->moveBefore(terminator);
}

class OverlapCollectivesPass
    : public partita::impl::OverlapCollectivesPassBase<OverlapCollectivesPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module->setAttr(PartitaDialect::kAsyncCollectivesAttrName,
                    UnitAttr::get(module.getContext()));
    module.walk([](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region) {
          hoistCollectives(block);
          orderTailByCollective(block);
        }
    });
  }
};

} // namespace
