//===- PartitaTensorOps.cpp - Verifiers of the tensor ops -----------------===//
//
// Shape and attribute checks of the computation ops. Messages state what is
// wrong with the numbers involved, so a user can fix the IR without reading
// this file.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Sharding/Einsum.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace partita;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Checks `0 <= dim < rank`.
LogicalResult checkDim(Operation *op, int64_t dim, int64_t rank,
                       StringRef name = "dim") {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << name << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// Checks that `result` has shape `expected` and the element type of `like`.
LogicalResult checkResult(Operation *op, RankedTensorType result,
                          ArrayRef<int64_t> expected, Type elementType) {
  if (result.getShape() != expected)
    return op->emitOpError()
           << "result shape " << result
           << " does not match the expected shape ["
           << llvm::make_range(expected.begin(), expected.end()) << "]";
  if (result.getElementType() != elementType)
    return op->emitOpError()
           << "result element type " << result.getElementType()
           << " differs from the operand element type " << elementType;
  return success();
}

/// Checks that `values` has one entry per dimension of a rank-`rank` tensor.
LogicalResult checkPerDim(Operation *op, ArrayRef<int64_t> values, int64_t rank,
                          StringRef name) {
  if (static_cast<int64_t>(values.size()) != rank)
    return op->emitOpError()
           << name << " has " << values.size()
           << " entries; expected one per dimension (" << rank << ")";
  return success();
}

/// Shape without the dimensions listed in `dims` (assumed valid).
SmallVector<int64_t> dropDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> result;
  for (auto [index, size] : llvm::enumerate(shape))
    if (!llvm::is_contained(dims, static_cast<int64_t>(index)))
      result.push_back(size);
  return result;
}

LogicalResult checkStartIndexCount(Operation *op, size_t count, int64_t rank) {
  if (static_cast<int64_t>(count) != rank)
    return op->emitOpError()
           << "has " << count << " start indices; expected one per dimension ("
           << rank << ")";
  return success();
}

bool isLowPrecisionFloat(Type type) { return type.isBF16() || type.isF16(); }

} // namespace

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto value = dyn_cast_or_null<TypedAttr>(adaptor.getValueAttr());
  if (!value)
    return failure();
  types.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult IotaOp::verify() {
  return checkDim(*this, getDim(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto lhs = dyn_cast<RankedTensorType>(adaptor.getLhs().getType());
  if (!lhs)
    return failure();
  types.push_back(lhs.clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult SelectOp::verify() {
  if (getPred().getType().getShape() != getType().getShape())
    return emitOpError() << "predicate shape " << getPred().getType()
                         << " differs from the value shape " << getType();
  return success();
}

LogicalResult BitcastConvertOp::verify() {
  Type from = getOperand().getType().getElementType();
  Type to = getType().getElementType();
  unsigned fromBits = from.getIntOrFloatBitWidth();
  unsigned toBits = to.getIntOrFloatBitWidth();
  if (fromBits != toBits || fromBits == 1)
    return emitOpError() << "reinterprets elements of one bit width wider "
                            "than 1 as another type of that width, got "
                         << from << " -> " << to;
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

LogicalResult EinsumOp::verify() {
  size_t count = getOperands().size();
  if (count < 1 || count > 2)
    return emitOpError() << "takes one or two operands, got " << count;
  Expected<EinsumSpec> spec = parseEinsumSpec(getSpec().str(), count);
  if (!spec)
    return emitOpError() << spec.status().message();
  std::vector<std::vector<int64_t>> shapes;
  Type elementType = tensorType(getOperands()[0]).getElementType();
  for (Value operand : getOperands()) {
    RankedTensorType type = tensorType(operand);
    if (type.getElementType() != elementType)
      return emitOpError() << "operands have different element types ("
                           << elementType << " and " << type.getElementType()
                           << ")";
    shapes.emplace_back(type.getShape().begin(), type.getShape().end());
  }
  Expected<std::vector<int64_t>> shape = einsumResultShape(*spec, shapes);
  if (!shape)
    return emitOpError() << shape.status().message();
  Type resultElement = getType().getElementType();
  bool widened = isLowPrecisionFloat(elementType) && resultElement.isF32();
  return checkResult(*this, getType(), *shape,
                     widened ? resultElement : elementType);
}

LogicalResult ReduceOp::verify() {
  RankedTensorType input = getOperand().getType();
  SmallVector<int64_t> seen;
  for (int64_t dim : getDims()) {
    if (failed(checkDim(*this, dim, input.getRank(), "reduced dimension")))
      return failure();
    if (llvm::is_contained(seen, dim))
      return emitOpError() << "reduces dimension " << dim << " twice";
    seen.push_back(dim);
  }
  ReductionKind kind = getKind();
  if ((kind == ReductionKind::And || kind == ReductionKind::Or) &&
      !input.getElementType().isInteger())
    return emitOpError() << "'" << stringifyReductionKind(kind)
                         << "' needs an integer operand, got "
                         << input.getElementType();
  return checkResult(*this, getType(), dropDims(input.getShape(), getDims()),
                     input.getElementType());
}

LogicalResult ArgmaxOp::verify() {
  RankedTensorType input = getOperand().getType();
  if (failed(checkDim(*this, getDim(), input.getRank())))
    return failure();
  SmallVector<int64_t> expected = dropDims(input.getShape(), {static_cast<int64_t>(getDim())});
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << getType()
                         << " must be the operand shape without dimension "
                         << getDim();
  return success();
}

LogicalResult TopKOp::verify() {
  RankedTensorType input = getOperand().getType();
  if (failed(checkDim(*this, getDim(), input.getRank())))
    return failure();
  int64_t size = input.getDimSize(getDim());
  // The generated getter is unsigned; read the attribute signed so that a
  // negative k is reported as written.
  int64_t k = getKAttr().getInt();
  if (k < 1 || k > size)
    return emitOpError() << "k = " << k << " must be in [1, " << size
                         << "], the size of dimension " << getDim();
  SmallVector<int64_t> expected(input.getShape());
  expected[getDim()] = k;
  if (failed(checkResult(*this, getValues().getType(), expected,
                         input.getElementType())))
    return failure();
  if (getIndices().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "indices shape " << getIndices().getType()
                         << " must equal the values shape";
  return success();
}

LogicalResult CumsumOp::verify() {
  return checkDim(*this, getDim(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  RankedTensorType input = getOperand().getType();
  RankedTensorType result = getType();
  ArrayRef<int64_t> dims = getDims();
  if (failed(checkPerDim(*this, dims, input.getRank(), "dims")))
    return failure();
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= result.getRank())
      return emitOpError() << "dims[" << index << "] = " << dim
                           << " is out of range for result rank "
                           << result.getRank();
    if (index > 0 && dim <= dims[index - 1])
      return emitOpError() << "dims must be strictly increasing; use "
                              "partita.transpose to permute";
    int64_t from = input.getDimSize(index), to = result.getDimSize(dim);
    if (from != 1 && from != to)
      return emitOpError() << "operand dimension " << index << " of size "
                           << from << " cannot broadcast to result dimension "
                           << dim << " of size " << to;
  }
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "result element type differs from the operand's";
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getOperand().getType();
  if (input.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << input << " ("
                         << input.getNumElements() << " elements) to "
                         << getType() << " (" << getType().getNumElements()
                         << " elements)";
  if (input.getElementType() != getType().getElementType())
    return emitOpError() << "result element type differs from the operand's";
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = getOperand().getType();
  ArrayRef<int64_t> perm = getPerm();
  if (failed(checkPerDim(*this, perm, input.getRank(), "perm")))
    return failure();
  SmallVector<int64_t> expected;
  SmallVector<bool> used(input.getRank(), false);
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= input.getRank() || used[dim])
      return emitOpError() << "perm ["
                           << llvm::make_range(perm.begin(), perm.end())
                           << "] is not a permutation of the operand's "
                           << input.getRank() << " dimensions";
    used[dim] = true;
    expected.push_back(input.getDimSize(dim));
  }
  return checkResult(*this, getType(), expected, input.getElementType());
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getOperand().getType();
  int64_t rank = input.getRank();
  if (failed(checkPerDim(*this, getStart(), rank, "start")) ||
      failed(checkPerDim(*this, getLimit(), rank, "limit")) ||
      failed(checkPerDim(*this, getStride(), rank, "stride")))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = getStart()[d], limit = getLimit()[d],
            stride = getStride()[d];
    if (start < 0 || start > limit || limit > input.getDimSize(d))
      return emitOpError() << "dimension " << d << ": need 0 <= start ("
                           << start << ") <= limit (" << limit << ") <= size ("
                           << input.getDimSize(d) << ")";
    if (stride < 1)
      return emitOpError() << "dimension " << d << ": stride " << stride
                           << " must be at least 1";
    // Written so that a huge stride cannot overflow.
    expected.push_back(limit == start ? 0 : (limit - start - 1) / stride + 1);
  }
  return checkResult(*this, getType(), expected, input.getElementType());
}

LogicalResult DynamicSliceOp::verify() {
  RankedTensorType input = getOperand().getType();
  if (failed(checkStartIndexCount(*this, getStartIndices().size(),
                                  input.getRank())) ||
      failed(checkPerDim(*this, getSizes(), input.getRank(), "sizes")))
    return failure();
  for (auto [d, size] : llvm::enumerate(getSizes()))
    if (size < 0 || size > input.getDimSize(d))
      return emitOpError() << "sizes[" << d << "] = " << size
                           << " must be in [0, " << input.getDimSize(d) << "]";
  return checkResult(*this, getType(), getSizes(), input.getElementType());
}

LogicalResult DynamicUpdateSliceOp::verify() {
  RankedTensorType input = getOperand().getType();
  RankedTensorType update = getUpdate().getType();
  if (failed(checkStartIndexCount(*this, getStartIndices().size(),
                                  input.getRank())))
    return failure();
  if (update.getRank() != input.getRank())
    return emitOpError() << "update rank " << update.getRank()
                         << " differs from the operand rank "
                         << input.getRank();
  if (update.getElementType() != input.getElementType())
    return emitOpError() << "update element type differs from the operand's";
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (update.getDimSize(d) > input.getDimSize(d))
      return emitOpError() << "update dimension " << d << " ("
                           << update.getDimSize(d)
                           << ") is larger than the operand's ("
                           << input.getDimSize(d) << ")";
  return success();
}

LogicalResult ConcatenateOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  RankedTensorType first = tensorType(getInputs()[0]);
  if (failed(checkDim(*this, getDim(), first.getRank())))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  expected[getDim()] = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    RankedTensorType type = tensorType(input);
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return emitOpError() << "input " << index << " (" << type
                           << ") differs in rank or element type from input 0 ("
                           << first << ")";
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != static_cast<int64_t>(getDim()) && type.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << "input " << index << " has size "
                             << type.getDimSize(d) << " in dimension " << d
                             << " but input 0 has " << first.getDimSize(d);
    expected[getDim()] += type.getDimSize(getDim());
  }
  return checkResult(*this, getType(), expected, first.getElementType());
}

LogicalResult PadOp::verify() {
  RankedTensorType input = getOperand().getType();
  if (failed(checkPerDim(*this, getLow(), input.getRank(), "low")) ||
      failed(checkPerDim(*this, getHigh(), input.getRank(), "high")))
    return failure();
  if (getPaddingValue().getType().getElementType() != input.getElementType())
    return emitOpError() << "padding value type " << getPaddingValue().getType()
                         << " does not match the operand element type "
                         << input.getElementType();
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (getLow()[d] < 0 || getHigh()[d] < 0)
      return emitOpError() << "dimension " << d
                           << ": padding must be non-negative (use "
                              "partita.slice to crop)";
    expected.push_back(getLow()[d] + input.getDimSize(d) + getHigh()[d]);
  }
  return checkResult(*this, getType(), expected, input.getElementType());
}

namespace {
/// `indices.shape ++ table.shape[1:]`.
SmallVector<int64_t> gatheredShape(RankedTensorType table,
                                   RankedTensorType indices) {
  SmallVector<int64_t> shape(indices.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  return shape;
}
} // namespace

LogicalResult GatherOp::verify() {
  RankedTensorType table = getTable().getType();
  if (table.getRank() < 1)
    return emitOpError() << "table must have rank at least 1";
  return checkResult(*this, getType(),
                     gatheredShape(table, getIndices().getType()),
                     table.getElementType());
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType table = getTable().getType();
  if (table.getRank() < 1)
    return emitOpError() << "table must have rank at least 1";
  SmallVector<int64_t> expected = gatheredShape(table, getIndices().getType());
  RankedTensorType updates = getUpdates().getType();
  if (updates.getShape() != ArrayRef<int64_t>(expected) ||
      updates.getElementType() != table.getElementType())
    return emitOpError()
           << "updates " << updates
           << " must have shape indices.shape ++ table.shape[1:] = ["
           << llvm::make_range(expected.begin(), expected.end())
           << "] and the table's element type";
  return success();
}

//===----------------------------------------------------------------------===//
// Control
//===----------------------------------------------------------------------===//

ParseResult LoopOp::parse(OpAsmParser &parser, OperationState &result) {
  int64_t tripCount;
  OpAsmParser::Argument iterationNumber;
  SmallVector<OpAsmParser::Argument> regionArgs;
  SmallVector<OpAsmParser::UnresolvedOperand> inits;
  SmallVector<Type> types;
  Builder &builder = parser.getBuilder();
  if (parser.parseInteger(tripCount) || parser.parseKeyword("times") ||
      parser.parseLParen() || parser.parseArgument(iterationNumber) ||
      parser.parseRParen())
    return failure();
  iterationNumber.type = RankedTensorType::get({}, builder.getI32Type());
  regionArgs.push_back(iterationNumber);
  if (succeeded(parser.parseOptionalKeyword("iter_args"))) {
    if (parser.parseAssignmentList(regionArgs, inits) ||
        parser.parseColonTypeList(types))
      return failure();
    if (types.size() != inits.size())
      return parser.emitError(parser.getNameLoc())
             << "loop has " << inits.size() << " carried values but "
             << types.size() << " types";
    for (auto [arg, type] : llvm::zip(llvm::drop_begin(regionArgs), types))
      arg.type = type;
  }
  if (parser.resolveOperands(inits, types, parser.getNameLoc(),
                             result.operands))
    return failure();
  result.addTypes(types);
  result.addAttribute(getTripCountAttrName(result.name),
                      builder.getI64IntegerAttr(tripCount));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, regionArgs) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  return success();
}

void LoopOp::print(OpAsmPrinter &printer) {
  printer << " " << getTripCountAttr().getInt() << " times (";
  printer.printOperand(getIterationNumber());
  printer << ")";
  if (!getInits().empty()) {
    printer << " iter_args(";
    llvm::interleaveComma(llvm::zip(getCarried(), getInits()), printer,
                          [&](auto pair) {
                            printer.printOperand(std::get<0>(pair));
                            printer << " = ";
                            printer.printOperand(std::get<1>(pair));
                          });
    printer << ") : ";
    llvm::interleaveComma(getInits().getTypes(), printer);
  }
  printer << " ";
  printer.printRegion(getBody(), /*printEntryBlockArgs=*/false);
  printer.printOptionalAttrDict((*this)->getAttrs(), {getTripCountAttrName()});
}

LogicalResult LoopOp::verifyRegions() {
  // The generated getter is unsigned, so read the attribute signed.
  int64_t tripCount = getTripCountAttr().getInt();
  if (tripCount < 0)
    return emitOpError() << "trip count " << tripCount
                         << " must be non-negative";
  Block &body = getBody().front();
  if (body.getNumArguments() != getInits().size() + 1)
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments; expected the iteration number and "
                         << getInits().size() << " carried values";
  auto counterType = dyn_cast<RankedTensorType>(body.getArgument(0).getType());
  if (!counterType || counterType.getRank() != 0 ||
      !counterType.getElementType().isInteger(32))
    return emitOpError() << "the iteration number must be a tensor<i32>, got "
                         << body.getArgument(0).getType();
  // Checked before the per-value loop, which indexes results by operand.
  if (getNumResults() != getInits().size())
    return emitOpError() << "has " << getNumResults() << " results for "
                         << getInits().size() << " carried values";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getInits(), getCarried()))) {
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError() << "carried value " << index << " is "
                           << std::get<0>(pair).getType()
                           << " but the body argument is "
                           << std::get<1>(pair).getType();
    if (getResult(index).getType() != std::get<0>(pair).getType())
      return emitOpError() << "result " << index
                           << " differs in type from its initial value";
  }
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "body must end with partita.yield";
  if (yield.getValues().getTypes() != getInits().getTypes())
    return yield.emitOpError() << "yields " << yield.getValues().size()
                               << " values whose types differ from the loop's "
                               << getInits().size() << " carried values";
  return success();
}

LogicalResult
OptimizationBarrierOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  llvm::append_range(types, adaptor.getOperands().getTypes());
  return success();
}
