//===- PartitionLayouts.cpp - Changing a value's layout -------------------===//
//
// The partitioner's layout work (Partitioner.h): declared and local types,
// padding a dimension to a multiple of its shards and slicing it back,
// masking padding before reductions, and reshards — the reshard planner's
// cheapest plan emitted as collectives, each with its reason, cached per
// value and target layout.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

using namespace mlir;
using namespace partita;
using namespace partita::partitioning;

Sharding Partitioner::declaredSharding(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Sharding replicated = Sharding::replicated(static_cast<int>(type.getRank()));
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    Attribute attr = op->getAttr(PartitaDialect::kShardingAttrName);
    if (auto single = dyn_cast_or_null<ShardingAttr>(attr))
      return single.toSharding();
    if (auto list = dyn_cast_or_null<ArrayAttr>(attr))
      if (result.getResultNumber() < list.size())
        if (auto entry = dyn_cast<ShardingAttr>(list[result.getResultNumber()]))
          return entry.toSharding();
  }
  return replicated;
}

FailureOr<RankedTensorType> Partitioner::localType(RankedTensorType global,
                                                   const Sharding &sharding,
                                                   Operation *anchor,
                                                   const std::string &what) {
  if (!global.hasStaticShape())
    return anchor->emitError() << "cannot partition " << what
                               << ": its shape " << global
                               << " is not static";
  std::vector<int64_t> shape(global.getShape().begin(),
                             global.getShape().end());
  // A dimension that does not divide is padded: every device holds
  // ceil(size / shards) elements (docs/Partitioning.md, "Uneven dimensions").
  std::vector<int64_t> local = localShape(mesh, sharding, shape);
  return RankedTensorType::get(local, global.getElementType());
}

Value Partitioner::zeroScalar(Location loc, Type element) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(builder, loc, type,
                            cast<ElementsAttr>(builder.getZeroAttr(type)));
}

Value Partitioner::padDimTo(Value value, int64_t dim, int64_t size,
                            Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t have = type.getDimSize(dim);
  if (have >= size)
    return value;
  SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
  high[dim] = size - have;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  auto op = PadOp::create(builder, loc,
                          RankedTensorType::get(shape, type.getElementType()),
                          value, zeroScalar(loc, type.getElementType()),
                          builder.getDenseI64ArrayAttr(low),
                          builder.getDenseI64ArrayAttr(high));
  op->setAttr(PartitaDialect::kReasonAttrName,
              builder.getStringAttr(PartitaDialect::kPadReason));
  return op.getResult();
}

Value Partitioner::sliceDimTo(Value value, int64_t dim, int64_t size,
                              Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getDimSize(dim) <= size)
    return value;
  SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
      stride(type.getRank(), 1);
  limit[dim] = size;
  auto op = SliceOp::create(
      builder, loc, RankedTensorType::get(limit, type.getElementType()), value,
      builder.getDenseI64ArrayAttr(start), builder.getDenseI64ArrayAttr(limit),
      builder.getDenseI64ArrayAttr(stride));
  op->setAttr(PartitaDialect::kReasonAttrName,
              builder.getStringAttr(PartitaDialect::kCutReason));
  return op.getResult();
}

/// A splat of the value a reduction of kind `kind` ignores: 0 for sums,
/// the lowest value for maxima, the highest for minima (false/true on i1).
static DenseElementsAttr neutralSplat(RankedTensorType type, PartialKind kind) {
  Type element = type.getElementType();
  if (auto floating = dyn_cast<FloatType>(element)) {
    const llvm::fltSemantics &semantics = floating.getFloatSemantics();
    APFloat value = kind == PartialKind::Max
                        ? APFloat::getInf(semantics, /*Negative=*/true)
                    : kind == PartialKind::Min
                        ? APFloat::getInf(semantics, /*Negative=*/false)
                        : APFloat::getZero(semantics);
    return DenseElementsAttr::get(type, value);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  APInt value = APInt::getZero(width);
  if (width == 1)
    value = APInt(1, kind == PartialKind::Min ? 1 : 0);
  else if (kind == PartialKind::Max)
    value = APInt::getSignedMinValue(width);
  else if (kind == PartialKind::Min)
    value = APInt::getSignedMaxValue(width);
  return DenseElementsAttr::get(type, value);
}

Value Partitioner::maskPadding(Value operand, int64_t dim, const std::vector<std::string> &axes,
                               int64_t size, PartialKind neutral,
                               Location loc) {
  auto type = cast<RankedTensorType>(operand.getType());
  int64_t local = type.getDimSize(dim);
  int64_t shards = 1;
  for (const std::string &axis : axes)
    shards *= mesh.axisSize(axis);
  // Global positions of this device's elements along `dim`: an iota over
  // the padded dimension, sliced like the operand (all_slice moves nothing).
  Value &valid = validPositions[{axes, size, local}];
  if (!valid) {
    Type indexType = shards * local < (int64_t{1} << 31)
                         ? builder.getI32Type()
                         : builder.getI64Type();
    auto padded = RankedTensorType::get({shards * local}, indexType);
    auto positions = RankedTensorType::get({local}, indexType);
    Value iota = IotaOp::create(builder, loc, padded, 0);
    auto sliced = AllSliceOp::create(
        builder, loc, positions, iota, meshName.getValue(),
        builder.getStrArrayAttr(
            SmallVector<StringRef>(axes.begin(), axes.end())),
        0);
    sliced->setAttr(PartitaDialect::kReasonAttrName,
                    builder.getStringAttr("positions for the padding mask"));
    Sharding slicedSharding = Sharding::replicated(1);
    slicedSharding.dims[0].axes = axes;
    sliced->setAttr(PartitaDialect::kShardingAttrName,
                    attrFor(slicedSharding));
    Value limit = ConstantOp::create(
        builder, loc, positions,
        DenseElementsAttr::get(positions,
                               builder.getIntegerAttr(indexType, size)));
    valid = CompareOp::create(builder, loc, CompareDirection::LT,
                              sliced.getResult(), limit);
  }
  auto maskType = RankedTensorType::get(type.getShape(), builder.getI1Type());
  Value mask = BroadcastOp::create(builder, loc, maskType, valid,
                                   builder.getDenseI64ArrayAttr({dim}));
  Value fill = ConstantOp::create(builder, loc, type, neutralSplat(type, neutral));
  auto select = SelectOp::create(builder, loc, type, mask, operand, fill);
  select->setAttr(PartitaDialect::kReasonAttrName,
                  builder.getStringAttr(PartitaDialect::kMaskReasonPrefix.str() +
                                        std::to_string(dim) + " (size " +
                                        std::to_string(size) + ") for a " +
                                        "reduction over it"));
  return select.getResult();
}

void Partitioner::maskReducedPadding(Operation *op, const OpShardingRule &rule,
                                     const OpDecision &decision) {
  builder.setInsertionPoint(op);
  validPositions.clear();
  for (auto [index, factors] : llvm::enumerate(rule.operands)) {
    Value operand = op->getOperand(index);
    for (auto [dim, dimFactors] : llvm::enumerate(factors)) {
      if (dimFactors.size() != 1)
        continue; // Compound dimensions are split only where they divide.
      int factor = dimFactors.front();
      const Factor &info = rule.factors[factor];
      const std::vector<std::string> &axes = decision.factorAxes[factor];
      if (info.type != FactorType::Reduction || axes.empty())
        continue;
      int64_t shards = 1;
      for (const std::string &axis : axes)
        shards *= mesh.axisSize(axis);
      if (info.size % shards == 0)
        continue;
      operand = maskPadding(operand, static_cast<int64_t>(dim), axes,
                            info.size, rule.reductionKind, op->getLoc());
    }
    op->setOperand(index, operand);
  }
}

FailureOr<Value> Partitioner::reshard(Value value, const Sharding &to,
                                      Operation *consumer,
                                      llvm::function_ref<std::string()> why) {
  // Most operands are in the layout they need already.
  if (sameReshardLayout(mesh, closed(layouts.lookup(value).sharding),
                        closed(to)))
    return value;
  std::pair<void *, std::string> key{value.getAsOpaquePointer(),
                                     closed(to).toString()};
  auto cached = reshardCache.find(key);
  if (cached != reshardCache.end()) {
    Operation *def = cached->second.getDefiningOp();
    Operation *ancestor =
        def ? def->getBlock()->findAncestorOpInBlock(*consumer) : nullptr;
    if (ancestor && def->isBeforeInBlock(ancestor))
      return cached->second;
  }
  FailureOr<Value> result = rebroadcast(value, to, consumer, why);
  if (succeeded(result) && !*result)
    result = emitReshard(value, to, consumer, why);
  if (succeeded(result) && *result != value)
    reshardCache[key] = *result;
  return result;
}

FailureOr<Value>
Partitioner::rebroadcast(Value value, const Sharding &to, Operation *consumer,
                         llvm::function_ref<std::string()> why) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  Sharding target = closed(to);
  if (!broadcast || target.partialKind != PartialKind::None)
    return Value();
  Layout from = layouts.lookup(value);
  Value operand = broadcast.getOperand();
  Layout source = layouts.lookup(operand);
  auto count = [](const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t extent : shape)
      n *= extent;
    return n;
  };
  // Worth it when the operand is at most half the result; and only where
  // every split dimension divides evenly (no padding to carry).
  // Both layouts must be known (a value from a region the partitioner has
  // not laid out has none).
  ArrayRef<int64_t> dims = broadcast.getDims();
  if (from.shape.size() != static_cast<size_t>(target.rank()) ||
      source.shape.size() != dims.size() ||
      2 * count(source.shape) > count(from.shape))
    return Value();
  for (int d = 0; d < target.rank(); ++d) {
    int64_t group = 1;
    for (const std::string &axis : target.dims[d].axes)
      group *= mesh.axisSize(axis);
    if (from.shape[d] % group != 0)
      return Value();
  }
  Sharding wanted = Sharding::replicated(static_cast<int>(source.shape.size()));
  // A size-1 dimension stretched over a split one stays whole at the
  // source: every device broadcasts it into its own block.
  for (auto [i, d] : llvm::enumerate(dims))
    if (source.shape[i] == from.shape[d])
      wanted.dims[i].axes = target.dims[d].axes;
  FailureOr<Value> moved = reshard(operand, wanted, consumer, why);
  if (failed(moved))
    return failure();
  auto global = RankedTensorType::get(
      from.shape, cast<RankedTensorType>(value.getType()).getElementType());
  FailureOr<RankedTensorType> type =
      localType(global, target, consumer, "a broadcast of " +
                                              describeValue(operand));
  if (failed(type))
    return failure();
  builder.setInsertionPoint(consumer);
  auto rebuilt = BroadcastOp::create(builder, broadcast.getLoc(), *type,
                                     *moved, broadcast.getDimsAttr());
  rebuilt->setAttr(PartitaDialect::kShardingAttrName, attrFor(target));
  layouts[rebuilt.getResult()] = {target, from.shape, from.elementBytes};
  rebroadcasted.insert(broadcast);
  return rebuilt.getResult();
}

void Partitioner::eraseUnusedBroadcasts() {
  for (Operation *op : rebroadcasted)
    if (op->use_empty())
      op->erase();
  rebroadcasted.clear();
}

FailureOr<Value> Partitioner::emitReshard(
    Value value, const Sharding &to, Operation *consumer,
    llvm::function_ref<std::string()> why) {
  // reshard() returned already when `value` has the layout.
  Layout from = layouts.lookup(value);
  ReshardPlan plan = planReshard(mesh, closed(from.sharding), closed(to),
                                 from.shape, from.elementBytes, interconnect);
  std::string reason = why() + ": " + closed(from.sharding).toString() + " -> " +
                       closed(to).toString();
  Location loc = consumer->getLoc();
  builder.setInsertionPoint(consumer);
  auto global = RankedTensorType::get(
      from.shape, cast<RankedTensorType>(value.getType()).getElementType());
  Sharding current = from.sharding;
  llvm::StringRef meshRef = meshName.getValue();
  for (const ReshardStep &step : plan.steps) {
    FailureOr<RankedTensorType> type = localType(
        global, step.after, consumer, "a reshard of " + describeValue(value));
    if (failed(type))
      return failure();
    ArrayAttr axes = builder.getStrArrayAttr(
        SmallVector<StringRef>(step.axes.begin(), step.axes.end()));
    ReductionKind kind =
        current.partialKind == PartialKind::Max   ? ReductionKind::Max
        : current.partialKind == PartialKind::Min ? ReductionKind::Min
                                                  : ReductionKind::Sum;
    // Collectives move even blocks. Around an uneven dimension the blocks
    // are padded before a split and the padding is cut after a gather;
    // planReshard only chooses steps where the padded blocks line up
    // (docs/Partitioning.md, "Uneven dimensions").
    int64_t group = 1;
    for (const std::string &axis : step.axes)
      group *= mesh.axisSize(axis);
    auto evenType = [&](int64_t dim, int64_t size) {
      SmallVector<int64_t> shape(type->getShape());
      shape[dim] = size;
      return RankedTensorType::get(shape, type->getElementType());
    };
    int cutDim = -1;
    Operation *collective = nullptr;
    switch (step.kind) {
    case CollectiveKind::AllGather: {
      int64_t gathered =
          group * cast<RankedTensorType>(value.getType()).getDimSize(step.dim);
      collective = AllGatherOp::create(
          builder, loc, evenType(step.dim, gathered), value, meshRef, axes,
          static_cast<uint64_t>(step.dim));
      cutDim = step.dim;
      break;
    }
    case CollectiveKind::AllSlice:
      if (step.dim < 0) {
        // Making a whole value partial. A partial maximum or minimum may be
        // the value itself; a partial sum keeps it at group position 0 and
        // zeros elsewhere: a permute whose only pair is 0 -> 0 does exactly
        // that (devices that are no pair's target receive zeros).
        if (step.after.partialKind != PartialKind::Sum) {
          current = step.after;
          layouts[value] = {step.after, from.shape, from.elementBytes};
          continue;
        }
        collective = CollectivePermuteOp::create(
            builder, loc, *type, value, meshRef, axes, ArrayRef<int64_t>{0, 0});
        break;
      }
      value = padDimTo(value, step.dim, group * type->getDimSize(step.dim),
                       loc);
      collective = AllSliceOp::create(builder, loc, *type, value, meshRef, axes,
                                      static_cast<uint64_t>(step.dim));
      break;
    case CollectiveKind::AllReduce:
      collective =
          AllReduceOp::create(builder, loc, *type, kind, value, meshRef, axes);
      break;
    case CollectiveKind::ReduceScatter:
      value = padDimTo(value, step.dim, group * type->getDimSize(step.dim),
                       loc);
      collective =
          ReduceScatterOp::create(builder, loc, *type, kind, value, meshRef,
                                  axes, static_cast<uint64_t>(step.dim));
      break;
    case CollectiveKind::AllToAll: {
      value = padDimTo(value, step.dim, group * type->getDimSize(step.dim),
                       loc);
      int64_t joined = group * cast<RankedTensorType>(value.getType())
                                   .getDimSize(step.concatDim);
      collective = AllToAllOp::create(
          builder, loc, evenType(step.concatDim, joined), value, meshRef, axes,
          static_cast<uint64_t>(step.dim),
          static_cast<uint64_t>(step.concatDim));
      cutDim = step.concatDim;
      break;
    }
    case CollectiveKind::CollectivePermute: {
      SmallVector<int64_t> pairs;
      for (auto [source, target] : step.pairs) {
        pairs.push_back(source);
        pairs.push_back(target);
      }
      collective = CollectivePermuteOp::create(builder, loc, *type, value,
                                               meshRef, axes, pairs);
      break;
    }
    }
    collective->setAttr(PartitaDialect::kReasonAttrName,
                        builder.getStringAttr(reason));
    collective->setAttr(PartitaDialect::kShardingAttrName, attrFor(step.after));
    value = collective->getResult(0);
    if (cutDim >= 0)
      value = sliceDimTo(value, cutDim, type->getDimSize(cutDim), loc);
    current = step.after;
    layouts[value] = {step.after, from.shape, from.elementBytes};
  }
  if (!sameReshardLayout(mesh, closed(current), closed(to)))
    return consumer->emitError()
           << "internal error: the reshard plan for " << describeValue(value)
           << " ends at " << closed(current).toString() << ", not "
           << closed(to).toString();
  return value;
}

