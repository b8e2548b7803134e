//===- PartitaShardingOps.cpp - Sharding annotations and shard_map --------===//
//
// Mesh lookup and sharding checks shared by every op that names a mesh, and
// the ops users write about shardings: sharding_constraint, reshard and
// manual_computation.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Sharding/Layout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace partita;

MeshOp partita::lookupMesh(Operation *from, FlatSymbolRefAttr meshName) {
  if (!meshName)
    return {};
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, meshName.getAttr());
}

LogicalResult
partita::verifyShardingFor(Operation *anchor, ShardingAttr sharding, Type type,
                           StringRef what,
                           function_ref<InFlightDiagnostic()> emitError) {
  MeshOp mesh = lookupMesh(anchor, sharding.getMesh());
  if (!mesh)
    return emitError() << "sharding of " << what << " refers to mesh "
                       << sharding.getMesh()
                       << ", but no partita.mesh has that name";
  std::vector<int64_t> shape;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "sharding of " << what
                       << " is attached to a value of non-tensor type " << type;
  shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  Status status =
      validateSharding(mesh.getMesh().toMesh(), sharding.toSharding(), &shape);
  if (!status.ok())
    return emitError() << "sharding of " << what << ": " << status.message();
  return success();
}

LogicalResult LogicalConstraintOp::verify() {
  auto type = cast<RankedTensorType>(getInput().getType());
  if (static_cast<int64_t>(getAxes().size()) != type.getRank())
    return emitOpError() << "names " << getAxes().size()
                         << " logical axes for a rank-" << type.getRank()
                         << " tensor";
  return success();
}

LogicalResult ShardingConstraintOp::verify() {
  return verifyShardingFor(*this, getSharding(), getType(),
                           "the constrained value",
                           [&] { return emitOpError(); });
}

LogicalResult ReshardOp::verify() {
  return verifyShardingFor(*this, getSharding(), getType(),
                           "the resharded value",
                           [&] { return emitOpError(); });
}

//===----------------------------------------------------------------------===//
// ManualComputationOp
//===----------------------------------------------------------------------===//

namespace {

ParseResult parseShardingList(OpAsmParser &parser, StringRef keyword,
                              SmallVectorImpl<Attribute> &shardings) {
  if (parser.parseKeyword(keyword) || parser.parseEqual())
    return failure();
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
    Attribute sharding = ShardingAttr::parse(parser, Type());
    if (!sharding)
      return failure();
    shardings.push_back(sharding);
    return success();
  });
}

void printShardingList(OpAsmPrinter &printer, StringRef keyword,
                       ArrayAttr list) {
  printer << " " << keyword << " = [";
  llvm::interleaveComma(list, printer, [&](Attribute sharding) {
    cast<ShardingAttr>(sharding).print(printer);
  });
  printer << "]";
}

} // namespace

ParseResult ManualComputationOp::parse(OpAsmParser &parser,
                                       OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  SmallVector<Attribute> inShardings, outShardings;
  SmallVector<OpAsmParser::Argument> regionArgs;
  Attribute manualAxes;
  FunctionType type;
  Builder &builder = parser.getBuilder();
  SMLoc operandsLoc = parser.getCurrentLocation();
  if (parser.parseOperandList(operands, AsmParser::Delimiter::Paren) ||
      parseShardingList(parser, "in_shardings", inShardings) ||
      parseShardingList(parser, "out_shardings", outShardings) ||
      parser.parseKeyword("manual_axes") || parser.parseEqual() ||
      parser.parseAttribute(manualAxes))
    return failure();
  result.addAttribute(getInShardingsAttrName(result.name),
                      builder.getArrayAttr(inShardings));
  result.addAttribute(getOutShardingsAttrName(result.name),
                      builder.getArrayAttr(outShardings));
  result.addAttribute(getManualAxesAttrName(result.name), manualAxes);
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes) ||
      parser.parseArgumentList(regionArgs, AsmParser::Delimiter::Paren,
                               /*allowType=*/true) ||
      parser.parseRegion(*result.addRegion(), regionArgs) ||
      parser.parseColonType(type) ||
      parser.resolveOperands(operands, type.getInputs(), operandsLoc,
                             result.operands))
    return failure();
  result.addTypes(type.getResults());
  return success();
}

void ManualComputationOp::print(OpAsmPrinter &printer) {
  printer << "(" << getOperands() << ")";
  printShardingList(printer, "in_shardings", getInShardings());
  printShardingList(printer, "out_shardings", getOutShardings());
  printer << " manual_axes = ";
  printer.printAttribute(getManualAxes());
  printer.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getInShardingsAttrName(), getOutShardingsAttrName(),
                            getManualAxesAttrName()});
  printer << " (";
  llvm::interleaveComma(
      getBody().getArguments(), printer,
      [&](BlockArgument arg) { printer.printRegionArgument(arg); });
  printer << ") ";
  printer.printRegion(getBody(), /*printEntryBlockArgs=*/false);
  printer << " : ";
  printer.printFunctionalType(getOperands().getTypes(),
                              getResults().getTypes());
}

namespace {

/// Checks one in/out sharding of a manual computation and computes the local
/// type of a value of `global` type under it.
FailureOr<RankedTensorType> manualLocalType(ManualComputationOp op,
                                            ShardingAttr sharding, MeshOp mesh,
                                            ArrayRef<StringRef> manualAxes,
                                            RankedTensorType global,
                                            const std::string &what) {
  if (sharding.getMesh().getValue() != mesh.getSymName())
    return op.emitOpError()
           << what << " uses mesh " << sharding.getMesh()
           << " but the first sharding uses @" << mesh.getSymName()
           << "; all shardings must name one mesh";
  if (failed(verifyShardingFor(op, sharding, global, what,
                               [&] { return op.emitOpError(); })))
    return failure();
  if (sharding.isPartial())
    return op.emitOpError() << what << " must not be partial";
  SmallVector<int64_t> local(global.getShape());
  for (auto [d, dim] : llvm::enumerate(sharding.getDims())) {
    if (dim.getIsOpen())
      return op.emitOpError() << what << " dimension " << d
                              << " is open ({?}); manual computations need "
                                 "closed shardings";
    int64_t shards = 1;
    for (StringAttr axis : dim.getAxes()) {
      if (!llvm::is_contained(manualAxes, axis.getValue()))
        return op.emitOpError()
               << what << " dimension " << d << " uses axis '"
               << axis.getValue() << "', which is not a manual axis";
      shards *= mesh.getMesh().axisSize(axis.getValue());
    }
    if (local[d] % shards != 0)
      return op.emitOpError()
             << what << " dimension " << d << " of size " << local[d]
             << " is not divisible by its " << shards << " shards";
    local[d] /= shards;
  }
  return RankedTensorType::get(local, global.getElementType());
}

} // namespace

LogicalResult ManualComputationOp::verifyRegions() {
  if (getInShardings().size() != getOperands().size())
    return emitOpError() << "has " << getInShardings().size()
                         << " in_shardings for " << getOperands().size()
                         << " operands";
  if (getOutShardings().size() != getResults().size())
    return emitOpError() << "has " << getOutShardings().size()
                         << " out_shardings for " << getResults().size()
                         << " results";
  ShardingAttr first;
  if (!getInShardings().empty())
    first = cast<ShardingAttr>(getInShardings()[0]);
  else if (!getOutShardings().empty())
    first = cast<ShardingAttr>(getOutShardings()[0]);
  else
    return emitOpError() << "needs at least one operand or result";
  MeshOp mesh = lookupMesh(*this, first.getMesh());
  if (!mesh)
    return emitOpError() << "refers to mesh " << first.getMesh()
                         << ", but no partita.mesh has that name";

  SmallVector<StringRef> manualAxes;
  if (getManualAxes().empty())
    return emitOpError() << "needs at least one manual axis";
  for (Attribute axisAttr : getManualAxes()) {
    StringRef axis = cast<StringAttr>(axisAttr).getValue();
    if (mesh.getMesh().axisSize(axis) == 0)
      return emitOpError() << "manual axis '" << axis << "' is not an axis of @"
                           << mesh.getSymName();
    if (llvm::is_contained(manualAxes, axis))
      return emitOpError() << "manual axis '" << axis << "' is listed twice";
    manualAxes.push_back(axis);
  }

  Block &body = getBody().front();
  if (body.getNumArguments() != getOperands().size())
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments for " << getOperands().size()
                         << " operands";
  for (auto [index, operand] : llvm::enumerate(getOperands())) {
    std::string what = "in_sharding " + std::to_string(index);
    FailureOr<RankedTensorType> local = manualLocalType(
        *this, cast<ShardingAttr>(getInShardings()[index]), mesh, manualAxes,
        cast<RankedTensorType>(operand.getType()), what);
    if (failed(local))
      return failure();
    if (body.getArgument(index).getType() != *local)
      return emitOpError() << "body argument " << index << " is "
                           << body.getArgument(index).getType()
                           << " but the local shape of operand " << index
                           << " is " << *local;
  }
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "body must end with partita.yield";
  if (yield.getValues().size() != getResults().size())
    return yield.emitOpError()
           << "yields " << yield.getValues().size() << " values for "
           << getResults().size() << " results";
  for (auto [index, result] : llvm::enumerate(getResults())) {
    std::string what = "out_sharding " + std::to_string(index);
    FailureOr<RankedTensorType> local = manualLocalType(
        *this, cast<ShardingAttr>(getOutShardings()[index]), mesh, manualAxes,
        cast<RankedTensorType>(result.getType()), what);
    if (failed(local))
      return failure();
    if (yield.getValues()[index].getType() != *local)
      return yield.emitOpError()
             << "value " << index << " is "
             << yield.getValues()[index].getType()
             << " but the local shape of result " << index << " is " << *local;
  }
  return success();
}
