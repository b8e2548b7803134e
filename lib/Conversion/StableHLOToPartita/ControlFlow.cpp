//===- ControlFlow.cpp - Loops and manual computations into partita -------===//
//
// Conversions of ops with regions: a counted stablehlo.while (lax.scan,
// fori_loop) becomes a partita.loop, sdy.manual_computation (shard_map) a
// partita.manual_computation; their bodies are moved over and imported.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "partita/Sharding/Mesh.h"

#include "mlir/AsmParser/AsmParser.h"

namespace partita {
namespace stablehlo_import {

namespace {

/// The integer a constant (stablehlo or partita) holds, if any.
std::optional<int64_t> constantInteger(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto elements = dyn_cast_or_null<DenseIntElementsAttr>(property(def, "value"));
  if (!elements || !elements.isSplat())
    return std::nullopt;
  return elements.getSplatValue<APInt>().getSExtValue();
}

/// The `<@mesh, [...]>` items of `#sdy.sharding_per_value<[...]>` as
/// partita shardings, or none if one cannot be read.
std::optional<SmallVector<Attribute>> shardingList(Attribute attr,
                                                   MLIRContext *context) {
  std::string text = printed(attr);
  SmallVector<Attribute> shardings;
  size_t at = text.find('[');
  if (at == std::string::npos)
    return std::nullopt;
  int depth = 0;
  size_t start = std::string::npos;
  for (size_t i = at + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<' && depth++ == 0)
      start = i + 1;
    else if (c == '>' && --depth == 0) {
      auto sharding = dyn_cast_or_null<ShardingAttr>(parseAttributeText(
          "#partita.sharding<" + text.substr(start, i - start) + ">", context));
      if (!sharding)
        return std::nullopt;
      shardings.push_back(sharding);
    }
  }
  return shardings;
}

/// The quoted names of `#sdy<manual_axes{"data", "model"}>`.
SmallVector<std::string> quotedNames(Attribute attr) {
  std::string text = printed(attr);
  SmallVector<std::string> names;
  for (size_t at = text.find('"'); at != std::string::npos;) {
    size_t end = text.find('"', at + 1);
    if (end == std::string::npos)
      break;
    names.push_back(text.substr(at + 1, end - at - 1));
    at = text.find('"', end + 1);
  }
  return names;
}

} // namespace

FailureOr<SmallVector<Value>> Importer::whileLoop(Operation *op) {
  // lax.scan / fori_loop with a static trip count: the condition compares
  // one carried counter with a constant, the body adds one to it.
  auto notCounted = [&]() {
    return reject(op, "stablehlo.while that is not a counted loop (lax.scan "
                      "or fori_loop with a static trip count: `counter < N` "
                      "with a constant N, the body adding 1)");
  };
  if (op->getNumRegions() != 2 || !op->getRegion(0).hasOneBlock() ||
      !op->getRegion(1).hasOneBlock())
    return notCounted();
  Block &cond = op->getRegion(0).front();
  Block &body = op->getRegion(1).front();
  Operation *condReturn = cond.getTerminator();
  Operation *compare =
      condReturn && condReturn->getNumOperands() == 1
          ? condReturn->getOperand(0).getDefiningOp()
          : nullptr;
  if (!compare || compare->getName().getStringRef() != "stablehlo.compare" ||
      printed(property(compare, "comparison_direction")).find(" LT") ==
          std::string::npos)
    return notCounted();
  auto counter = dyn_cast<BlockArgument>(compare->getOperand(0));
  std::optional<int64_t> limit = constantInteger(compare->getOperand(1));
  if (!counter || counter.getOwner() != &cond || !limit)
    return notCounted();
  unsigned k = counter.getArgNumber();
  std::optional<int64_t> start = constantInteger(op->getOperand(k));
  Operation *bodyReturn = body.getTerminator();
  Operation *step = bodyReturn && bodyReturn->getNumOperands() > k
                        ? bodyReturn->getOperand(k).getDefiningOp()
                        : nullptr;
  bool addsOne =
      step && step->getName().getStringRef() == "stablehlo.add" &&
      ((step->getOperand(0) == body.getArgument(k) &&
        constantInteger(step->getOperand(1)) == 1) ||
       (step->getOperand(1) == body.getArgument(k) &&
        constantInteger(step->getOperand(0)) == 1));
  if (!start || !addsOne)
    return notCounted();
  int64_t trips = std::max<int64_t>(0, *limit - *start);
  auto loop = LoopOp::create(builder, op->getLoc(), op->getResultTypes(),
                             op->getOperands(), trips);
  Block *loopBody = new Block();
  loop.getBody().push_back(loopBody);
  loopBody->addArgument(
      RankedTensorType::get({}, builder.getI32Type()), op->getLoc());
  for (Value operand : op->getOperands())
    loopBody->addArgument(operand.getType(), operand.getLoc());
  // Move the body over; the carried arguments follow the iteration number.
  loopBody->getOperations().splice(loopBody->end(), body.getOperations());
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    body.getArgument(i).replaceAllUsesWith(loopBody->getArgument(i + 1));
  Operation *terminator = loopBody->getTerminator();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(terminator);
  YieldOp::create(builder, terminator->getLoc(), terminator->getOperands());
  terminator->erase();
  importBlock(*loopBody);
  return SmallVector<Value>(loop.getResults());
}

FailureOr<SmallVector<Value>> Importer::manualComputation(Operation *op) {
  std::optional<SmallVector<Attribute>> ins =
      shardingList(property(op, "in_shardings"), context);
  std::optional<SmallVector<Attribute>> outs =
      shardingList(property(op, "out_shardings"), context);
  SmallVector<std::string> axes = quotedNames(property(op, "manual_axes"));
  if (!ins || !outs || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock())
    return reject(op, "sdy.manual_computation whose shardings cannot be "
                      "read");
  for (Attribute &sharding : llvm::concat<Attribute>(*ins, *outs))
    sharding = canonicalMesh(cast<ShardingAttr>(sharding));
  FlatSymbolRefAttr mesh;
  for (Attribute sharding : llvm::concat<Attribute>(*ins, *outs))
    mesh = cast<ShardingAttr>(sharding).getMesh();
  if (!mesh)
    return reject(op, "sdy.manual_computation with no operand or result");
  SmallVector<StringRef> axisRefs(axes.begin(), axes.end());
  auto manual = ManualComputationOp::create(
      builder, op->getLoc(), op->getResultTypes(), op->getOperands(),
      builder.getArrayAttr(*ins), builder.getArrayAttr(*outs),
      builder.getStrArrayAttr(axisRefs));
  Block &source = op->getRegion(0).front();
  Block *body = new Block();
  manual.getBody().push_back(body);
  for (BlockArgument argument : source.getArguments())
    argument.replaceAllUsesWith(
        body->addArgument(argument.getType(), argument.getLoc()));
  body->getOperations().splice(body->end(), source.getOperations());
  Operation *terminator = body->getTerminator();
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(terminator);
    YieldOp::create(builder, terminator->getLoc(), terminator->getOperands());
  }
  terminator->erase();
  FlatSymbolRefAttr outer = manualMesh;
  ManualComputationOp outerOp = currentManual;
  Value outerId = manualDeviceId;
  manualMesh = mesh;
  currentManual = manual;
  manualDeviceId = Value();
  importBlock(*body);
  manualMesh = outer;
  currentManual = outerOp;
  manualDeviceId = outerId;
  return SmallVector<Value>(manual.getResults());
}

FailureOr<SmallVector<Value>> Importer::caseOp(Operation *op) {
  // stablehlo.case (lax.cond, lax.switch): JAX's branches are pure, so each
  // is computed and the result picked by the index (an index out of range
  // picks the last branch, as stablehlo.case does).
  unsigned branches = op->getNumRegions();
  if (op->getNumOperands() != 1 || branches == 0 ||
      tensorOf(op->getOperand(0)).getRank() != 0)
    return reject(op, "stablehlo.case without one scalar index");
  Location loc = op->getLoc();
  SmallVector<SmallVector<Value>> results;
  for (Region &region : op->getRegions()) {
    if (!region.hasOneBlock() || region.front().getNumArguments() != 0)
      return reject(op, "stablehlo.case with a branch of several blocks or "
                        "with arguments");
    Block &branch = region.front();
    Operation *terminator = branch.empty() ? nullptr : &branch.back();
    if (!terminator || terminator->getNumOperands() != op->getNumResults())
      return reject(op, "stablehlo.case whose branch does not return its "
                        "results");
    auto yield = [&] {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(terminator);
      return YieldOp::create(builder, terminator->getLoc(),
                             terminator->getOperands());
    }();
    terminator->erase();
    int before = failures;
    importBlock(branch);
    if (failures != before)
      return failure();
    results.push_back(SmallVector<Value>(yield.getOperands()));
    // The branch's ops run before the case, in its block.
    op->getBlock()->getOperations().splice(op->getIterator(),
                                           branch.getOperations(),
                                           branch.begin(),
                                           yield->getIterator());
    yield.erase();
  }
  builder.setInsertionPoint(op);
  Value index = op->getOperand(0);
  auto indexType = tensorOf(index);
  SmallVector<Value> picked = results.back();
  for (int k = static_cast<int>(branches) - 2; k >= 0; --k) {
    Value isK = CompareOp::create(
        builder, loc, RankedTensorType::get({}, builder.getI1Type()),
        CompareDirection::EQ, index,
        splat(loc, indexType, static_cast<double>(k)));
    for (unsigned r = 0; r < picked.size(); ++r) {
      auto type = tensorOf(picked[r]);
      Value pred = isK;
      if (type.getRank() > 0)
        pred = BroadcastOp::create(
            builder, loc, RankedTensorType::get(type.getShape(),
                                                builder.getI1Type()),
            isK, builder.getDenseI64ArrayAttr({}));
      picked[r] =
          SelectOp::create(builder, loc, type, pred, results[k][r], picked[r]);
    }
  }
  return picked;
}

FailureOr<SmallVector<Value>> Importer::partitionId(Operation *op) {
  // Inside shard_map, the device's index in the mesh (row-major over its
  // axes: jax.lax.axis_index lowers to arithmetic on it). It enters the
  // manual computation as a global iota split over every mesh axis, so
  // each device's piece is its own index.
  auto resultType = tensorOf(op->getResult(0));
  if (!currentManual)
    return reject(op, "stablehlo.partition_id outside a manual computation "
                      "(jax.lax.axis_index outside shard_map) is not "
                      "supported");
  auto meshOp = module.lookupSymbol<MeshOp>(manualMesh.getAttr());
  if (!meshOp)
    return reject(op, "stablehlo.partition_id in a manual computation "
                      "without a mesh");
  Mesh mesh = meshOp.getMesh().toMesh();
  SmallVector<StringAttr> axes;
  for (const MeshAxis &axis : mesh.axes())
    axes.push_back(builder.getStringAttr(axis.name));
  auto manualAxes = currentManual.getManualAxes();
  if (static_cast<int64_t>(manualAxes.size()) != mesh.rank())
    return reject(op, "stablehlo.partition_id in a shard_map that is manual "
                      "over some mesh axes only is not supported");
  if (!manualDeviceId) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(currentManual);
    auto globalType = RankedTensorType::get({mesh.numDevices()},
                                            resultType.getElementType());
    Value ids = IotaOp::create(builder, op->getLoc(), globalType, 0);
    currentManual->insertOperands(currentManual->getNumOperands(), ids);
    SmallVector<Attribute> ins(currentManual.getInShardings().begin(),
                               currentManual.getInShardings().end());
    ins.push_back(ShardingAttr::get(
        context, manualMesh,
        {DimShardingAttr::get(context, axes, /*isOpen=*/false)}));
    currentManual.setInShardingsAttr(builder.getArrayAttr(ins));
    Block &body = currentManual.getBody().front();
    Value piece = body.addArgument(
        RankedTensorType::get({1}, resultType.getElementType()),
        op->getLoc());
    builder.setInsertionPointToStart(&body);
    manualDeviceId =
        ReshapeOp::create(builder, op->getLoc(), resultType, piece);
  }
  return SmallVector<Value>{manualDeviceId};
}

} // namespace stablehlo_import
} // namespace partita
