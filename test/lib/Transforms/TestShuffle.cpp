//===- TestShuffle.cpp - Random valid op and use-list order ---------------===//
//
// Order-independence is a promise of propagation (and later of the
// partitioner): this pass produces the other orders to test it against.
// Tests use it to check that a pass's result does not depend on op or use
// order: `shuffle | pass` must equal `pass | shuffle`.
//
// Example: `partita-opt --partita-test-shuffle="seed=3" in.mlir`
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/Operation.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <numeric>
#include <random>

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

/// Moves the ops of every block into a random order that still respects
/// their dependencies, and shuffles every value's use list, from a seed.
struct TestShufflePass
    : public PassWrapper<TestShufflePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShufflePass)

  TestShufflePass() = default;
  TestShufflePass(const TestShufflePass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "partita-test-shuffle"; }
  StringRef getDescription() const final {
    return "Reorders independent ops and use lists at random (for tests)";
  }

  Option<unsigned> seed{*this, "seed", llvm::cl::desc("Random seed"),
                        llvm::cl::init(1)};

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

namespace partita {
namespace test {
void registerTestShufflePass() { PassRegistration<TestShufflePass>(); }
} // namespace test
} // namespace partita
