//===- CleanupCollectives.cpp - Cancel and merge inserted collectives -----===//
//
// The partitioner plans each reshard on its own; across ops that leaves
// moves that undo each other, duplicates, all_reduce + all_slice pairs
// that one reduce_scatter does with half the traffic, and reduce_scatter +
// all_gather pairs that an all_reduce (which packs with the others) and a
// smaller all_gather do with the same traffic. Only collectives the
// partitioner inserted (those with a partita.reason) are touched: code that
// came from manual_computation bodies stays as written.
//
//===----------------------------------------------------------------------===//

#include "partita/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace partita {
#define GEN_PASS_DEF_CLEANUPCOLLECTIVESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

bool inserted(Operation *op) {
  return op && op->hasAttr(PartitaDialect::kReasonAttrName);
}

/// The operand of `producer` (an Inner) when `op` (an Outer over the same
/// mesh, axes and dimension) undoes it: a gather of a slice, a slice of a
/// gather.
template <typename Outer, typename Inner>
Value undoneBy(Operation *op, Operation *producer) {
  auto outer = dyn_cast<Outer>(op);
  auto inner = dyn_cast<Inner>(producer);
  if (outer && inner && outer.getAxes() == inner.getAxes() &&
      outer.getDim() == inner.getDim() && outer.getMesh() == inner.getMesh())
    return inner.getOperand();
  return {};
}

/// The value `op` undoes, when `op` is the inverse of the collective that
/// produced its operand.
Value cancelled(Operation *op) {
  Operation *producer = op->getOperand(0).getDefiningOp();
  if (!inserted(op) || !inserted(producer))
    return {};
  if (Value undone = undoneBy<AllGatherOp, AllSliceOp>(op, producer))
    return undone;
  if (Value undone = undoneBy<AllSliceOp, AllGatherOp>(op, producer))
    return undone;
  if (auto second = dyn_cast<AllToAllOp>(op))
    if (auto first = dyn_cast<AllToAllOp>(producer))
      if (first.getAxes() == second.getAxes() &&
          first.getMesh() == second.getMesh() &&
          first.getSplitDim() == second.getConcatDim() &&
          first.getConcatDim() == second.getSplitDim())
        return first.getOperand();
  return {};
}

bool isZeroSplat(DenseElementsAttr value) {
  if (auto floats = dyn_cast<DenseFPElementsAttr>(value))
    return floats.getSplatValue<APFloat>().isZero();
  if (auto ints = dyn_cast<DenseIntElementsAttr>(value))
    return ints.getSplatValue<APInt>().isZero();
  return false;
}

/// Attributes that make two collectives the same computation.
bool sameCollective(Operation *a, Operation *b) {
  if (a->getName() != b->getName() || a->getOperands() != b->getOperands() ||
      a->getResultTypes() != b->getResultTypes())
    return false;
  for (NamedAttribute attr : a->getAttrs()) {
    if (attr.getName() == PartitaDialect::kReasonAttrName)
      continue;
    if (b->getAttr(attr.getName()) != attr.getValue())
      return false;
  }
  return a->getAttrs().size() == b->getAttrs().size();
}

struct CleanupCollectivesPass
    : public partita::impl::CleanupCollectivesPassBase<CleanupCollectivesPass> {
  void runOnOperation() override {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> collectives;
      getOperation().walk([&](Operation *op) {
        if (inserted(op))
          collectives.push_back(op);
      });
      llvm::DenseSet<Operation *> erased;
      for (Operation *op : collectives) {
        if (erased.count(op))
          continue;
        // Making a zero partial needs no data: every device may hold it.
        if (auto permute = dyn_cast<CollectivePermuteOp>(op)) {
          DenseElementsAttr value;
          if (permute.getPairs() == ArrayRef<int64_t>{0, 0} &&
              matchPattern(permute.getOperand(), m_Constant(&value)) &&
              value.isSplat() && isZeroSplat(value)) {
            op->getResult(0).replaceAllUsesWith(permute.getOperand());
            erase(op, erased);
            changed = true;
            continue;
          }
        }
        // A move and its inverse.
        if (Value original = cancelled(op)) {
          op->getResult(0).replaceAllUsesWith(original);
          erase(op, erased);
          changed = true;
          continue;
        }
        // all_reduce used only by an all_slice on the same axes.
        if (auto slice = dyn_cast<AllSliceOp>(op)) {
          auto reduce = slice.getOperand().getDefiningOp<AllReduceOp>();
          if (reduce && inserted(reduce) && reduce->hasOneUse() &&
              reduce.getAxes() == slice.getAxes() &&
              reduce.getMesh() == slice.getMesh()) {
            OpBuilder builder(slice);
            auto scatter = ReduceScatterOp::create(
                builder, slice.getLoc(), slice.getType(), reduce.getKind(),
                reduce.getOperand(), slice.getMesh(), slice.getAxes(),
                slice.getDim());
            scatter->setAttrs(slice->getAttrs());
            scatter->setAttr(PartitaDialect::kReasonAttrName,
                             reduce->getAttr(PartitaDialect::kReasonAttrName));
            slice.getResult().replaceAllUsesWith(scatter.getResult());
            erase(slice, erased);
            erase(reduce, erased);
            changed = true;
            continue;
          }
        }
        // reduce_scatter over A, then all_gather over (P..., A) of the same
        // dimension: all_reduce over A, then all_gather over P. The same
        // bytes ((n_A-1)/n_A + (n_P·n_A-1)/n_A = 2(n_A-1)/n_A + n_P-1 blocks
        // of the operand), and an all_reduce packs into the gradients'
        // bucket where a reduce_scatter travels alone.
        if (auto gather = dyn_cast<AllGatherOp>(op)) {
          auto scatter = gather.getOperand().getDefiningOp<ReduceScatterOp>();
          ArrayRef<Attribute> gathered = gather.getAxes().getValue();
          ArrayRef<Attribute> scattered =
              scatter ? scatter.getAxes().getValue() : ArrayRef<Attribute>();
          if (scatter && inserted(scatter) && scatter->hasOneUse() &&
              scatter.getDim() == gather.getDim() &&
              scatter.getMesh() == gather.getMesh() &&
              gathered.size() >= scattered.size() &&
              gathered.take_back(scattered.size()) == scattered) {
            OpBuilder builder(gather);
            auto reduce = AllReduceOp::create(
                builder, scatter.getLoc(), scatter.getOperand().getType(),
                scatter.getKind(), scatter.getOperand(), scatter.getMesh(),
                scatter.getAxes());
            reduce->setAttr(PartitaDialect::kReasonAttrName,
                            scatter->getAttr(PartitaDialect::kReasonAttrName));
            Value result = reduce.getResult();
            ArrayRef<Attribute> rest = gathered.drop_back(scattered.size());
            if (!rest.empty()) {
              auto regather = AllGatherOp::create(
                  builder, gather.getLoc(), gather.getType(), result,
                  gather.getMesh(), builder.getArrayAttr(rest),
                  gather.getDim());
              regather->setAttrs(gather->getAttrs());
              regather.setAxesAttr(builder.getArrayAttr(rest));
              result = regather.getResult();
            }
            gather.getResult().replaceAllUsesWith(result);
            erase(gather, erased);
            changed = true;
            continue;
          }
        }
        // An identical earlier collective of the same value.
        for (Operation *user : op->getOperand(0).getUsers()) {
          if (user == op || erased.count(user) || !inserted(user) ||
              user->getBlock() != op->getBlock() ||
              !user->isBeforeInBlock(op) || !sameCollective(user, op))
            continue;
          op->getResult(0).replaceAllUsesWith(user->getResult(0));
          erase(op, erased);
          changed = true;
          break;
        }
      }
    }
  }

  void erase(Operation *op, llvm::DenseSet<Operation *> &erased) {
    // Producers left without users are dead moves: remove them too.
    SmallVector<Operation *> worklist{op};
    while (!worklist.empty()) {
      Operation *next = worklist.pop_back_val();
      // Erased already (as a dead producer of an earlier erase): freed, so
      // asked nothing else.
      if (erased.count(next) || !next->use_empty())
        continue;
      Operation *producer = next->getOperand(0).getDefiningOp();
      erased.insert(next);
      next->erase();
      if (inserted(producer))
        worklist.push_back(producer);
    }
  }
};

} // namespace
