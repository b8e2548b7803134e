//===- PartitaDialect.cpp - Dialect registration and attribute checks -----===//
//
// Registers the dialect and verifies the dialect attributes that live on
// other ops: `partita.sharding` on op results, function arguments and
// function results; `partita.role` and `partita.donated` on function
// arguments.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace partita;

#include "partita/Dialect/Partita/IR/PartitaDialect.cpp.inc"
#include "partita/Dialect/Partita/IR/PartitaInterfaces.cpp.inc"

namespace partita {
// Custom assembly directives used by the generated op code; defined with the
// ops that use them.
ParseResult parseSourceTargetPairs(OpAsmParser &parser,
                                   DenseI64ArrayAttr &pairs);
void printSourceTargetPairs(OpAsmPrinter &printer, Operation *op,
                            DenseI64ArrayAttr pairs);
} // namespace partita

#define GET_OP_CLASSES
#include "partita/Dialect/Partita/IR/PartitaOps.cpp.inc"

void PartitaDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "partita/Dialect/Partita/IR/PartitaOps.cpp.inc"
      >();
}

namespace {

/// Checks the value of a `partita.sharding` attribute describing a value of
/// type `type`.
LogicalResult verifyShardingValue(Operation *op, Attribute value, Type type,
                                  StringRef what) {
  auto sharding = dyn_cast<ShardingAttr>(value);
  if (!sharding)
    return op->emitError() << "'" << PartitaDialect::kShardingAttrName
                           << "' of " << what
                           << " must be a #partita.sharding, got " << value;
  return verifyShardingFor(op, sharding, type, what,
                           [&] { return op->emitError(); });
}

LogicalResult rejectArgumentOnlyAttr(Operation *op, NamedAttribute attribute,
                                     StringRef where) {
  return op->emitError() << "'" << attribute.getName().getValue()
                         << "' is only valid on function arguments, not on "
                         << where;
}

/// `partita.origin` is informational: any array is accepted.
LogicalResult verifyOrigin(Operation *op, NamedAttribute attribute) {
  if (!isa<ArrayAttr>(attribute.getValue()))
    return op->emitError() << "'" << PartitaDialect::kOriginAttrName
                           << "' must be an array (one entry per dimension or "
                              "result)";
  return success();
}

LogicalResult unknownAttribute(Operation *op, NamedAttribute attribute) {
  return op->emitError() << "unknown partita attribute '"
                         << attribute.getName().getValue()
                         << "'; known: partita.sharding, partita.role, "
                            "partita.donated, partita.logical_axes, "
                            "partita.aliases, partita.global_shape, "
                            "partita.origin, partita.reason, "
                            "partita.partitioned, partita.stage, "
                            "partita.async_collectives, "
                            "partita.stop_gradient, partita.split_axes";
}

/// `partita.global_shape`: one size per dimension of the (local) tensor, each
/// at least the local size.
LogicalResult verifyGlobalShape(Operation *op, NamedAttribute attribute,
                                Type type, const std::string &what) {
  auto shape = dyn_cast<DenseI64ArrayAttr>(attribute.getValue());
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!shape || !tensor ||
      static_cast<int64_t>(shape.size()) != tensor.getRank())
    return op->emitError() << "'" << PartitaDialect::kGlobalShapeAttrName
                           << "' of " << what
                           << " must be an array<i64> with one size per "
                              "dimension of a ranked tensor";
  for (auto [d, size] : llvm::enumerate(shape.asArrayRef()))
    if (size < tensor.getDimSize(d))
      return op->emitError()
             << "'" << PartitaDialect::kGlobalShapeAttrName << "' of " << what
             << ": dimension " << d << " has global size " << size
             << ", below its local size " << tensor.getDimSize(d);
  return success();
}

} // namespace

LogicalResult
PartitaDialect::verifyOperationAttribute(Operation *op,
                                         NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kRoleAttrName || name == kDonatedAttrName ||
      name == kLogicalAxesAttrName || name == kAliasesAttrName ||
      name == kGlobalShapeAttrName)
    return rejectArgumentOnlyAttr(op, attribute, "an operation");
  if (name == kOriginAttrName)
    return verifyOrigin(op, attribute);
  if (name == kReasonAttrName) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << kReasonAttrName << "' must be a string";
    return success();
  }
  if (name == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!stage || stage.getInt() < 0 || isa<func::FuncOp, ModuleOp>(op))
      return op->emitError() << "'" << kStageAttrName
                             << "' is a non-negative integer on an op";
    return success();
  }
  if (name == kStopGradientAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()) ||
        isa<func::FuncOp, ModuleOp>(op))
      return op->emitError() << "'" << kStopGradientAttrName
                             << "' is a unit attribute of an op";
    return success();
  }
  // The axes partita-split-axes declared as sub-axes, on the mesh it split
  // (lib/Transforms/SubAxes.cpp spells the name too).
  if (name == "partita.split_axes") {
    auto axes = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!axes || !isa<MeshOp>(op) ||
        !llvm::all_of(axes, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError()
             << "'partita.split_axes' is an array of axis names on a "
                "partita.mesh";
    return success();
  }
  if (name == kPartitionedAttrName || name == kAsyncCollectivesAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()) || !isa<ModuleOp>(op))
      return op->emitError() << "'" << name
                             << "' is a unit attribute of a module";
    return success();
  }
  if (name != kShardingAttrName)
    return unknownAttribute(op, attribute);

  Attribute value = attribute.getValue();
  if (auto list = dyn_cast<ArrayAttr>(value)) {
    if (list.size() != op->getNumResults())
      return op->emitError()
             << "'" << kShardingAttrName << "' lists " << list.size()
             << " shardings for " << op->getNumResults() << " results";
    for (auto [index, entry] : llvm::enumerate(list))
      if (failed(verifyShardingValue(op, entry, op->getResult(index).getType(),
                                     "result " + std::to_string(index))))
        return failure();
    return success();
  }
  if (op->getNumResults() != 1)
    return op->emitError() << "a single '" << kShardingAttrName
                           << "' needs an op with one result; this op has "
                           << op->getNumResults()
                           << " (use an array with one sharding per result)";
  return verifyShardingValue(op, value, op->getResult(0).getType(), "result 0");
}

LogicalResult
PartitaDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                         unsigned argIndex,
                                         NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitError() << "'" << name
                           << "' is only valid on function arguments";
  std::string what = "argument " + std::to_string(argIndex);
  if (name == kOriginAttrName)
    return verifyOrigin(op, attribute);
  if (name == kGlobalShapeAttrName)
    return verifyGlobalShape(op, attribute,
                             function.getArgumentTypes()[argIndex], what);
  if (name == kShardingAttrName)
    return verifyShardingValue(op, attribute.getValue(),
                               function.getArgumentTypes()[argIndex], what);
  if (name == kRoleAttrName) {
    if (!isa<RoleAttr>(attribute.getValue()))
      return op->emitError()
             << "'" << kRoleAttrName << "' of " << what
             << " must be a #partita.role<...> (param, opt_state, "
                "grad, input or activation)";
    return success();
  }
  if (name == kDonatedAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << kDonatedAttrName << "' of " << what
                             << " is a unit attribute and takes no value";
    return success();
  }
  if (name == kAliasesAttrName)
    return op->emitError() << "'" << kAliasesAttrName
                           << "' is only valid on function results";
  if (name == kLogicalAxesAttrName) {
    auto names = dyn_cast<ArrayAttr>(attribute.getValue());
    auto type = dyn_cast<RankedTensorType>(function.getArgumentTypes()[argIndex]);
    if (!names || !type ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'" << kLogicalAxesAttrName << "' of " << what
                             << " must be an array of strings on a tensor";
    if (static_cast<int64_t>(names.size()) != type.getRank())
      return op->emitError()
             << "'" << kLogicalAxesAttrName << "' of " << what << " names "
             << names.size() << " axes for a rank-" << type.getRank()
             << " tensor";
    return success();
  }
  return unknownAttribute(op, attribute);
}

LogicalResult
PartitaDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                            unsigned resultIndex,
                                            NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kRoleAttrName || name == kDonatedAttrName ||
      name == kLogicalAxesAttrName)
    return rejectArgumentOnlyAttr(op, attribute, "function results");
  if (name == kOriginAttrName)
    return verifyOrigin(op, attribute);
  if (name == kAliasesAttrName) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    auto index = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!function || !index || index.getInt() < 0 ||
        index.getInt() >= static_cast<int64_t>(function.getNumArguments()))
      return op->emitError() << "'" << kAliasesAttrName << "' of result "
                             << resultIndex
                             << " must be the index of a function argument";
    if (function.getArgumentTypes()[index.getInt()] !=
        function.getResultTypes()[resultIndex])
      return op->emitError() << "'" << kAliasesAttrName << "' of result "
                             << resultIndex << " names argument "
                             << index.getInt() << " of another type";
    return success();
  }
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (name == kGlobalShapeAttrName && function)
    return verifyGlobalShape(op, attribute,
                             function.getResultTypes()[resultIndex],
                             "result " + std::to_string(resultIndex));
  if (name != kShardingAttrName)
    return unknownAttribute(op, attribute);
  if (!function)
    return op->emitError() << "'" << name
                           << "' is only valid on function results";
  return verifyShardingValue(op, attribute.getValue(),
                             function.getResultTypes()[resultIndex],
                             "result " + std::to_string(resultIndex));
}
