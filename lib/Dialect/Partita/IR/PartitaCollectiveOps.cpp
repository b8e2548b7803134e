//===- PartitaCollectiveOps.cpp - Verifiers of the collectives ------------===//
//
// Every collective names a mesh and a group of its axes; the checks here tie
// the local shapes before and after to the group's size.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace partita;

namespace {

/// Checks the mesh and the axes of a collective and returns the number of
/// devices in each group (the product of the axes' sizes).
FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr meshName,
                               ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshName);
  if (!mesh)
    return op->emitOpError() << "refers to mesh " << meshName
                             << ", but no partita.mesh has that name";
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  MeshAttr meshAttr = mesh.getMesh();
  int64_t groupSize = 1;
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute axisAttr : axes) {
    StringRef axis = cast<StringAttr>(axisAttr).getValue();
    int64_t size = meshAttr.axisSize(axis);
    if (size == 0) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "unknown mesh axis '" << axis << "'; @"
                                << mesh.getSymName();
      if (meshAttr.getAxes().empty())
        return diag << " has no axes";
      diag << " has axes ";
      llvm::interleaveComma(meshAttr.getAxes(), diag, [&](MeshAxisAttr known) {
        diag << "'" << known.getName().getValue() << "'";
      });
      return diag;
    }
    if (!seen.insert(axis).second)
      return op->emitOpError() << "mesh axis '" << axis << "' is listed twice";
    groupSize *= size;
  }
  return groupSize;
}

LogicalResult checkDimIndex(Operation *op, int64_t dim, int64_t rank,
                            StringRef name) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << name << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// Checks that `result` equals `operand` with dimension `dim` resized to
/// `expectedSize`, and that element types agree.
LogicalResult checkResized(Operation *op, RankedTensorType operand,
                           RankedTensorType result, int64_t dim,
                           int64_t expectedSize) {
  SmallVector<int64_t> expected(operand.getShape());
  expected[dim] = expectedSize;
  if (result.getShape() != ArrayRef<int64_t>(expected) ||
      result.getElementType() != operand.getElementType())
    return op->emitOpError()
           << "result " << result << " should be "
           << RankedTensorType::get(expected, operand.getElementType());
  return success();
}

LogicalResult checkDivisible(Operation *op, RankedTensorType operand,
                             int64_t dim, int64_t groupSize) {
  if (operand.getDimSize(dim) % groupSize != 0)
    return op->emitOpError()
           << "dimension " << dim << " of size " << operand.getDimSize(dim)
           << " is not divisible by the group size " << groupSize;
  return success();
}

LogicalResult checkReductionType(Operation *op, ReductionKind kind,
                                 Type element) {
  if ((kind == ReductionKind::And || kind == ReductionKind::Or) &&
      !element.isInteger())
    return op->emitOpError()
           << "'" << stringifyReductionKind(kind)
           << "' needs an integer element type, got " << element;
  return success();
}

} // namespace

LogicalResult AllGatherOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group) ||
      failed(checkDimIndex(*this, getDim(), getOperand().getType().getRank(),
                           "dim")))
    return failure();
  return checkResized(*this, getOperand().getType(), getType(), getDim(),
                      getOperand().getType().getDimSize(getDim()) * *group);
}

LogicalResult AllSliceOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  RankedTensorType operand = getOperand().getType();
  if (failed(group) ||
      failed(checkDimIndex(*this, getDim(), operand.getRank(), "dim")) ||
      failed(checkDivisible(*this, operand, getDim(), *group)))
    return failure();
  return checkResized(*this, operand, getType(), getDim(),
                      operand.getDimSize(getDim()) / *group);
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyGroup(*this, getMeshAttr(), getAxes())))
    return failure();
  return checkReductionType(*this, getKind(), getType().getElementType());
}

LogicalResult ReduceScatterOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  RankedTensorType operand = getOperand().getType();
  if (failed(group) ||
      failed(checkDimIndex(*this, getDim(), operand.getRank(), "dim")) ||
      failed(checkDivisible(*this, operand, getDim(), *group)) ||
      failed(checkReductionType(*this, getKind(), operand.getElementType())))
    return failure();
  return checkResized(*this, operand, getType(), getDim(),
                      operand.getDimSize(getDim()) / *group);
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  RankedTensorType operand = getOperand().getType();
  if (failed(group) ||
      failed(checkDimIndex(*this, getSplitDim(), operand.getRank(),
                           "split_dim")) ||
      failed(checkDimIndex(*this, getConcatDim(), operand.getRank(),
                           "concat_dim")) ||
      failed(checkDivisible(*this, operand, getSplitDim(), *group)))
    return failure();
  SmallVector<int64_t> expected(operand.getShape());
  expected[getSplitDim()] /= *group;
  expected[getConcatDim()] *= *group;
  RankedTensorType expectedType =
      RankedTensorType::get(expected, operand.getElementType());
  if (getType() != expectedType)
    return emitOpError() << "result " << getType() << " should be "
                         << expectedType;
  return success();
}

LogicalResult CollectivePermuteOp::verify() {
  FailureOr<int64_t> group = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  ArrayRef<int64_t> pairs = getPairs();
  if (pairs.size() % 2 != 0)
    return emitOpError() << "pairs must hold (source, target) pairs; got "
                         << pairs.size() << " numbers";
  llvm::SmallDenseSet<int64_t> sources, targets;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    for (int64_t position : {pairs[i], pairs[i + 1]})
      if (position < 0 || position >= *group)
        return emitOpError()
               << "position " << position << " is outside the group of "
               << *group << " devices";
    if (!sources.insert(pairs[i]).second)
      return emitOpError() << "source " << pairs[i] << " appears twice";
    if (!targets.insert(pairs[i + 1]).second)
      return emitOpError() << "target " << pairs[i + 1] << " appears twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Custom directive: `[0 -> 1, 1 -> 0]`
//===----------------------------------------------------------------------===//

namespace partita {

ParseResult parseSourceTargetPairs(OpAsmParser &parser,
                                   DenseI64ArrayAttr &pairs) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
        int64_t source, target;
        if (parser.parseInteger(source) || parser.parseArrow() ||
            parser.parseInteger(target))
          return failure();
        values.push_back(source);
        values.push_back(target);
        return success();
      }))
    return failure();
  pairs = parser.getBuilder().getDenseI64ArrayAttr(values);
  return success();
}

void printSourceTargetPairs(OpAsmPrinter &printer, Operation *,
                            DenseI64ArrayAttr pairs) {
  ArrayRef<int64_t> values = pairs.asArrayRef();
  printer << "[";
  for (size_t i = 0; i + 1 < values.size(); i += 2) {
    if (i)
      printer << ", ";
    printer << values[i] << " -> " << values[i + 1];
  }
  printer << "]";
}

} // namespace partita
