//===- Partition.cpp - Global program to per-device program ---------------===//
//
// Walks each function in program order with the actual layout (sharding
// and global shape) of every value, and for each op:
//   1. decides the op-level sharding (factor -> axes) with the propagation
//      engine's decideOp, from the operands' actual layouts and the result
//      shardings propagation wrote;
//   2. reshards every operand to what the op needs (the reshard planner's
//      cheapest plan, emitted as collectives with a reason);
//   3. retypes the op to local shapes (fixing the few attributes that hold
//      sizes) and records the layouts its results come out with.
// Partial results stay partial; the consumer that needs them whole pays.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Sharding/Layout.h"
#include "partita/Sharding/Propagation.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <map>
#include <tuple>

namespace partita {
#define GEN_PASS_DEF_PARTITIONPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

constexpr llvm::StringLiteral kOriginAttrName = "partita.origin";

/// What a value is, globally.
struct Layout {
  Sharding sharding;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
};

int64_t elementBytesOf(Type type) {
  unsigned bits =
      cast<ShapedType>(type).getElementType().getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

Sharding closed(Sharding sharding) {
  for (DimSharding &dim : sharding.dims)
    dim.open = false;
  sharding.priority.reset();
  return sharding;
}

std::string factorNames(const std::vector<int> &factors) {
  static const char letters[] = "ijklmnopqrstuvwxyzabcdefgh";
  std::string text;
  for (int factor : factors) {
    if (!text.empty())
      text += ", ";
    text += letters[factor % 26];
    if (factor >= 26)
      text += std::to_string(factor / 26);
  }
  return text;
}

class Partitioner {
public:
  Partitioner(ModuleOp module, MeshOp meshOp, const Interconnect &interconnect)
      : module(module), builder(module.getContext()),
        meshName(FlatSymbolRefAttr::get(meshOp.getSymNameAttr())),
        mesh(meshOp.getMesh().toMesh()), interconnect(interconnect) {}

  LogicalResult run();

private:
  ModuleOp module;
  OpBuilder builder;
  FlatSymbolRefAttr meshName;
  Mesh mesh;
  const Interconnect &interconnect;
  llvm::DenseMap<Value, Layout> layouts;
  /// Each op's sharding rule, computed on global shapes before any retyping.
  llvm::DenseMap<Operation *, OpShardingRule> globalRules;
  /// The sharding propagation gave each op result, before any retyping.
  llvm::DenseMap<Value, Sharding> propagated;
  /// Global argument/result layouts of every function.
  llvm::DenseMap<Operation *, std::vector<Layout>> argumentLayouts,
      resultLayouts;

  MLIRContext *context() { return module.getContext(); }

  ShardingAttr attrFor(const Sharding &sharding) {
    return ShardingAttr::fromSharding(context(), meshName, closed(sharding));
  }

  /// The sharding written on `value` (argument, result or op attribute), or
  /// replicated.
  Sharding declaredSharding(Value value);

  /// The local type of `global` under `sharding` (padded where a dimension
  /// does not divide); an error at `anchor` for a dynamic shape.
  FailureOr<RankedTensorType> localType(RankedTensorType global,
                                        const Sharding &sharding,
                                        Operation *anchor,
                                        const std::string &what);

  /// A 0-d zero of `element`.
  Value zeroScalar(Location loc, Type element);
  /// `value` padded with zeros at the end of `dim` to `size` (unchanged when
  /// it is that long already).
  Value padDimTo(Value value, int64_t dim, int64_t size, Location loc);
  /// The first `size` elements of `value` along `dim`.
  Value sliceDimTo(Value value, int64_t dim, int64_t size, Location loc);
  /// `operand` with the padding of dimension `dim` (split over `axes`, global
  /// size `size`) replaced by `neutral`: what a reduction over that
  /// dimension must see there.
  Value maskPadding(Value operand, int64_t dim, const std::vector<std::string> &axes,
                    int64_t size, PartialKind neutral, Location loc);
  /// Per (axes, global size, local size): this device's `i1` vector of which
  /// positions along such a dimension hold data, built before the op being
  /// partitioned (so shared by its operands).
  std::map<std::tuple<std::vector<std::string>, int64_t, int64_t>, Value>
      validPositions;
  /// Masks the padding of every operand dimension that a sharded reduction
  /// factor of `op` covers unevenly (docs/Partitioning.md).
  void maskReducedPadding(Operation *op, const OpShardingRule &rule,
                          const OpDecision &decision);

  /// An iota whose own dimension is split: only that dimension is built
  /// whole (a vector), sliced along it like the result, and broadcast to
  /// the local shape, so a batch x sequence x vocabulary iota (one-hot
  /// embeddings and targets) never exists whole on a device.
  LogicalResult partitionIotaAlongSplitDim(IotaOp iota, const Sharding &target);

  /// Emits the collectives that turn `value` into `to`; returns the new value.
  /// `why` says what needs the new layout; it is spelt out only when a
  /// collective is emitted (its partita.reason).
  FailureOr<Value> reshard(Value value, const Sharding &to, Operation *consumer,
                           llvm::function_ref<std::string()> why);
  /// reshard()'s work when the layouts differ.
  FailureOr<Value> emitReshard(Value value, const Sharding &to,
                               Operation *consumer,
                               llvm::function_ref<std::string()> why);
  /// Reshards already emitted, by source value and target layout: a value
  /// several ops need in the same layout moves once (when the earlier
  /// reshard dominates the later consumer).
  std::map<std::pair<void *, std::string>, Value> reshardCache;

  LogicalResult partitionSignature(func::FuncOp function);
  LogicalResult partitionBlock(Block &block);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionRuleOp(ShardingRuleOpInterface op);
  LogicalResult partitionLoop(LoopOp loop);
  LogicalResult partitionManual(ManualComputationOp manual);
  LogicalResult retypeResults(Operation *op,
                              const std::vector<Sharding> &results);
};

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
  FailureOr<Value> result = emitReshard(value, to, consumer, why);
  if (succeeded(result) && *result != value)
    reshardCache[key] = *result;
  return result;
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

LogicalResult Partitioner::partitionSignature(func::FuncOp function) {
  std::vector<Layout> &args = argumentLayouts[function];
  std::vector<Layout> &results = resultLayouts[function];
  SmallVector<Type> argTypes, resultTypes;
  // One argument or result: its local type, and its global layout.
  auto localize = [&](Type type, ShardingAttr attr, const std::string &what,
                      SmallVectorImpl<Type> &types,
                      std::vector<Layout> &layoutsOut) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      types.push_back(type);
      layoutsOut.push_back({});
      return success();
    }
    Sharding sharding =
        attr ? attr.toSharding()
             : Sharding::replicated(static_cast<int>(tensor.getRank()));
    FailureOr<RankedTensorType> local = localType(
        tensor, sharding, function, what + " of @" + function.getSymName().str());
    if (failed(local))
      return failure();
    types.push_back(*local);
    layoutsOut.push_back({sharding,
                          std::vector<int64_t>(tensor.getShape().begin(),
                                               tensor.getShape().end()),
                          elementBytesOf(tensor)});
    return success();
  };
  StringAttr originName = StringAttr::get(context(), kOriginAttrName);
  StringAttr globalShapeName =
      StringAttr::get(context(), PartitaDialect::kGlobalShapeAttrName);
  // A padded argument or result records its global shape: the local shape
  // times the shard counts would overstate it.
  auto globalShapeIfPadded = [&](Type type, const Layout &layout) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || isEvenlySharded(mesh, layout.sharding, layout.shape))
      return DenseI64ArrayAttr();
    return builder.getDenseI64ArrayAttr(layout.shape);
  };
  {
    FunctionAttrEditor attrs(function);
    for (auto [index, type] : llvm::enumerate(function.getArgumentTypes())) {
      if (failed(localize(type,
                          attrs.argOfType<ShardingAttr>(
                              index, PartitaDialect::kShardingAttrName),
                          "argument " + std::to_string(index), argTypes, args)))
        return failure();
      attrs.removeArg(index, originName);
      if (DenseI64ArrayAttr shape = globalShapeIfPadded(type, args.back()))
        attrs.setArg(index, globalShapeName, shape);
    }
    for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
      if (failed(localize(type,
                          attrs.resultOfType<ShardingAttr>(
                              index, PartitaDialect::kShardingAttrName),
                          "result " + std::to_string(index), resultTypes,
                          results)))
        return failure();
      attrs.removeResult(index, originName);
      if (DenseI64ArrayAttr shape = globalShapeIfPadded(type, results.back()))
        attrs.setResult(index, globalShapeName, shape);
    }
  }
  if (!function.isExternal())
    for (auto [arg, type, layout] :
         llvm::zip(function.getArguments(), argTypes, args)) {
      if (isa<RankedTensorType>(arg.getType()))
        layouts[arg] = layout;
      arg.setType(type);
    }
  function.setType(FunctionType::get(context(), argTypes, resultTypes));
  return success();
}

LogicalResult Partitioner::retypeResults(Operation *op,
                                         const std::vector<Sharding> &results) {
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    auto global = cast<RankedTensorType>(result.getType());
    FailureOr<RankedTensorType> local =
        localType(global, results[index], op, describeValue(result));
    if (failed(local))
      return failure();
    layouts[result] = {results[index],
                       std::vector<int64_t>(global.getShape().begin(),
                                            global.getShape().end()),
                       elementBytesOf(global)};
    result.setType(*local);
  }
  SmallVector<Attribute> attrs;
  for (const Sharding &sharding : results)
    attrs.push_back(attrFor(sharding));
  if (attrs.size() == 1)
    op->setAttr(PartitaDialect::kShardingAttrName, attrs.front());
  else if (!attrs.empty())
    op->setAttr(PartitaDialect::kShardingAttrName,
                ArrayAttr::get(context(), attrs));
  op->removeAttr(kOriginAttrName);
  return success();
}

LogicalResult Partitioner::partitionRuleOp(ShardingRuleOpInterface op) {
  Operation *operation = op.getOperation();
  // Rules depend on shapes: use the one taken while everything was global.
  OpShardingRule rule = globalRules.lookup(operation);
  // The op's little graph: its operands' actual layouts and the result
  // shardings propagation chose.
  // A partial operand that propagation made whole (several ops read it:
  // docs/Propagation.md, "Cost") is reduced once, before its first reader;
  // the reshard cache hands the same value to the others.
  for (auto [index, operand] : llvm::enumerate(operation->getOperands())) {
    auto it = propagated.find(operand);
    if (it == propagated.end() ||
        it->second.partialKind != PartialKind::None ||
        layouts.lookup(operand).sharding.partialKind == PartialKind::None)
      continue;
    Sharding whole = layouts.lookup(operand).sharding;
    whole.partialKind = PartialKind::None;
    whole.partialAxes.clear();
    FailureOr<Value> reduced =
        reshard(operand, whole, operation, [&] {
          return "operand " + std::to_string(index) + " of " +
                 describeOp(operation) +
                 " (read by several ops: reduced once)";
        });
    if (failed(reduced))
      return failure();
    operation->setOperand(index, *reduced);
  }
  PropagationProblem problem;
  problem.mesh = mesh;
  problem.interconnect = interconnect;
  // The one-op problem is decided directly: its op needs no name.
  PropagationOp node{rule, {}, {}, {}};
  std::vector<Sharding> shardings;
  for (Value operand : operation->getOperands()) {
    Layout layout = layouts.lookup(operand);
    PropagationTensor tensor;
    tensor.shape = layout.shape;
    tensor.elementBytes = layout.elementBytes;
    tensor.sharding = layout.sharding;
    tensor.annotated = true;
    node.operands.push_back(static_cast<int>(problem.tensors.size()));
    problem.tensors.push_back(tensor);
    shardings.push_back(layout.sharding);
  }
  for (Value result : operation->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    PropagationTensor tensor;
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.elementBytes = elementBytesOf(type);
    tensor.sharding = declaredSharding(result);
    tensor.annotated = true;
    node.results.push_back(static_cast<int>(problem.tensors.size()));
    problem.tensors.push_back(tensor);
    shardings.push_back(tensor.sharding);
  }
  problem.ops.push_back(node);
  OpDecision decision = decideOp(problem, 0, shardings);
  OpLayout layout = layoutUnderDecision(problem, 0, shardings, decision);

  for (auto [index, operand] : llvm::enumerate(operation->getOperands())) {
    // Which factors' axes changed, for the reason.
    std::vector<int> changed;
    const Sharding &current = layouts.lookup(operand).sharding;
    for (size_t d = 0; d < rule.operands[index].size(); ++d)
      if (d < current.dims.size() &&
          current.dims[d].axes != layout.operands[index].dims[d].axes)
        for (int factor : rule.operands[index][d])
          changed.push_back(factor);
    auto why = [&] {
      std::string text =
          "operand " + std::to_string(index) + " of " + describeOp(operation);
      if (!changed.empty())
        text += " (factor " + factorNames(changed) + ")";
      else if (current.partialKind != PartialKind::None)
        text += " (needs a whole value)";
      return text;
    };
    FailureOr<Value> resharded =
        reshard(operand, layout.operands[index], operation, why);
    if (failed(resharded))
      return failure();
    operation->setOperand(index, *resharded);
  }
  maskReducedPadding(operation, rule, decision);
  // Sizes held in attributes follow the local shapes.
  std::vector<Sharding> results = layout.results;
  if (failed(retypeResults(operation, results)))
    return failure();
  if (auto slice = dyn_cast<SliceOp>(operation)) {
    SmallVector<int64_t> limit(slice.getLimit());
    auto local = cast<RankedTensorType>(slice.getOperand().getType());
    for (size_t d = 0; d < limit.size(); ++d)
      if (slice.getStart()[d] == 0 && slice.getStride()[d] == 1 &&
          results[0].dims[d].axes.size() > 0)
        limit[d] = local.getDimSize(d);
    slice.setLimit(limit);
  }
  if (auto dynamicSlice = dyn_cast<DynamicSliceOp>(operation)) {
    SmallVector<int64_t> sizes(dynamicSlice.getSizes());
    auto local = cast<RankedTensorType>(dynamicSlice.getType());
    for (size_t d = 0; d < sizes.size(); ++d)
      sizes[d] = local.getDimSize(d);
    dynamicSlice.setSizes(sizes);
  }
  return success();
}

LogicalResult Partitioner::partitionLoop(LoopOp loop) {
  Block &body = loop.getBody().front();
  std::vector<Sharding> carried;
  for (Value result : loop.getResults())
    carried.push_back(declaredSharding(result));
  // Initial values take the carried layouts.
  for (auto [index, init] : llvm::enumerate(loop.getInits())) {
    FailureOr<Value> resharded =
        reshard(init, carried[index], loop, [&] {
          return "loop-carried value " + std::to_string(index) + " of " +
                 describeOp(loop);
        });
    if (failed(resharded))
      return failure();
    loop->setOperand(index, *resharded);
  }
  for (auto [index, arg] : llvm::enumerate(loop.getCarried())) {
    auto global = cast<RankedTensorType>(arg.getType());
    FailureOr<RankedTensorType> local =
        localType(global, carried[index], loop, describeValue(arg));
    if (failed(local))
      return failure();
    layouts[arg] = {carried[index],
                    std::vector<int64_t>(global.getShape().begin(),
                                         global.getShape().end()),
                    elementBytesOf(global)};
    arg.setType(*local);
  }
  BlockArgument counter = loop.getIterationNumber();
  layouts[counter] = {Sharding::replicated(0), {}, 4};
  if (failed(partitionBlock(body)))
    return failure();
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [index, value] : llvm::enumerate(yield.getValues())) {
    FailureOr<Value> resharded = reshard(value, carried[index], yield, [&] {
      return "yielded value " + std::to_string(index) + " of " +
             describeOp(loop);
    });
    if (failed(resharded))
      return failure();
    yield->setOperand(index, *resharded);
  }
  return retypeResults(loop, carried);
}

LogicalResult Partitioner::partitionManual(ManualComputationOp manual) {
  Block &body = manual.getBody().front();
  for (auto [index, operand] : llvm::enumerate(manual.getOperands())) {
    Sharding in =
        cast<ShardingAttr>(manual.getInShardings()[index]).toSharding();
    FailureOr<Value> resharded = reshard(operand, in, manual, [&] {
      return "in_sharding " + std::to_string(index) + " of " +
             describeOp(manual);
    });
    if (failed(resharded))
      return failure();
    // The body is written on local shapes: it runs as is.
    body.getArgument(index).replaceAllUsesWith(*resharded);
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [index, result] : llvm::enumerate(manual.getResults())) {
    Value local = yield.getValues()[index];
    auto global = cast<RankedTensorType>(result.getType());
    Sharding out =
        cast<ShardingAttr>(manual.getOutShardings()[index]).toSharding();
    layouts[local] = {out,
                      std::vector<int64_t>(global.getShape().begin(),
                                           global.getShape().end()),
                      elementBytesOf(global)};
    result.replaceAllUsesWith(local);
  }
  // Values the body computes on local shapes keep whatever layout they have;
  // only the yielded ones are described.
  for (Operation &inner : llvm::make_early_inc_range(body.without_terminator()))
    inner.moveBefore(manual);
  manual.erase();
  return success();
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    auto function = ret->getParentOfType<func::FuncOp>();
    const std::vector<Layout> &results = resultLayouts[function];
    for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      FailureOr<Value> resharded =
          reshard(operand, results[index].sharding, ret, [&] {
            return "result " + std::to_string(index) + " of @" +
                   function.getSymName().str();
          });
      if (failed(resharded))
        return failure();
      ret->setOperand(index, *resharded);
    }
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee)
      return call.emitError()
             << "cannot partition a call to an unknown function";
    const std::vector<Layout> &args = argumentLayouts[callee];
    const std::vector<Layout> &results = resultLayouts[callee];
    for (auto [index, operand] : llvm::enumerate(call.getOperands())) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      FailureOr<Value> resharded =
          reshard(operand, args[index].sharding, call, [&] {
            return "argument " + std::to_string(index) + " of the call to @" +
                   callee.getSymName().str();
          });
      if (failed(resharded))
        return failure();
      call->setOperand(index, *resharded);
    }
    std::vector<Sharding> shardings;
    for (const Layout &layout : results)
      shardings.push_back(layout.sharding);
    return retypeResults(call, shardings);
  }
  if (auto loop = dyn_cast<LoopOp>(op))
    return partitionLoop(loop);
  if (auto manual = dyn_cast<ManualComputationOp>(op))
    return partitionManual(manual);
  if (isa<YieldOp>(op))
    return success(); // Handled by the parent.
  if (auto logical = dyn_cast<LogicalConstraintOp>(op)) {
    // Rules never mapped it: an identity.
    logical.getResult().replaceAllUsesWith(logical.getInput());
    op->erase();
    return success();
  }
  if (isa<ShardingConstraintOp, ReshardOp>(op)) {
    Sharding target =
        isa<ReshardOp>(op)
            ? cast<ReshardOp>(op).getSharding().toSharding()
            : cast<ShardingConstraintOp>(op).getSharding().toSharding();
    FailureOr<Value> resharded =
        reshard(op->getOperand(0), target, op, [&] { return describeOp(op); });
    if (failed(resharded))
      return failure();
    op->getResult(0).replaceAllUsesWith(*resharded);
    op->erase();
    return success();
  }
  if (isa<ConstantOp, IotaOp>(op)) {
    Value result = op->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    Sharding target = declaredSharding(result);
    // A splat constant, or an iota along an unsharded dimension, is the same
    // on every device: built at the local shape, it never exists whole.
    auto splat = dyn_cast_if_present<DenseElementsAttr>(
        isa<ConstantOp>(op) ? cast<ConstantOp>(op).getValue() : Attribute());
    auto iota = dyn_cast<IotaOp>(op);
    bool local =
        target.partialKind == PartialKind::None &&
        ((splat && splat.isSplat()) ||
         (iota && target.dims[iota.getDim()].axes.empty()));
    if (local) {
      if (failed(retypeResults(op, {closed(target)})))
        return failure();
      if (splat)
        op->setAttr("value",
                    splat.resizeSplat(cast<ShapedType>(result.getType())));
      return success();
    }
    if (iota && target.partialKind == PartialKind::None)
      return partitionIotaAlongSplitDim(iota, target);
    // Otherwise built whole on every device, then sliced: no traffic.
    layouts[result] = {
        Sharding::replicated(static_cast<int>(type.getRank())),
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
        elementBytesOf(type)};
    op->removeAttr(PartitaDialect::kShardingAttrName);
    op->removeAttr(kOriginAttrName);
    if (!op->getNextNode())
      return success();
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : result.getUses())
      uses.push_back(&use);
    FailureOr<Value> sliced = reshard(result, target, op->getNextNode(),
                                      [&] { return "slice of " + describeOp(op); });
    if (failed(sliced))
      return failure();
    for (OpOperand *use : uses)
      use->set(*sliced);
    return success();
  }
  if (auto withRule = dyn_cast<ShardingRuleOpInterface>(op))
    return partitionRuleOp(withRule);

  // An op we know nothing about runs on whole values only.
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    Layout layout = layouts.lookup(operand);
    if (!layout.sharding.isReplicated())
      return op->emitError() << "cannot partition '" << op->getName()
                             << "': it has no sharding rule and its operand "
                             << describeValue(operand) << " is sharded "
                             << closed(layout.sharding).toString();
  }
  std::vector<Sharding> results;
  for (Value result : op->getResults())
    results.push_back(Sharding::replicated(
        static_cast<int>(cast<RankedTensorType>(result.getType()).getRank())));
  return retypeResults(op, results);
}

LogicalResult Partitioner::partitionIotaAlongSplitDim(IotaOp iota,
                                                      const Sharding &target) {
  Value result = iota.getResult();
  auto type = cast<RankedTensorType>(result.getType());
  int64_t dim = static_cast<int64_t>(iota.getDim());
  OpBuilder builder(iota);
  auto lineType =
      RankedTensorType::get({type.getDimSize(dim)}, type.getElementType());
  Value line = IotaOp::create(builder, iota.getLoc(), lineType, 0);
  layouts[line] = {Sharding::replicated(1), {type.getDimSize(dim)},
                   elementBytesOf(type)};
  Sharding lineSharding = Sharding::replicated(1);
  lineSharding.dims[0] = target.dims[dim];
  FailureOr<Value> slicedLine = reshard(
      line, lineSharding, iota, [&] { return "slice of " + describeOp(iota); });
  if (failed(slicedLine))
    return failure();
  FailureOr<RankedTensorType> local =
      localType(type, closed(target), iota, describeValue(result));
  if (failed(local))
    return failure();
  builder.setInsertionPoint(iota);
  auto broadcast =
      BroadcastOp::create(builder, iota.getLoc(), *local, *slicedLine,
                          builder.getDenseI64ArrayAttr({dim}));
  layouts[broadcast.getResult()] = {
      target, std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
      elementBytesOf(type)};
  broadcast->setAttr(PartitaDialect::kShardingAttrName, attrFor(target));
  result.replaceAllUsesWith(broadcast.getResult());
  layouts.erase(result);
  iota.erase();
  return success();
}

LogicalResult Partitioner::partitionBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partitionOp(op)))
      return failure();
  return success();
}

LogicalResult Partitioner::run() {
  module.walk([&](ShardingRuleOpInterface op) {
    globalRules[op.getOperation()] = op.getShardingRule();
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        propagated[result] = declaredSharding(result);
  });
  SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
  for (func::FuncOp function : functions)
    if (failed(partitionSignature(function)))
      return failure();
  for (func::FuncOp function : functions)
    if (!function.isExternal() &&
        failed(partitionBlock(function.getBody().front())))
      return failure();
  module->setAttr(PartitaDialect::kPartitionedAttrName,
                  UnitAttr::get(context()));
  return success();
}

struct PartitionPass : public partita::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr(PartitaDialect::kPartitionedAttrName))
      return;
    // The mesh: the one the shardings name (propagation guarantees one).
    FlatSymbolRefAttr meshName;
    module.walk([&](Operation *op) {
      auto check = [&](Attribute attr) {
        if (auto sharding = dyn_cast_or_null<ShardingAttr>(attr))
          if (!meshName)
            meshName = sharding.getMesh();
      };
      check(op->getAttr(PartitaDialect::kShardingAttrName));
      if (auto function = dyn_cast<func::FuncOp>(op))
        for (unsigned i = 0; i < function.getNumArguments(); ++i)
          check(function.getArgAttr(i, PartitaDialect::kShardingAttrName));
    });
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    MeshOp mesh = meshName ? lookupMesh(module, meshName)
                           : (meshes.size() == 1 ? meshes.front() : MeshOp());
    if (!mesh)
      return; // Nothing sharded: the program is its own local program.
    Interconnect interconnect;
    if (!interconnectFile.empty()) {
      Expected<Interconnect> parsed = readInterconnect(interconnectFile);
      if (!parsed) {
        module.emitError() << parsed.status().message();
        return signalPassFailure();
      }
      interconnect = *parsed;
    }
    Partitioner partitioner(module, mesh, interconnect);
    if (failed(partitioner.run()))
      signalPassFailure();
  }
};

} // namespace
