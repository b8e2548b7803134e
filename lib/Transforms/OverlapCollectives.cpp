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

/// The first op of `block` that uses a result of `op` (through an op
/// nested in it, too), or the block's terminator when none does.
Operation *firstUseInBlock(Operation *op, Block &block) {
  Operation *first = nullptr;
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
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
  // Collectives may be placed before `floor`, never above it.
  Operation *floor = &block.front();
  std::vector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (isa<OptimizationBarrierOp>(op)) {
      Operation *after = op->getNextNode() ? op->getNextNode() : op;
      if (floor->isBeforeInBlock(after))
        floor = after;
      continue;
    }
    if (!movesData(op))
      continue;
    Operation *target = floor;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
      if (inBlock && !inBlock->isBeforeInBlock(target))
        target = inBlock->getNextNode();
    }
    if (target && target != op && target->isBeforeInBlock(op))
      op->moveBefore(target);
    // The next collective may start before this one's first use, not
    // earlier: one collective ahead.
    if (Operation *use = firstUseInBlock(op, block);
        use && floor->isBeforeInBlock(use))
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
