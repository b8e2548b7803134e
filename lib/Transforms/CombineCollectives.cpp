//===- CombineCollectives.cpp - Pack independent all_reduces --------------===//
//
// One all_reduce per bucket instead of one per value: fewer latencies, the
// same bytes. Buckets never move a member's result past its first use, and
// a full bucket is emitted when the next member arrives, so gradients
// produced early do not wait for the last layer's. Where a reduce_scatter
// bucket and an all_reduce bucket go out together and one latency costs
// more than moving the scattered bytes twice, they go out as one all_reduce.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <limits>
#include <map>
#include <optional>
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

/// The collectives a bucket packs: all_reduce and reduce_scatter (a
/// reduce_scatter's operand is transposed so that its scattered dimension
/// comes first: the blocks are then contiguous rows, and members pack side
/// by side as the columns of one [group, ...] matrix). all_gathers are not
/// packed here: under FSDP a bucket would hold every gathered weight at
/// once, which is the memory FSDP exists to save (those of the function's
/// results are: packResultGathers).
enum class Packed { AllReduce, ReduceScatter };

/// What must agree for collectives to share a bucket: kind, reduction,
/// mesh, axes and element type.
using BucketKey = std::tuple<int, std::string, std::string, std::string,
                             const void *>;

/// The packable kind of `op`, if it is one.
std::optional<Packed> packedKind(Operation *op) {
  auto type = op->getNumOperands() == 1
                  ? dyn_cast<RankedTensorType>(op->getOperand(0).getType())
                  : RankedTensorType();
  if (!type || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat())
    return std::nullopt;
  if (isa<AllReduceOp>(op))
    return Packed::AllReduce;
  if (isa<ReduceScatterOp>(op))
    return Packed::ReduceScatter;
  return std::nullopt;
}

BucketKey keyOf(Operation *op, Packed kind) {
  auto key = [&](auto collective) {
    std::string axes;
    for (Attribute axis : collective.getAxes())
      axes += cast<StringAttr>(axis).getValue().str() + ",";
    return BucketKey{static_cast<int>(kind),
                     stringifyReductionKind(collective.getKind()).str(),
                     collective.getMesh().str(), axes,
                     collective.getOperand()
                         .getType()
                         .getElementType()
                         .getAsOpaquePointer()};
  };
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    return key(reduce);
  return key(cast<ReduceScatterOp>(op));
}

struct Bucket {
  Packed kind = Packed::AllReduce;
  SmallVector<Operation *> members;
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
  /// Buckets of at most `bucketBytes`; with `fillBytes` > 0, a bucket is
  /// emitted as soon as it holds that many.
  BlockCombiner(Block &block, const Interconnect &links, int64_t bucketBytes,
                int64_t fillBytes = 0)
      : block(block), links(links), bucketBytes(bucketBytes),
        fillBytes(fillBytes) {}

  void run() {
    if (fillBytes > 0)
      hoistToOperands();
    SmallVector<Operation *> ops;
    Operation *lastPackable = nullptr;
    for (Operation &op : block) {
      ops.push_back(&op);
      if (packedKind(&op))
        lastPackable = &op;
    }
    for (Operation *op : ops) {
      if (pulled.contains(op))
        continue;
      if (op->hasTrait<OpTrait::IsTerminator>()) {
        flushBefore(op);
        continue;
      }
      // An all_reduce that needs a pending value is on the path through the
      // open buckets it reads: emit those now rather than defer the rest of
      // the program behind them. Other buckets stay open (a tensor-parallel
      // activation's all_reduce must not cut the gradients' bucket short).
      if (packedKind(op) && needsPending(op))
        flushNeededBy(op);
      // Deferring an op keeps its operands alive until the bucket is out:
      // past a bucket's worth of such bytes, the buckets go now instead.
      if (needsPending(op) && heldBytes + newlyHeld(op) > bucketBytes)
        flushBefore(op);
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
      std::optional<Packed> kind = packedKind(op);
      if (!kind)
        continue;
      int64_t bytes =
          bytesOf(cast<RankedTensorType>(op->getOperand(0).getType()));
      Bucket &bucket = buckets[keyOf(op, *kind)];
      bucket.kind = *kind;
      if (!bucket.members.empty() && bucket.bytes + bytes > bucketBytes) {
        emit(bucket, op);
        bucket = Bucket();
        bucket.kind = *kind;
        placeReady(op);
      }
      bucket.members.push_back(op);
      bucket.bytes += bytes;
      pending.insert(op->getResult(0));
      // Full enough (min-buckets): out right after its last member. After
      // the block's last member nothing more can join: every open bucket
      // goes out there rather than wait for a member's first use.
      if (fillBytes > 0 && op->getNextNode()) {
        Operation *next = op->getNextNode();
        if (op == lastPackable) {
          flushBefore(next);
        } else if (bucket.bytes >= fillBytes) {
          emit(bucket, next);
          bucket = Bucket();
          placeReady(next);
        }
      }
    }
  }

private:
  /// Moves every packable collective up to just after the op defining its
  /// operand (the block's start for a value from outside), keeping the
  /// program order of collectives that land at the same point. The
  /// partitioner leaves a gradient's all_reduce (reduce_scatter under
  /// ZeRO and FSDP) where the gradient is resharded for its use, which for
  /// a train step is after the whole backward pass and in parameter order:
  /// the first bucket would hold the embedding's gradient, ready last, and
  /// no bucket could start before the backward pass ends. In readiness
  /// order, buckets fill as the backward pass produces their members
  /// (docs/Runtime.md, "Overlapping communication").
  void hoistToOperands() {
    // Positions before any move; only collectives move, so the anchors
    // below (operand definitions and barriers) keep theirs.
    llvm::DenseMap<Operation *, int64_t> position;
    // Each collective's anchor: the op it goes right after (null: the
    // block's start); never above the last optimization barrier before it.
    SmallVector<std::pair<Operation *, Operation *>> moves;
    Operation *barrier = nullptr;
    int64_t next = 0;
    for (Operation &op : block) {
      position[&op] = next++;
      if (isa<OptimizationBarrierOp>(&op))
        barrier = &op;
      std::optional<Packed> kind = packedKind(&op);
      if (!kind)
        continue;
      Operation *def = op.getOperand(0).getDefiningOp();
      Operation *anchor = def ? block.findAncestorOpInBlock(*def) : nullptr;
      // A collective of a collective's result stays where it is.
      if (anchor && packedKind(anchor))
        continue;
      if (barrier && (!anchor || position[anchor] < position[barrier])) {
        // A reduce_scatter of a value from before the barrier stays: right
        // after the barrier it would be packed in the middle of the layer
        // recomputed there, at the step's memory peak (the 2-layer GPT's
        // FSDP step with remat per layer: 2.06 -> 2.20 MB per device).
        if (*kind == Packed::ReduceScatter)
          continue;
        anchor = barrier;
      }
      moves.push_back({&op, anchor});
    }
    llvm::DenseSet<Operation *> moved;
    for (auto [op, anchor] : moves) {
      Operation *target = anchor ? anchor->getNextNode() : &block.front();
      while (target && moved.contains(target))
        target = target->getNextNode();
      if (target && target != op)
        op->moveBefore(target);
      moved.insert(op);
    }
  }

  /// Emits every open bucket before `op`, and places the ops that waited.
  /// A reduce_scatter bucket goes out in one all_reduce with the
  /// all_reduce bucket of the same reduction, mesh, axes and element type
  /// where that is cheaper (mergeIsCheaper()).
  void flushBefore(Operation *op) {
    for (auto &[key, bucket] : buckets) {
      if (bucket.kind != Packed::ReduceScatter || bucket.members.empty())
        continue;
      BucketKey reduceKey = key;
      std::get<0>(reduceKey) = static_cast<int>(Packed::AllReduce);
      auto reduce = buckets.find(reduceKey);
      if (reduce == buckets.end() || reduce->second.members.empty() ||
          !mergeIsCheaper(reduce->second, bucket))
        continue;
      emitMerged(reduce->second, bucket, op);
      reduce->second = Bucket();
      bucket = Bucket();
    }
    for (auto &[key, bucket] : buckets)
      emit(bucket, op);
    buckets.clear();
    placeReady(op);
  }

  /// Emits before `op` the open buckets whose members it reads, directly
  /// or through deferred ops, and places the ops that waited.
  void flushNeededBy(Operation *op) {
    llvm::DenseMap<Value, const BucketKey *> memberKey;
    for (auto &[key, bucket] : buckets)
      for (Operation *member : bucket.members)
        memberKey[member->getResult(0)] = &key;
    std::set<BucketKey> needed;
    llvm::DenseSet<Operation *> visited;
    SmallVector<Operation *> work{op};
    while (!work.empty()) {
      Operation *current = work.pop_back_val();
      if (!visited.insert(current).second)
        continue;
      current->walk([&](Operation *inner) {
        for (Value operand : inner->getOperands()) {
          if (!pending.contains(operand))
            continue;
          if (const BucketKey *key = memberKey.lookup(operand))
            needed.insert(*key);
          else if (Operation *def = operand.getDefiningOp())
            if (Operation *inBlock = block.findAncestorOpInBlock(*def))
              work.push_back(inBlock);
        }
      });
    }
    for (const BucketKey &key : needed) {
      pullAhead(op, key);
      emit(buckets[key], op);
      buckets.erase(key);
    }
    placeReady(op);
  }

  /// Fills the bucket `key`, which `op` forces out, from just ahead of
  /// `op`: a later collective of the same key whose operand is available
  /// before `op` (defined above it and not waiting), or is made by one op
  /// whose own operands are, moves up before `op` (with that op) and
  /// joins. In the overlap order a weight gradient's all_reduce comes right
  /// after the weight gradient, which reads an activation gradient's
  /// all_reduce: without this, each activation gradient of the backward
  /// pass would go out alone though the next one is a few ops away
  /// (XLA packs them in pairs).
  void pullAhead(Operation *op, const BucketKey &key) {
    Bucket &bucket = buckets[key];
    auto available = [&](Value value) {
      if (pending.contains(value))
        return false;
      Operation *def = value.getDefiningOp();
      Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
      return !inBlock || inBlock->isBeforeInBlock(op);
    };
    Operation *next = op->getNextNode();
    for (int scanned = 0; next && scanned < kLookahead; ++scanned) {
      Operation *candidate = next;
      next = next->getNextNode();
      // Not past a rematerialization barrier: what comes after it would be
      // computed before the layer it recomputes, at the step's peak.
      if (isa<OptimizationBarrierOp>(candidate))
        break;
      std::optional<Packed> kind = packedKind(candidate);
      if (!kind || keyOf(candidate, *kind) != key)
        continue;
      int64_t bytes =
          bytesOf(cast<RankedTensorType>(candidate->getOperand(0).getType()));
      if (bucket.bytes + bytes > bucketBytes)
        break;
      // The ops making the operand, up to kMakers of them, each reading
      // only values available before `op` or made by the others.
      SmallVector<Operation *> makers;
      llvm::DenseSet<Operation *> chosen;
      bool movable = true;
      std::function<void(Value)> collect = [&](Value value) {
        if (!movable || available(value))
          return;
        // A waiting value depends on an open bucket (maybe this one): the
        // candidate cannot go in it.
        Operation *def = value.getDefiningOp();
        if (pending.contains(value) || !def || def->getBlock() != &block ||
            !op->isBeforeInBlock(def) || def->getNumRegions() != 0 ||
            packedKind(def) || chosen.size() >= kMakers) {
          movable = false;
          return;
        }
        if (!chosen.insert(def).second)
          return;
        for (Value operand : def->getOperands())
          collect(operand);
        makers.push_back(def); // after its own makers
      };
      collect(candidate->getOperand(0));
      if (!movable)
        continue;
      for (Operation *maker : makers)
        maker->moveBefore(op);
      candidate->moveBefore(op);
      pulled.insert(candidate);
      bucket.members.push_back(candidate);
      bucket.bytes += bytes;
      pending.insert(candidate->getResult(0));
    }
  }

  /// How far ahead pullAhead() looks, in ops, and how many ops making a
  /// member's operand it moves with it.
  static constexpr int kLookahead = 256;
  static constexpr size_t kMakers = 64;

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
      // A constant only this op uses moves with it: left behind, it would
      // split the chain it feeds from the ops it is folded into later
      // (the lowering fuses a splat constant into its chain).
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && isa<ConstantOp>(def) && def->getBlock() == op->getBlock() &&
            def->hasOneUse())
          def->moveBefore(before);
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

  static const char *kindName(Packed kind) {
    return kind == Packed::AllReduce ? "all_reduce" : "reduce_scatter";
  }

  /// "combines N <kind> of E elements: <members, each once>", a member
  /// named by what its own reason says it was for ("result 3 of @step",
  /// "operand 1 of partita.add at attn.residual"), else its location.
  static std::string reasonFor(const Bucket &bucket, int64_t elements) {
    std::string reason = "combines " + std::to_string(bucket.members.size()) +
                         " " + kindName(bucket.kind) + " of " +
                         std::to_string(elements) + " elements:";
    std::set<std::string> seen;
    for (Operation *member : bucket.members) {
      std::string what;
      if (auto own = member->getAttrOfType<StringAttr>(
              PartitaDialect::kReasonAttrName))
        what = own.getValue().split(": ").first.str();
      if (what.empty())
        what = describeLocation(member->getLoc());
      if (seen.insert(what).second)
        reason += " " + what + ";";
    }
    reason.pop_back();
    return reason;
  }

  /// The permutation that brings dimension `dim` of a rank-`rank` tensor
  /// to the front, keeping the others in order.
  static SmallVector<int64_t> toFront(int64_t dim, int64_t rank) {
    SmallVector<int64_t> perm{dim};
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim)
        perm.push_back(d);
    return perm;
  }

  static RankedTensorType permuted(RankedTensorType type,
                                   ArrayRef<int64_t> perm) {
    SmallVector<int64_t> shape;
    for (int64_t d : perm)
      shape.push_back(type.getDimSize(d));
    return RankedTensorType::get(shape, type.getElementType());
  }

  /// `value` with its dimensions permuted by `perm` (a transpose's
  /// semantics). An einsum whose only use is the member being packed (a
  /// weight gradient) computes the permuted layout itself, its output term
  /// reordered, instead of a transpose copying its result; it is left for
  /// eraseDeadEinsums() once the member is gone.
  Value permutedValue(OpBuilder &builder, Location loc, Value value,
                      ArrayRef<int64_t> perm) {
    auto type = cast<RankedTensorType>(value.getType());
    auto einsum = value.getDefiningOp<EinsumOp>();
    if (!einsum || !value.hasOneUse())
      return TransposeOp::create(builder, loc, permuted(type, perm), value,
                                 builder.getDenseI64ArrayAttr(perm));
    StringRef spec = einsum.getSpec();
    size_t arrow = spec.find("->");
    StringRef output = spec.substr(arrow + 2);
    std::string reordered = spec.substr(0, arrow + 2).str();
    for (int64_t d : perm)
      reordered += output[d];
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(einsum);
    auto folded =
        EinsumOp::create(builder, einsum.getLoc(), permuted(type, perm),
                         builder.getStringAttr(reordered),
                         einsum.getOperands());
    for (NamedAttribute attr : einsum->getDiscardableAttrs())
      folded->setAttr(attr.getName(), attr.getValue());
    if (auto sharding = einsum->getAttrOfType<ShardingAttr>(
            PartitaDialect::kShardingAttrName)) {
      SmallVector<DimShardingAttr> dims;
      for (int64_t d : perm)
        dims.push_back(sharding.getDims()[d]);
      folded->setAttr(PartitaDialect::kShardingAttrName,
                      ShardingAttr::get(builder.getContext(),
                                        sharding.getMesh(), dims,
                                        sharding.getPartialKind(),
                                        sharding.getPartialAxes(),
                                        sharding.getPriority()));
    }
    deadEinsums.push_back(einsum);
    return folded;
  }

  /// Erases the einsums permutedValue() replaced.
  void eraseDeadEinsums() {
    for (Operation *einsum : deadEinsums)
      if (einsum->use_empty())
        einsum->erase();
    deadEinsums.clear();
  }

  /// A bucket's members packed into one [rows, total] matrix: one row for
  /// all_reduce; one row per group member's block for reduce_scatter (its
  /// scattered dimension moved to the front). Each member's operand
  /// becomes `widths[i]` columns, side by side.
  struct PackedMatrix {
    Value value;
    int64_t rows = 1;
    int64_t total = 0;
    SmallVector<int64_t> widths;
    SmallVector<Location> locations;
  };

  PackedMatrix pack(Bucket &bucket, OpBuilder &builder) {
    PackedMatrix packed;
    Operation *first = bucket.members.front();
    Type element =
        cast<RankedTensorType>(first->getOperand(0).getType()).getElementType();
    if (auto scatter = dyn_cast<ReduceScatterOp>(first)) {
      int64_t dim = static_cast<int64_t>(scatter.getDim());
      packed.rows = scatter.getOperand().getType().getDimSize(dim) /
                    std::max<int64_t>(1, scatter.getType().getDimSize(dim));
    }
    SmallVector<Value> columns;
    for (Operation *member : bucket.members) {
      auto type = cast<RankedTensorType>(member->getOperand(0).getType());
      packed.locations.push_back(member->getLoc());
      int64_t width = type.getNumElements() / packed.rows;
      packed.widths.push_back(width);
      packed.total += width;
      Value operand = member->getOperand(0);
      if (auto scatter = dyn_cast<ReduceScatterOp>(member))
        if (scatter.getDim() != 0) {
          SmallVector<int64_t> perm = toFront(
              static_cast<int64_t>(scatter.getDim()), type.getRank());
          operand = permutedValue(builder, member->getLoc(), operand, perm);
        }
      columns.push_back(ReshapeOp::create(
          builder, member->getLoc(),
          RankedTensorType::get({packed.rows, width}, element), operand));
    }
    packed.value =
        columns.size() == 1
            ? columns.front()
            : ConcatenateOp::create(
                  builder, builder.getFusedLoc(packed.locations),
                  RankedTensorType::get({packed.rows, packed.total}, element),
                  columns, 1);
    return packed;
  }

  /// Slices each member's columns out of `combined` ([outRows, total]),
  /// puts its dimensions back and replaces the member by it.
  void unpack(Bucket &bucket, const PackedMatrix &packed, Value combined,
              int64_t outRows, OpBuilder &builder) {
    Type element = cast<RankedTensorType>(combined.getType()).getElementType();
    int64_t offset = 0;
    for (auto [member, width] : llvm::zip(bucket.members, packed.widths)) {
      auto type = cast<RankedTensorType>(member->getResult(0).getType());
      Value part = SliceOp::create(
          builder, member->getLoc(),
          RankedTensorType::get({outRows, width}, element), combined,
          builder.getDenseI64ArrayAttr({0, offset}),
          builder.getDenseI64ArrayAttr({outRows, offset + width}),
          builder.getDenseI64ArrayAttr({1, 1}));
      Value shaped;
      auto scatter = dyn_cast<ReduceScatterOp>(member);
      if (scatter && scatter.getDim() != 0) {
        SmallVector<int64_t> perm = toFront(
            static_cast<int64_t>(scatter.getDim()), type.getRank());
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, d] : llvm::enumerate(perm))
          inverse[d] = static_cast<int64_t>(i);
        Value front = ReshapeOp::create(builder, member->getLoc(),
                                        permuted(type, perm), part);
        shaped = TransposeOp::create(builder, member->getLoc(), type, front,
                                     builder.getDenseI64ArrayAttr(inverse));
      } else {
        shaped = ReshapeOp::create(builder, member->getLoc(), type, part);
      }
      member->getResult(0).replaceAllUsesWith(shaped);
      member->erase();
      offset += width;
    }
  }

  /// Replaces the bucket's members by one collective before `before`; a
  /// bucket of one stays where it is. The members are packed side by side
  /// (pack()), the collective runs along the rows, and each member's
  /// columns are sliced back out (unpack()).
  void emit(Bucket &bucket, Operation *before) {
    for (Operation *member : bucket.members)
      pending.erase(member->getResult(0));
    if (bucket.members.size() < 2)
      return;
    OpBuilder builder(before);
    PackedMatrix packed = pack(bucket, builder);
    Operation *first = bucket.members.front();
    Location loc = builder.getFusedLoc(packed.locations);
    Type element =
        cast<RankedTensorType>(packed.value.getType()).getElementType();
    Operation *combined = nullptr;
    int64_t outRows = packed.rows;
    switch (bucket.kind) {
    case Packed::AllReduce: {
      auto reduce = cast<AllReduceOp>(first);
      combined = AllReduceOp::create(
          builder, loc, packed.value.getType(), reduce.getKindAttr(),
          packed.value, reduce.getMeshAttr(), reduce.getAxesAttr());
      break;
    }
    case Packed::ReduceScatter: {
      auto scatter = cast<ReduceScatterOp>(first);
      outRows = 1;
      combined = ReduceScatterOp::create(
          builder, loc, RankedTensorType::get({1, packed.total}, element),
          scatter.getKind(), packed.value, scatter.getMesh(),
          scatter.getAxesAttr(), static_cast<uint64_t>(0));
      break;
    }
    }
    combined->setAttr(
        PartitaDialect::kReasonAttrName,
        builder.getStringAttr(reasonFor(bucket, packed.rows * packed.total)));
    unpack(bucket, packed, combined->getResult(0), outRows, builder);
    eraseDeadEinsums();
  }

  /// The group size and link of a collective's mesh axes.
  std::pair<int64_t, AxisLink> groupOf(Operation *collective) {
    auto [meshName, axes] = [&] {
      if (auto reduce = dyn_cast<AllReduceOp>(collective))
        return std::make_pair(reduce.getMeshAttr(), reduce.getAxes());
      auto scatter = cast<ReduceScatterOp>(collective);
      return std::make_pair(scatter.getMeshAttr(), scatter.getAxes());
    }();
    std::vector<std::string> names;
    for (Attribute axis : axes)
      names.push_back(cast<StringAttr>(axis).str());
    MeshOp mesh = lookupMesh(collective, meshName);
    if (!mesh)
      return {1, links.linkFor(names)};
    Mesh value = mesh.getMesh().toMesh();
    int64_t size = 1;
    for (const std::string &name : names)
      size *= mesh.getMesh().axisSize(name);
    return {size, links.linkOn(value, names)};
  }

  /// Whether one all_reduce of both buckets, each device then keeping its
  /// blocks of the reduce_scatter members, is faster by the cost model
  /// than the two collectives: it saves one latency and moves the
  /// scattered bytes twice instead of once, so it pays where those bytes
  /// are few (a small model's gradients: XLA all-reduces a whole FSDP step
  /// in one collective).
  bool mergeIsCheaper(const Bucket &reduce, const Bucket &scatter) {
    auto [size, link] = groupOf(scatter.members.front());
    if (size <= 1)
      return false;
    auto both = static_cast<double>(reduce.bytes + scatter.bytes);
    double apart = collectiveTimeUs(CollectiveKind::AllReduce, size,
                                    static_cast<double>(reduce.bytes), link) +
                   collectiveTimeUs(CollectiveKind::ReduceScatter, size,
                                    static_cast<double>(scatter.bytes), link);
    return collectiveTimeUs(CollectiveKind::AllReduce, size, both, link) <
           apart;
  }

  /// One all_reduce for an all_reduce bucket and a reduce_scatter bucket
  /// of the same reduction, mesh, axes and element type (mergeIsCheaper()):
  /// the scatter's [group, columns] matrix is flattened ahead of the
  /// all_reduce's row, the whole row is all-reduced, and each device keeps
  /// its row of the scattered part (all_slice, no traffic).
  void emitMerged(Bucket &reduce, Bucket &scatter, Operation *before) {
    for (Bucket *bucket : {&reduce, &scatter})
      for (Operation *member : bucket->members)
        pending.erase(member->getResult(0));
    OpBuilder builder(before);
    PackedMatrix scattered = pack(scatter, builder);
    PackedMatrix reduced = pack(reduce, builder);
    Type element =
        cast<RankedTensorType>(reduced.value.getType()).getElementType();
    int64_t scatteredWidth = scattered.rows * scattered.total;
    SmallVector<Location> locations(scattered.locations);
    locations.append(reduced.locations);
    Location loc = builder.getFusedLoc(locations);
    Value flat = ReshapeOp::create(
        builder, loc, RankedTensorType::get({1, scatteredWidth}, element),
        scattered.value);
    auto rowType =
        RankedTensorType::get({1, scatteredWidth + reduced.total}, element);
    Value row = ConcatenateOp::create(builder, loc, rowType,
                                      ValueRange{flat, reduced.value}, 1);
    auto first = cast<AllReduceOp>(reduce.members.front());
    auto combined =
        AllReduceOp::create(builder, loc, rowType, first.getKindAttr(), row,
                            first.getMeshAttr(), first.getAxesAttr());
    std::string reason = reasonFor(reduce, reduced.total) + " and " +
                         reasonFor(scatter, scatteredWidth) +
                         " (one all_reduce, each device then keeping its "
                         "blocks, costs less than two latencies)";
    combined->setAttr(PartitaDialect::kReasonAttrName,
                      builder.getStringAttr(reason));
    Value scatteredPart = SliceOp::create(
        builder, loc, RankedTensorType::get({1, scatteredWidth}, element),
        combined, builder.getDenseI64ArrayAttr({0, 0}),
        builder.getDenseI64ArrayAttr({1, scatteredWidth}),
        builder.getDenseI64ArrayAttr({1, 1}));
    Value blocks = ReshapeOp::create(
        builder, loc,
        RankedTensorType::get({scattered.rows, scattered.total}, element),
        scatteredPart);
    auto scatterOp = cast<ReduceScatterOp>(scatter.members.front());
    Value mine = AllSliceOp::create(
        builder, loc, RankedTensorType::get({1, scattered.total}, element),
        blocks, scatterOp.getMeshAttr(), scatterOp.getAxesAttr(),
        builder.getI64IntegerAttr(0));
    Value reducedPart = SliceOp::create(
        builder, loc, reduced.value.getType(), combined,
        builder.getDenseI64ArrayAttr({0, scatteredWidth}),
        builder.getDenseI64ArrayAttr({1, scatteredWidth + reduced.total}),
        builder.getDenseI64ArrayAttr({1, 1}));
    unpack(scatter, scattered, mine, 1, builder);
    unpack(reduce, reduced, reducedPart, 1, builder);
    eraseDeadEinsums();
  }

  Block &block;
  const Interconnect &links;
  SmallVector<Operation *> deadEinsums;
  int64_t bucketBytes;
  int64_t fillBytes;
  std::map<BucketKey, Bucket> buckets;
  /// Member results of open buckets and results of deferred ops.
  llvm::DenseSet<Value> pending;
  /// Ops waiting for a pending value, in program order.
  SmallVector<Operation *> deferred;
  /// The available values deferred ops read, and their bytes (an upper
  /// bound of what deferral keeps alive longer).
  llvm::DenseSet<Value> held;
  int64_t heldBytes = 0;
  /// Collectives pullAhead() moved into a bucket before their turn.
  llvm::DenseSet<Operation *> pulled;
};

/// Packs the all_gathers whose only use is the block's terminator (the
/// function's results, gathered to the layouts the caller asked for) into
/// one all_gather per mesh, axes and element type, in buckets of at most
/// `bucketBytes` result bytes. Every result is alive at the terminator
/// anyway, so packing them holds no weight longer (the reason FSDP's
/// gathers of weights are not packed). Each operand is flattened into the
/// columns of one row; the packed row is gathered into [group, columns];
/// each member's columns are sliced out, the group's blocks put back along
/// its gathered dimension.
void packResultGathers(Block &block, int64_t bucketBytes) {
  Operation *terminator = &block.back();
  using Key = std::tuple<std::string, std::string, const void *>;
  std::map<Key, SmallVector<SmallVector<AllGatherOp>>> groups;
  for (Operation &op : block) {
    auto gather = dyn_cast<AllGatherOp>(&op);
    if (!gather || !op.hasAttr(PartitaDialect::kReasonAttrName) ||
        !op.hasOneUse() || *op.getUsers().begin() != terminator)
      continue;
    RankedTensorType type = gather.getType();
    if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
      continue;
    std::string axes;
    for (Attribute axis : gather.getAxes())
      axes += cast<StringAttr>(axis).getValue().str() + ",";
    auto &buckets = groups[Key{gather.getMesh().str(), axes,
                               type.getElementType().getAsOpaquePointer()}];
    int64_t used = 0;
    if (!buckets.empty())
      for (AllGatherOp member : buckets.back())
        used += bytesOf(member.getType());
    if (buckets.empty() || used + bytesOf(type) > bucketBytes)
      buckets.emplace_back();
    buckets.back().push_back(gather);
  }
  for (auto &[key, buckets] : groups) {
    for (SmallVector<AllGatherOp> &members : buckets) {
      if (members.size() < 2)
        continue;
      OpBuilder builder(terminator);
      AllGatherOp first = members.front();
      Type element = first.getType().getElementType();
      int64_t group = first.getType().getDimSize(first.getDim()) /
                      first.getOperand().getType().getDimSize(first.getDim());
      SmallVector<Value> columns;
      SmallVector<Location> locations;
      int64_t total = 0;
      for (AllGatherOp member : members) {
        int64_t width = member.getOperand().getType().getNumElements();
        columns.push_back(ReshapeOp::create(
            builder, member.getLoc(),
            RankedTensorType::get({1, width}, element), member.getOperand()));
        locations.push_back(member.getLoc());
        total += width;
      }
      Location loc = builder.getFusedLoc(locations);
      Value packed = ConcatenateOp::create(
          builder, loc, RankedTensorType::get({1, total}, element), columns, 1);
      auto combined = AllGatherOp::create(
          builder, loc, RankedTensorType::get({group, total}, element), packed,
          first.getMeshAttr(), first.getAxesAttr(),
          builder.getI64IntegerAttr(0));
      std::string reason = "combines " + std::to_string(members.size()) +
                           " all_gather of function results:";
      for (AllGatherOp member : members)
        if (auto own = member->getAttrOfType<StringAttr>(
                PartitaDialect::kReasonAttrName))
          reason += " " + own.getValue().split(": ").first.str() + ";";
      reason.pop_back();
      combined->setAttr(PartitaDialect::kReasonAttrName,
                        builder.getStringAttr(reason));
      int64_t offset = 0;
      for (AllGatherOp member : members) {
        RankedTensorType local = member.getOperand().getType();
        int64_t width = local.getNumElements();
        Value part = SliceOp::create(
            builder, member.getLoc(),
            RankedTensorType::get({group, width}, element), combined,
            builder.getDenseI64ArrayAttr({0, offset}),
            builder.getDenseI64ArrayAttr({group, offset + width}),
            builder.getDenseI64ArrayAttr({1, 1}));
        // [group, local...]: the group's blocks first; moved to just before
        // the gathered dimension, then merged with it.
        int64_t dim = static_cast<int64_t>(member.getDim());
        SmallVector<int64_t> blocks{group};
        blocks.append(local.getShape().begin(), local.getShape().end());
        Value shaped =
            ReshapeOp::create(builder, member.getLoc(),
                              RankedTensorType::get(blocks, element), part);
        if (dim != 0) {
          SmallVector<int64_t> perm, moved;
          for (int64_t d = 1; d <= dim; ++d)
            perm.push_back(d);
          perm.push_back(0);
          for (int64_t d = dim + 1; d <= local.getRank(); ++d)
            perm.push_back(d);
          for (int64_t d : perm)
            moved.push_back(blocks[d]);
          shaped = TransposeOp::create(
              builder, member.getLoc(), RankedTensorType::get(moved, element),
              shaped, builder.getDenseI64ArrayAttr(perm));
        }
        shaped = ReshapeOp::create(builder, member.getLoc(), member.getType(),
                                   shaped);
        member.getResult().replaceAllUsesWith(shaped);
        member->erase();
        offset += width;
      }
    }
  }
}

struct CombineCollectivesPass
    : public partita::impl::CombineCollectivesPassBase<CombineCollectivesPass> {
  using CombineCollectivesPassBase::CombineCollectivesPassBase;
  CombineCollectivesPass(const CombineCollectivesPassOptions &options,
                         std::shared_ptr<const Interconnect> links)
      : CombineCollectivesPassBase(options), given(std::move(links)) {}

  /// The interconnect given as a value, if any (else interconnectFile).
  std::shared_ptr<const Interconnect> given;

  void runOnOperation() override {
    int64_t bytes = bucketBytes;
    Interconnect links = given ? *given : Interconnect();
    if (!given && !interconnectFile.empty()) {
      Expected<Interconnect> spec = readInterconnect(interconnectFile);
      if (!spec) {
        getOperation().emitError() << spec.status().message();
        return signalPassFailure();
      }
      links = *spec;
    }
    if (bytes < 0)
      bytes = links.combineBytes.value_or(kDefaultBucketBytes);
    if (bytes <= 0)
      return;
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      if (block->empty() || !block->back().hasTrait<OpTrait::IsTerminator>())
        continue;
      // At least `min-buckets` buckets where the block packs enough bytes,
      // so that the first ones can be in flight while later members are
      // still being computed.
      int64_t fill = 0;
      if (minBuckets > 1) {
        int64_t packable = 0;
        for (Operation &op : *block)
          if (packedKind(&op))
            packable +=
                bytesOf(cast<RankedTensorType>(op.getOperand(0).getType()));
        fill =
            std::min(bytes, std::max(smallestSplitBucket(links.defaultLink),
                                     (packable + minBuckets - 1) / minBuckets));
      }
      BlockCombiner(*block, links, bytes, fill).run();
      if (isa<func::ReturnOp>(block->back()))
        packResultGathers(*block, bytes);
    }
  }

  /// 25 MiB, PyTorch DDP's default bucket.
  static constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;
  /// min-buckets never makes buckets smaller than 64 KiB, nor than an
  /// all_reduce moves (2 bytes on the wire per operand byte) in one
  /// latency of the link: below that, a bucket sent early costs more
  /// latency than the computation it overlaps can hide (1.125 MB on the
  /// default link, 450 GB/s and 5 us).
  static int64_t smallestSplitBucket(const AxisLink &link) {
    double balanced = link.latencyUs * 1e-6 * link.bandwidthGBps * 1e9 / 2;
    return std::max<int64_t>(64 * 1024, static_cast<int64_t>(balanced));
  }
};

} // namespace

std::unique_ptr<mlir::Pass> partita::createCombineCollectivesPass(
    const CombineCollectivesPassOptions &options,
    std::shared_ptr<const Interconnect> links) {
  return std::make_unique<CombineCollectivesPass>(options, std::move(links));
}
