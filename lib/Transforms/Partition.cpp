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
#include "Partitioner.h"
#include "ReshardScale.h"

namespace partita {
#define GEN_PASS_DEF_PARTITIONPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;
using namespace partita::partitioning;

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
    tensor.reshardScale = reshardScaleOf(operand);
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
        text += layout.operands[index].partialKind != PartialKind::None
                    ? " (joins a sum over fewer axes)"
                    : " (needs a whole value)";
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
  if (auto gather = dyn_cast<GatherOp>(operation)) {
    const std::vector<std::string> &rowAxes =
        decision.factorAxes[rule.operands[0][0].front()];
    if (!rowAxes.empty() && failed(localizeRowLookup(gather, rowAxes)))
      return failure();
  }
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

LogicalResult
Partitioner::localizeRowLookup(GatherOp gather,
                               const std::vector<std::string> &rowAxes) {
  // The table's rows are split over `rowAxes`: each device holds the rows
  // [offset, offset + local) of the global table. An index is rebased to
  // its local row, clamped, and its row zeroed where the device does not
  // hold it; the sum over `rowAxes` (the result is partial there) is the
  // lookup.
  Location loc = gather.getLoc();
  Value table = gather.getTable(), indices = gather.getIndices();
  Layout tableLayout = layouts.lookup(table);
  auto localTable = cast<RankedTensorType>(table.getType());
  auto indexType = cast<RankedTensorType>(indices.getType());
  Type indexElement = indexType.getElementType();
  int64_t globalRows = tableLayout.shape.empty() ? localTable.getDimSize(0)
                                                 : tableLayout.shape[0];
  int64_t localRows = localTable.getDimSize(0);
  // The global row id of each local row: an iota over the rows, split like
  // them (padding included).
  OpBuilder builder(gather);
  auto lineType = RankedTensorType::get({globalRows}, indexElement);
  Value line = IotaOp::create(builder, loc, lineType, 0);
  layouts[line] = {Sharding::replicated(1), {globalRows},
                   elementBytesOf(lineType)};
  Sharding lineSharding = Sharding::replicated(1);
  lineSharding.dims[0].axes = rowAxes;
  FailureOr<Value> rowIds = reshard(line, lineSharding, gather, [&] {
    return "row offsets of " + describeOp(gather);
  });
  if (failed(rowIds))
    return failure();
  builder.setInsertionPoint(gather);
  auto oneType = RankedTensorType::get({1}, indexElement);
  Value first = SliceOp::create(builder, loc, oneType, *rowIds,
                                builder.getDenseI64ArrayAttr({0}),
                                builder.getDenseI64ArrayAttr({1}),
                                builder.getDenseI64ArrayAttr({1}));
  Value offset = ReshapeOp::create(
      builder, loc, RankedTensorType::get({}, indexElement), first);
  SmallVector<int64_t> none;
  Value offsets = BroadcastOp::create(builder, loc, indexType, offset,
                                      builder.getDenseI64ArrayAttr(none));
  Value local = SubOp::create(builder, loc, indexType, indices, offsets);
  auto splatOf = [&](int64_t value) -> Value {
    return ConstantOp::create(
        builder, loc, indexType,
        DenseElementsAttr::get(indexType,
                               builder.getIntegerAttr(indexElement, value)));
  };
  auto boolType = RankedTensorType::get(indexType.getShape(),
                                        builder.getI1Type());
  Value atLeast = CompareOp::create(builder, loc, boolType,
                                    CompareDirection::GE, local, splatOf(0));
  Value below = CompareOp::create(builder, loc, boolType, CompareDirection::LT,
                                  local, splatOf(localRows));
  Value held = AndOp::create(builder, loc, boolType, atLeast, below);
  Value clamped = MaxOp::create(builder, loc, indexType, local, splatOf(0));
  clamped = MinOp::create(builder, loc, indexType, clamped,
                          splatOf(std::max<int64_t>(localRows - 1, 0)));
  gather->setOperand(1, clamped);
  // Rows the device does not hold become zeros.
  Value result = gather.getResult();
  auto resultType = cast<RankedTensorType>(result.getType());
  builder.setInsertionPointAfter(gather);
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < indexType.getRank(); ++d)
    keep.push_back(d);
  auto maskType =
      RankedTensorType::get(resultType.getShape(), builder.getI1Type());
  Value mask = BroadcastOp::create(builder, loc, maskType, held,
                                   builder.getDenseI64ArrayAttr(keep));
  Type element = resultType.getElementType();
  Value zeros = ConstantOp::create(
      builder, loc, resultType,
      DenseElementsAttr::get(resultType, builder.getZeroAttr(element)));
  auto select = SelectOp::create(builder, loc, resultType, mask, result, zeros);
  result.replaceAllUsesExcept(select.getResult(), select);
  layouts[select.getResult()] = layouts.lookup(result);
  return success();
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
  eraseUnusedBroadcasts();
  module->setAttr(PartitaDialect::kPartitionedAttrName,
                  UnitAttr::get(context()));
  return success();
}

namespace {

struct PartitionPass : public partita::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;
  PartitionPass(const PartitionPassOptions &options,
                std::shared_ptr<const Interconnect> links)
      : PartitionPassBase(options), links(std::move(links)) {}

  /// The interconnect given as a value, if any (else interconnectFile).
  std::shared_ptr<const Interconnect> links;

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
    Interconnect interconnect = links ? *links : Interconnect();
    if (!links && !interconnectFile.empty()) {
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

std::unique_ptr<mlir::Pass>
partita::createPartitionPass(const PartitionPassOptions &options,
                             std::shared_ptr<const Interconnect> links) {
  return std::make_unique<PartitionPass>(options, std::move(links));
}
