//===- TestShuffle.cpp - Random valid op and use-list order ---------------===//
//
// Order-independence is a promise of propagation (and later of the
// partitioner): this pass produces the other orders to test it against.
//
//===----------------------------------------------------------------------===//

#include "partita/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace partita {
#define GEN_PASS_DEF_TESTSHUFFLEPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;

namespace {

/// Ops of `block` whose results `op` (or any op nested in it) uses.
llvm::SmallDenseSet<Operation *> dependencies(Operation *op, Block *block) {
  llvm::SmallDenseSet<Operation *> deps;
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (def->getBlock() == block && def != op)
          deps.insert(def);
  });
  return deps;
}

struct TestShufflePass
    : public partita::impl::TestShufflePassBase<TestShufflePass> {
  using TestShufflePassBase::TestShufflePassBase;

  void runOnOperation() override {
    std::mt19937 random(seed);
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      shuffleBlock(*block, random);
    getOperation()->walk([&](Operation *op) {
      for (Value result : op->getResults())
        shuffleUses(result, random);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            shuffleUses(arg, random);
    });
  }

  void shuffleBlock(Block &block, std::mt19937 &random) {
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    if (ops.size() < 2)
      return;
    llvm::DenseMap<Operation *, llvm::SmallDenseSet<Operation *>> pending;
    for (Operation *op : ops)
      pending[op] = dependencies(op, &block);
    SmallVector<Operation *> order;
    llvm::DenseSet<Operation *> placed;
    while (order.size() < ops.size()) {
      SmallVector<Operation *> ready;
      for (Operation *op : ops)
        if (!placed.count(op) && llvm::all_of(pending[op], [&](Operation *dep) {
              return placed.count(dep) != 0;
            }))
          ready.push_back(op);
      Operation *next = ready[random() % ready.size()];
      order.push_back(next);
      placed.insert(next);
    }
    Operation *anchor =
        block.mightHaveTerminator() ? block.getTerminator() : nullptr;
    for (Operation *op : order) {
      if (anchor)
        op->moveBefore(anchor);
      else
        op->moveBefore(&block, block.end());
    }
  }

  void shuffleUses(Value value, std::mt19937 &random) {
    unsigned count = std::distance(value.use_begin(), value.use_end());
    if (count < 2)
      return;
    SmallVector<unsigned> indices(count);
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), random);
    value.shuffleUseList(indices);
  }
};

} // namespace
