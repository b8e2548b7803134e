//===- CombineCollectives.cpp - Pack independent all_reduces --------------===//
//
// One all_reduce per bucket instead of one per value: fewer latencies, the
// same bytes. Buckets never move a member's result past its first use, and
// a full bucket is emitted when the next member arrives, so gradients
// produced early do not wait for the last layer's.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"

#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace partita {
#define GEN_PASS_DEF_COMBINECOLLECTIVESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

int64_t bytesOf(RankedTensorType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

/// What must agree for all_reduces to share a bucket.
using BucketKey =
    std::tuple<std::string, std::string, std::string, const void *>;

BucketKey keyOf(AllReduceOp op) {
  std::string axes;
  for (Attribute axis : op.getAxes())
    axes += cast<StringAttr>(axis).getValue().str() + ",";
  return {stringifyReductionKind(op.getKind()).str(),
          op.getMesh().str(), axes,
          op.getOperand().getType().getElementType().getAsOpaquePointer()};
}

struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
};

/// Combines the all_reduces of one block. Ops are visited in order; an op
/// that needs a value not yet available — a member result of an open
/// bucket, or the result of an op already deferred — is deferred (moved
/// after the bucket once it is emitted), so independent all_reduces far
/// apart in the program can share a bucket. Partita's tensor ops have no
/// side effects, so only dependences order them.
class BlockCombiner {
public:
  BlockCombiner(Block &block, int64_t bucketBytes)
      : block(block), bucketBytes(bucketBytes) {}

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (op->hasTrait<OpTrait::IsTerminator>()) {
        for (auto &[key, bucket] : buckets)
          emit(bucket, op);
        buckets.clear();
        placeReady(op);
        continue;
      }
      // An all_reduce that needs a pending value is on the path through the
      // open buckets: emit them now rather than defer the rest of the
      // program behind them.
      if (isa<AllReduceOp>(op) && needsPending(op)) {
        for (auto &[key, bucket] : buckets)
          emit(bucket, op);
        buckets.clear();
        placeReady(op);
      }
      // Deferring an op keeps its operands alive until the bucket is out:
      // past a bucket's worth of such bytes, the buckets go now instead.
      if (needsPending(op) && heldBytes + newlyHeld(op) > bucketBytes) {
        for (auto &[key, bucket] : buckets)
          emit(bucket, op);
        buckets.clear();
        placeReady(op);
      }
      if (needsPending(op)) {
        heldBytes += newlyHeld(op);
        op->walk([&](Operation *inner) {
          for (Value operand : inner->getOperands())
            if (!pending.contains(operand))
              held.insert(operand);
        });
        deferred.push_back(op);
        for (Value result : op->getResults())
          pending.insert(result);
        continue;
      }
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce || !reduce.getOperand().getType().hasStaticShape() ||
          !reduce.getOperand().getType().getElementType().isIntOrFloat())
        continue;
      int64_t bytes = bytesOf(reduce.getOperand().getType());
      Bucket &bucket = buckets[keyOf(reduce)];
      if (!bucket.members.empty() && bucket.bytes + bytes > bucketBytes) {
        emit(bucket, op);
        bucket = Bucket();
        placeReady(op);
      }
      bucket.members.push_back(reduce);
      bucket.bytes += bytes;
      pending.insert(reduce.getResult());
    }
  }

private:
  /// Bytes of the available tensors `op` reads that no deferred op holds
  /// yet: what deferring it may keep alive longer.
  int64_t newlyHeld(Operation *op) const {
    int64_t bytes = 0;
    llvm::DenseSet<Value> seen;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (!type || !type.hasStaticShape() ||
            !type.getElementType().isIntOrFloat() ||
            pending.contains(operand) || held.contains(operand) ||
            !seen.insert(operand).second)
          continue;
        bytes += bytesOf(type);
      }
    });
    return bytes;
  }

  /// Whether `op` (or an op nested in it) reads a value not available yet.
  bool needsPending(Operation *op) const {
    if (pending.empty())
      return false;
    bool needs = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (pending.contains(operand)) {
          needs = true;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    return needs;
  }

  /// Moves every deferred op whose values are all available before
  /// `before`, in program order.
  void placeReady(Operation *before) {
    SmallVector<Operation *> still;
    for (Operation *op : deferred) {
      if (needsPending(op)) {
        still.push_back(op);
        continue;
      }
      op->moveBefore(before);
      for (Value result : op->getResults())
        pending.erase(result);
    }
    deferred = std::move(still);
    if (deferred.empty()) {
      held.clear();
      heldBytes = 0;
    }
  }

  /// "combines N all_reduce of E elements: <members, each once>", a member
  /// named by what its own reason says it was for ("result 3 of @step",
  /// "operand 1 of partita.add at attn.residual"), else its location.
  static std::string reasonFor(const Bucket &bucket, int64_t elements) {
    std::string reason = "combines " + std::to_string(bucket.members.size()) +
                         " all_reduce of " + std::to_string(elements) +
                         " elements:";
    std::set<std::string> seen;
    for (AllReduceOp member : bucket.members) {
      std::string what;
      if (auto own = member->getAttrOfType<StringAttr>(
              PartitaDialect::kReasonAttrName))
        what = own.getValue().split(": ").first.str();
      if (what.empty())
        what = describeLocation(member.getLoc());
      if (seen.insert(what).second)
        reason += " " + what + ";";
    }
    reason.pop_back();
    return reason;
  }

  /// Replaces the bucket's members by one all_reduce before `before`; a
  /// bucket of one stays where it is.
  void emit(Bucket &bucket, Operation *before) {
    for (AllReduceOp member : bucket.members)
      pending.erase(member.getResult());
    if (bucket.members.size() < 2)
      return;
    OpBuilder builder(before);
    AllReduceOp first = bucket.members.front();
    Type element = first.getOperand().getType().getElementType();
    SmallVector<Location> locations;
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    for (AllReduceOp member : bucket.members) {
      RankedTensorType type = member.getOperand().getType();
      locations.push_back(member.getLoc());
      sizes.push_back(type.getNumElements());
      flat.push_back(type.getRank() == 1
                         ? Value(member.getOperand())
                         : Value(ReshapeOp::create(
                               builder, member.getLoc(),
                               RankedTensorType::get({type.getNumElements()},
                                                     element),
                               member.getOperand())));
    }
    Location loc = builder.getFusedLoc(locations);
    int64_t total = 0;
    for (int64_t size : sizes)
      total += size;
    auto packedType = RankedTensorType::get({total}, element);
    Value packed = ConcatenateOp::create(builder, loc, packedType, flat, 0);
    auto combined =
        AllReduceOp::create(builder, loc, packedType, first.getKindAttr(),
                            packed, first.getMeshAttr(), first.getAxesAttr());
    combined->setAttr(PartitaDialect::kReasonAttrName,
                      builder.getStringAttr(reasonFor(bucket, total)));
    int64_t offset = 0;
    for (auto [member, size] : llvm::zip(bucket.members, sizes)) {
      RankedTensorType type = member.getOperand().getType();
      Value part = SliceOp::create(
          builder, member.getLoc(), RankedTensorType::get({size}, element),
          combined.getResult(), builder.getDenseI64ArrayAttr({offset}),
          builder.getDenseI64ArrayAttr({offset + size}),
          builder.getDenseI64ArrayAttr({1}));
      Value shaped =
          type.getRank() == 1
              ? part
              : Value(ReshapeOp::create(builder, member.getLoc(), type, part));
      member.getResult().replaceAllUsesWith(shaped);
      member.erase();
      offset += size;
    }
  }

  Block &block;
  int64_t bucketBytes;
  std::map<BucketKey, Bucket> buckets;
  /// Member results of open buckets and results of deferred ops.
  llvm::DenseSet<Value> pending;
  /// Ops waiting for a pending value, in program order.
  SmallVector<Operation *> deferred;
  /// The available values deferred ops read, and their bytes (an upper
  /// bound of what deferral keeps alive longer).
  llvm::DenseSet<Value> held;
  int64_t heldBytes = 0;
};

struct CombineCollectivesPass
    : public partita::impl::CombineCollectivesPassBase<CombineCollectivesPass> {
  using CombineCollectivesPassBase::CombineCollectivesPassBase;

  void runOnOperation() override {
    int64_t bytes = bucketBytes;
    if (bytes < 0) {
      bytes = kDefaultBucketBytes;
      if (!interconnectFile.empty()) {
        Expected<Interconnect> spec = readInterconnect(interconnectFile);
        if (!spec) {
          getOperation().emitError() << spec.status().message();
          return signalPassFailure();
        }
        bytes = spec->combineBytes.value_or(kDefaultBucketBytes);
      }
    }
    if (bytes <= 0)
      return;
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      if (!block->empty() &&
          block->back().hasTrait<OpTrait::IsTerminator>())
        BlockCombiner(*block, bytes).run();
  }

  /// 25 MiB, PyTorch DDP's default bucket.
  static constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;
};

} // namespace
