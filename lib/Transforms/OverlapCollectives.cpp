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

/// Moves the collectives of `block` up (see the pass description).
void hoistCollectives(Block &block) {
  if (block.empty())
    return;
  BlockOrder order(block);
  // Collectives may be placed before `floor`, never above it.
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
    Operation *target = floor;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
      if (inBlock && !order.before(inBlock, target))
        target = inBlock->getNextNode();
    }
    if (target && target != op && order.before(target, op))
      order.moveBefore(op, target);
    // The next collective may start before this one's first use, not
    // earlier: one collective ahead.
    if (Operation *use = firstUseInBlock(op, block, order);
        use && order.before(floor, use))
      floor = use;
  }
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
        for (Block &block : region)
          hoistCollectives(block);
    });
  }
};

} // namespace
