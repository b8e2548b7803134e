//===- Autodiff.cpp - Reverse-mode differentiation -----------------------===//
//
// The gradient function is the forward function followed by its reverse
// sweep: ops are visited last to first, each adding its operands' adjoints
// from its results' adjoints by its kind's rule in the gradient table
// (GradientRules.cpp; docs/Autodiff.md lists the rules). A loop is
// rewritten to save its carries at every iteration; its adjoint is a loop
// running backwards that reloads the carries, recomputes the body and
// differentiates that copy, carrying the adjoints of the carries and of the
// outer values the body reads. The optimizer step built on the gradient
// is TrainStep.cpp.
//
//===----------------------------------------------------------------------===//

#include "partita/Transforms/Autodiff.h"
#include "AutodiffEmitter.h"
#include "GradientRules.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace partita;
using namespace partita::autodiff;

namespace {

/// The reverse sweep over a list of ops.
class Reverse {
public:
  explicit Reverse(OpBuilder &builder) : builder(builder) {}

  /// Adds `gradient` to the adjoint of `value` (floats only; nothing for
  /// values that depend on no argument, such as a mask built from iotas and
  /// constants, whose adjoint no gradient needs).
  void accumulate(Value value, Value gradient) {
    if (!gradient || !isFloatTensor(value) || isConstantDerived(value))
      return;
    auto it = adjoints.find(value);
    if (it == adjoints.end()) {
      adjoints[value] = gradient;
      return;
    }
    Emitter e{builder, value.getLoc()};
    it->second = e.add(it->second, gradient);
  }
  Value adjoint(Value value) const { return adjoints.lookup(value); }

  /// Visits `ops` last to first. Fails with a message naming the op.
  /// `segmentOf` (optional) names each op's recomputation segment (-1:
  /// none): a segment is recomputed from its inputs when the sweep reaches
  /// it, and its copy is differentiated instead of the original.
  LogicalResult run(ArrayRef<Operation *> ops,
                    ArrayRef<int> segmentOf = {}) {
    for (size_t k = ops.size(); k-- > 0;) {
      int segment = segmentOf.empty() ? -1 : segmentOf[k];
      if (segment < 0) {
        if (failed(visit(ops[k])))
          return failure();
        continue;
      }
      size_t first = k;
      while (first > 0 && segmentOf[first - 1] == segment)
        --first;
      if (failed(recompute(ops.slice(first, k - first + 1))))
        return failure();
      k = first;
    }
    return success();
  }

  std::string error;
  /// Inside a manual computation's body: collectives have transposes there
  /// (per-device cotangents; a replicated value's cotangent is the sum of
  /// its copies').
  bool manualBody = false;

private:
  OpBuilder &builder;
  DenseMap<Value, Value> adjoints;
  DenseMap<Value, bool> constantDerived;

  /// Whether `value` is computed from constants and iotas alone (no block
  /// argument, no op with regions on the way).
  bool isConstantDerived(Value value) {
    auto known = constantDerived.find(value);
    if (known != constantDerived.end())
      return known->second;
    Operation *op = value.getDefiningOp();
    bool result = op && op->getNumRegions() == 0;
    for (Value operand : op ? op->getOperands() : ValueRange{})
      if (result)
        result = isConstantDerived(operand);
    constantDerived[value] = result;
    return result;
  }

  LogicalResult fail(Operation *op, const std::string &why) {
    error = describeOp(op) + ": " + why;
    return failure();
  }

  /// A gradient rule's view of this sweep while it visits `op`.
  class OpContext final : public GradientContext {
  public:
    OpContext(Reverse &sweep, Operation *op, Value g)
        : GradientContext(op, sweep.builder, g), sweep(sweep), op(op) {}
    Value adjoint(Value value) const override { return sweep.adjoint(value); }
    void accumulate(Value value, Value gradient) override {
      sweep.accumulate(value, gradient);
    }
    LogicalResult fail(const std::string &why) override {
      return sweep.fail(op, why);
    }

  private:
    Reverse &sweep;
    Operation *op;
  };

  /// Differentiates one op: loops, manual computations and collectives
  /// here, every other op by its rule in the gradient table.
  LogicalResult visit(Operation *op);
  LogicalResult visitLoop(LoopOp loop);
  LogicalResult visitManual(ManualComputationOp manual);
  LogicalResult recompute(ArrayRef<Operation *> segment);
  LogicalResult visitCollective(Operation *op, Value g);
};

LogicalResult Reverse::visit(Operation *op) {
  if (auto loop = dyn_cast<LoopOp>(op))
    return visitLoop(loop);
  if (auto manual = dyn_cast<ManualComputationOp>(op))
    return visitManual(manual);
  // Results without an adjoint contribute nothing, nor does an op marked
  // as stopping the gradient.
  if (op->hasAttr(PartitaDialect::kStopGradientAttrName))
    return success();
  bool any = false;
  for (Value result : op->getResults())
    any |= adjoints.count(result) != 0;
  if (!any)
    return success();
  Value g = op->getNumResults() == 1 ? adjoint(op->getResult(0)) : Value();
  if (isa<AllGatherOp, AllSliceOp, AllReduceOp, ReduceScatterOp, AllToAllOp,
          CollectivePermuteOp>(op)) {
    if (!manualBody)
      return fail(op, "collectives outside manual computations have no "
                      "gradient rule: differentiate before partitioning");
    return visitCollective(op, g);
  }
  const GradientRule *rule = lookupGradientRule(op);
  if (!rule)
    return fail(op, "no gradient rule for '" +
                        op->getName().getStringRef().str() + "'");
  OpContext context(*this, op, g);
  return (*rule)(op, context);
}

namespace {

/// The values from outside `loop` its body reads (directly or in nested
/// regions).
llvm::SetVector<Value> outerValuesOf(LoopOp loop) {
  llvm::SetVector<Value> closure;
  loop.getBody().walk([&](Operation *inner) {
    for (Value operand : inner->getOperands()) {
      Region *home = operand.getParentRegion();
      if (!loop.getBody().isAncestor(home))
        closure.insert(operand);
    }
  });
  return closure;
}

} // namespace

LogicalResult Reverse::visitLoop(LoopOp loop) {
  bool any = false;
  for (Value result : loop.getResults())
    any |= adjoints.count(result) != 0;
  if (!any)
    return success();
  Location loc = loop.getLoc();
  int64_t trips = static_cast<int64_t>(loop.getTripCount());
  Block &body = loop.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  ValueRange carried = loop.getCarried();
  size_t count = carried.size();

  llvm::SetVector<Value> closure = outerValuesOf(loop);

  // 1. The forward loop, saving every iteration's carries.
  OpBuilder forward(loop);
  Emitter fe{forward, loc};
  SmallVector<Value> inits(loop.getInits());
  SmallVector<Type> types(loop.getResultTypes());
  for (Value value : carried) {
    Shape stacked = shapeOf(value);
    stacked.insert(stacked.begin(), trips);
    auto type =
        RankedTensorType::get(stacked, tensorTypeOf(value).getElementType());
    inits.push_back(fe.splat(0, type));
    types.push_back(type);
  }
  auto saving = forward.create<LoopOp>(loc, types, inits,
                                       static_cast<uint64_t>(trips));
  Block *savingBody = new Block();
  saving.getBody().push_back(savingBody);
  IRMapping map;
  map.map(body.getArgument(0),
          savingBody->addArgument(body.getArgument(0).getType(), loc));
  for (Value value : carried)
    map.map(value, savingBody->addArgument(value.getType(), loc));
  SmallVector<Value> stacks;
  for (Type type : llvm::drop_begin(types, count))
    stacks.push_back(savingBody->addArgument(type, loc));
  {
    OpBuilder inside = OpBuilder::atBlockEnd(savingBody);
    Emitter ie{inside, loc};
    Value zero = ie.splat(0, RankedTensorType::get({}, forward.getI32Type()));
    SmallVector<Value> yields;
    for (Operation &op : body.without_terminator())
      inside.clone(op, map);
    for (Value value : yield.getValues())
      yields.push_back(map.lookupOrDefault(value));
    for (size_t k = 0; k < count; ++k) {
      Shape one = shapeOf(carried[k]);
      one.insert(one.begin(), 1);
      SmallVector<Value> starts(one.size(), zero);
      starts[0] = savingBody->getArgument(0);
      yields.push_back(ie.dynamicUpdateSlice(
          stacks[k], ie.reshape(map.lookup(carried[k]), one), starts));
    }
    inside.create<YieldOp>(loc, yields);
  }

  // 2. Backwards: reload the carries, recompute the body, differentiate it.
  Emitter e{builder, loc};
  SmallVector<Value> seeds;
  SmallVector<size_t> floatCarries;
  for (size_t k = 0; k < count; ++k)
    if (isFloatTensor(carried[k])) {
      floatCarries.push_back(k);
      Value seed = adjoint(loop.getResult(k));
      seeds.push_back(seed ? seed : e.zerosLike(loop.getResult(k)));
    }
  SmallVector<Value> floatClosure;
  for (Value value : closure)
    if (isFloatTensor(value)) {
      floatClosure.push_back(value);
      seeds.push_back(e.zerosLike(value));
    }
  auto [backward, backBody] = e.loop(seeds, trips);
  Value iteration = backBody->getArgument(0);
  auto adjointArgs = llvm::drop_begin(backBody->getArguments());
  SmallVector<Value> carryAdjoints(adjointArgs.begin(),
                                   adjointArgs.begin() + floatCarries.size());
  SmallVector<Value> closureAdjoints(adjointArgs.begin() + floatCarries.size(),
                                     adjointArgs.end());
  {
    OpBuilder inside = OpBuilder::atBlockEnd(backBody);
    Emitter ie{inside, loc};
    Type counter = body.getArgument(0).getType();
    Value index = ie.sub(ie.splat(static_cast<double>(trips - 1), counter),
                         iteration);
    Value zero = ie.splat(0, counter);
    IRMapping again;
    again.map(body.getArgument(0), index);
    SmallVector<Value> loaded;
    for (size_t k = 0; k < count; ++k) {
      Shape one = shapeOf(carried[k]);
      one.insert(one.begin(), 1);
      SmallVector<Value> starts(one.size(), zero);
      starts[0] = index;
      Value value = ie.reshape(
          ie.dynamicSlice(saving.getResult(count + k), starts, one),
          shapeOf(carried[k]));
      again.map(carried[k], value);
      loaded.push_back(value);
    }
    SmallVector<Operation *> recomputed;
    for (Operation &op : body.without_terminator())
      recomputed.push_back(inside.clone(op, again));
    Reverse inner(inside);
    // A loop inside a manual computation may hold its collectives.
    inner.manualBody = manualBody;
    for (size_t i = 0; i < floatCarries.size(); ++i)
      inner.accumulate(again.lookupOrDefault(yield.getValues()[floatCarries[i]]),
                       carryAdjoints[i]);
    if (failed(inner.run(recomputed))) {
      error = inner.error;
      return failure();
    }
    SmallVector<Value> next;
    for (size_t k : floatCarries) {
      Value g = inner.adjoint(loaded[k]);
      next.push_back(g ? g : ie.zerosLike(loaded[k]));
    }
    for (size_t i = 0; i < floatClosure.size(); ++i) {
      Value g = inner.adjoint(floatClosure[i]);
      next.push_back(g ? ie.add(closureAdjoints[i], g) : closureAdjoints[i]);
    }
    inside.create<YieldOp>(loc, next);
  }
  for (size_t i = 0; i < floatCarries.size(); ++i)
    accumulate(loop.getInits()[floatCarries[i]], backward.getResult(i));
  for (size_t i = 0; i < floatClosure.size(); ++i)
    accumulate(floatClosure[i],
               backward.getResult(floatCarries.size() + i));

  // The saving loop replaces the original in the forward program.
  for (size_t k = 0; k < count; ++k)
    loop.getResult(k).replaceAllUsesWith(saving.getResult(k));
  loop.erase();
  return success();
}

LogicalResult Reverse::recompute(ArrayRef<Operation *> segment) {
  llvm::SmallPtrSet<Operation *, 32> members(segment.begin(), segment.end());
  // The segment's inputs: values it reads that it does not define.
  llvm::SetVector<Value> inputs;
  for (Operation *op : segment)
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *def = operand.getDefiningOp();
        Region *home = operand.getParentRegion();
        bool insideNested = op->getNumRegions() && op->isAncestor(home->getParentOp());
        if (insideNested)
          continue;
        if (!def || !members.count(def))
          inputs.insert(operand);
      }
    });
  // Any adjoint on the segment's values?
  bool any = false;
  for (Operation *op : segment)
    for (Value result : op->getResults())
      any |= adjoints.count(result) != 0;
  if (!any)
    return success();
  Location loc = segment.front()->getLoc();
  SmallVector<Type> types;
  for (Value input : inputs)
    types.push_back(input.getType());
  auto barrier = builder.create<OptimizationBarrierOp>(
      loc, types, SmallVector<Value>(inputs.begin(), inputs.end()));
  IRMapping map;
  for (auto [input, kept] : llvm::zip(inputs, barrier.getResults()))
    map.map(input, kept);
  SmallVector<Operation *> copies;
  for (Operation *op : segment)
    copies.push_back(builder.clone(*op, map));
  for (auto [op, copy] : llvm::zip(segment, copies))
    for (auto [result, copied] :
         llvm::zip(op->getResults(), copy->getResults()))
      if (Value g = adjoint(result))
        accumulate(copied, g);
  // The copy is differentiated; the barrier passes the inputs' adjoints on.
  if (failed(run(copies)))
    return failure();
  return visit(barrier);
}

LogicalResult Reverse::visitCollective(Operation *op, Value g) {
  Location loc = op->getLoc();
  Type type = op->getOperand(0).getType();
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    if (reduce.getKind() != ReductionKind::Sum)
      return fail(op, "no gradient rule for an all_reduce other than sum");
    // y_d = sum_d' x_d': every x_d' gets the sum of the cotangents.
    accumulate(reduce.getOperand(),
               builder.create<AllReduceOp>(loc, type, ReductionKindAttr::get(builder.getContext(), ReductionKind::Sum), g,
                                           reduce.getMeshAttr(),
                                           reduce.getAxes()));
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    accumulate(gather.getOperand(),
               builder.create<ReduceScatterOp>(
                   loc, type, ReductionKindAttr::get(builder.getContext(), ReductionKind::Sum), g, gather.getMeshAttr(),
                   gather.getAxes(), gather.getDimAttr()));
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    if (scatter.getKind() != ReductionKind::Sum)
      return fail(op, "no gradient rule for a reduce_scatter other than sum");
    accumulate(scatter.getOperand(),
               builder.create<AllGatherOp>(loc, type, g, scatter.getMeshAttr(),
                                           scatter.getAxes(),
                                           scatter.getDimAttr()));
  } else if (auto toAll = dyn_cast<AllToAllOp>(op)) {
    accumulate(toAll.getOperand(),
               builder.create<AllToAllOp>(loc, type, g, toAll.getMeshAttr(),
                                          toAll.getAxes(),
                                          toAll.getConcatDimAttr(),
                                          toAll.getSplitDimAttr()));
  } else if (auto permute = dyn_cast<CollectivePermuteOp>(op)) {
    SmallVector<int64_t> inverse;
    ArrayRef<int64_t> pairs = permute.getPairs();
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      inverse.push_back(pairs[i + 1]);
      inverse.push_back(pairs[i]);
    }
    accumulate(permute.getOperand(),
               builder.create<CollectivePermuteOp>(
                   loc, type, g, permute.getMeshAttr(), permute.getAxes(),
                   builder.getDenseI64ArrayAttr(inverse)));
  } else {
    return fail(op, "no gradient rule for '" +
                        op->getName().getStringRef().str() +
                        "' in a manual computation");
  }
  return success();
}

/// The manual axes along which a value with `sharding` is replicated (no
/// dimension names them), and the product of their sizes.
std::pair<SmallVector<StringRef>, int64_t>
replicatedManualAxes(ManualComputationOp manual, ShardingAttr sharding) {
  MeshOp mesh = lookupMesh(manual, sharding.getMesh());
  Mesh axes = mesh.getMesh().toMesh();
  std::vector<std::string> used = sharding.toSharding().dimAxes();
  SmallVector<StringRef> replicated;
  int64_t size = 1;
  for (Attribute attr : manual.getManualAxes()) {
    StringRef axis = cast<StringAttr>(attr).getValue();
    if (llvm::is_contained(used, axis.str()))
      continue;
    replicated.push_back(axis);
    size *= axes.axisSize(axis.str());
  }
  return {replicated, size};
}

LogicalResult Reverse::visitManual(ManualComputationOp manual) {
  bool any = false;
  for (Value result : manual.getResults())
    any |= adjoints.count(result) != 0;
  if (!any)
    return success();
  Location loc = manual.getLoc();
  Block &body = manual.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  Emitter e{builder, loc};
  // Backward manual computation: inputs are the forward operands (to
  // recompute the body) and the results' cotangents; outputs are the
  // operands' cotangents, laid out as the operands.
  SmallVector<Value> operands(manual.getOperands());
  SmallVector<Attribute> inShardings(manual.getInShardings().begin(),
                                     manual.getInShardings().end());
  for (auto [index, result] : llvm::enumerate(manual.getResults())) {
    Value g = adjoint(result);
    operands.push_back(g ? g : e.zerosLike(result));
    inShardings.push_back(manual.getOutShardings()[index]);
  }
  SmallVector<Type> resultTypes;
  for (Value operand : manual.getOperands())
    resultTypes.push_back(operand.getType());
  auto backward = builder.create<ManualComputationOp>(
      loc, resultTypes, operands, builder.getArrayAttr(inShardings),
      manual.getInShardings(), manual.getManualAxes());
  Block *backBody = new Block();
  backward.getBody().push_back(backBody);
  IRMapping again;
  for (BlockArgument arg : body.getArguments())
    again.map(arg, backBody->addArgument(arg.getType(), loc));
  SmallVector<Value> cotangents;
  for (Value yielded : yield.getValues())
    cotangents.push_back(backBody->addArgument(yielded.getType(), loc));
  OpBuilder inside = OpBuilder::atBlockEnd(backBody);
  Emitter ie{inside, loc};
  SmallVector<Operation *> recomputed;
  for (Operation &op : body.without_terminator())
    recomputed.push_back(inside.clone(op, again));
  Reverse inner(inside);
  inner.manualBody = true;
  for (auto [index, yielded] : llvm::enumerate(yield.getValues())) {
    if (!isFloatTensor(yielded))
      continue;
    auto sharding = cast<ShardingAttr>(manual.getOutShardings()[index]);
    if (sharding.toSharding().partialKind != PartialKind::None) {
      error = describeOp(manual) + ": no gradient rule for partial results "
                                   "of manual computations";
      return failure();
    }
    // A result replicated over k manual devices is one value held k times:
    // each copy gets 1/k of its cotangent.
    int64_t copies = replicatedManualAxes(manual, sharding).second;
    Value g = cotangents[index];
    if (copies > 1)
      g = ie.div(g, ie.splat(static_cast<double>(copies), g.getType()));
    inner.accumulate(again.lookupOrDefault(yielded), g);
  }
  if (failed(inner.run(recomputed))) {
    error = inner.error;
    return failure();
  }
  SmallVector<Value> outputs;
  for (auto [index, arg] : llvm::enumerate(body.getArguments())) {
    Value local = again.lookup(arg);
    Value g = isFloatTensor(arg) ? inner.adjoint(local) : Value();
    if (!g) {
      outputs.push_back(ie.zerosLike(local));
      continue;
    }
    // An operand replicated over manual devices: its cotangent is the sum
    // of its copies'.
    auto sharding = cast<ShardingAttr>(manual.getInShardings()[index]);
    auto [axes, copies] = replicatedManualAxes(manual, sharding);
    if (copies > 1)
      g = inside.create<AllReduceOp>(loc, g.getType(), ReductionKindAttr::get(inside.getContext(), ReductionKind::Sum), g,
                                     sharding.getMesh(),
                                     inside.getStrArrayAttr(axes));
    outputs.push_back(g);
  }
  inside.create<YieldOp>(loc, outputs);
  for (auto [index, operand] : llvm::enumerate(manual.getOperands()))
    if (isFloatTensor(operand))
      accumulate(operand, backward.getResult(index));
  return success();
}

} // namespace

/// Erases every op without memory effects whose results nobody reads,
/// users before producers, nested regions included.
static void eraseDeadOps(Region &region) {
  SmallVector<Operation *> ops;
  region.walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (!op->hasTrait<OpTrait::IsTerminator>() && mlir::isOpTriviallyDead(op))
      op->erase();
}

Expected<func::FuncOp> partita::buildGradient(func::FuncOp loss,
                                              const std::vector<unsigned> &wrt,
                                              const std::string &name,
                                              Remat remat,
                                              bool keepOtherResults) {
  if (loss.isExternal())
    return Status::error("@" + loss.getSymName().str() + " has no body");
  if (loss.getNumResults() == 0 ||
      !isa<RankedTensorType>(loss.getResultTypes()[0]) ||
      cast<RankedTensorType>(loss.getResultTypes()[0]).getRank() != 0 ||
      !isa<FloatType>(
          cast<RankedTensorType>(loss.getResultTypes()[0]).getElementType()))
    return Status::error("@" + loss.getSymName().str() +
                         " must return a scalar float loss first");
  for (unsigned index : wrt)
    if (index >= loss.getNumArguments() ||
        !isFloatTensor(loss.getArgument(index)))
      return Status::error("cannot differentiate @" +
                           loss.getSymName().str() + " with respect to "
                           "argument " + std::to_string(index) +
                           ": not a float tensor argument");
  auto gradient = cast<func::FuncOp>(loss->clone());
  gradient.setSymName(name);
  SymbolTable::setSymbolVisibility(gradient, SymbolTable::Visibility::Public);
  loss->getBlock()->getOperations().insertAfter(Block::iterator(loss),
                                                gradient);
  inlineCalls(gradient);
  Block &body = gradient.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value value = ret.getOperand(0);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  OpBuilder builder(ret);
  Reverse reverse(builder);
  reverse.accumulate(value, Emitter{builder, ret.getLoc()}.splat(
                                1, value.getType()));
  // Recomputation segments: the layer an op's name starts with, or all.
  std::vector<int> segmentOf(ops.size(), -1);
  if (remat == Remat::Full) {
    std::fill(segmentOf.begin(), segmentOf.end(), 0);
  } else if (remat == Remat::PerLayer) {
    std::map<std::string, int> layers;
    for (size_t k = 0; k < ops.size(); ++k) {
      auto named = dyn_cast<NameLoc>(ops[k]->getLoc());
      if (!named)
        continue;
      StringRef text = named.getName().getValue();
      StringRef layer = text.take_until([](char c) { return c == '.'; });
      if (!layer.starts_with("layer") || layer.size() == 5 ||
          !llvm::all_of(layer.drop_front(5), llvm::isDigit))
        continue;
      segmentOf[k] = layers.emplace(layer.str(), layers.size()).first->second;
    }
  }
  if (failed(reverse.run(ops, segmentOf))) {
    gradient.erase();
    return Status::error(reverse.error);
  }
  SmallVector<Value> results = {value};
  for (unsigned index : wrt) {
    Value arg = gradient.getArgument(index);
    Value g = reverse.adjoint(arg);
    results.push_back(g ? g : Emitter{builder, ret.getLoc()}.zerosLike(arg));
  }
  if (keepOtherResults)
    llvm::append_range(results, ret.getOperands().drop_front());
  builder.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> types;
  for (Value result : results)
    types.push_back(result.getType());
  gradient.setFunctionType(
      builder.getFunctionType(gradient.getArgumentTypes(), types));
  gradient.removeResAttrsAttr();
  // The sweep differentiates every operand, also those no parameter
  // reaches (a one-hot of the tokens: its adjoint is batch x sequence x
  // vocabulary, 500 GiB per device of a 65B GPT under FSDP). Nothing reads
  // those adjoints; they go before anything partitions or plans them.
  eraseDeadOps(gradient.getBody());
  return gradient;
}
