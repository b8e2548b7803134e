//===- Reductions.cpp - StableHLO reductions into partita -----------------===//
//
// Conversions of stablehlo.reduce (sums, maxima, minima, and, or; argmax
// and argmin as two-value reduces) and of the reduce_window jnp.cumsum
// writes, and the reading of a reduction body.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace partita {
namespace stablehlo_import {

bool isIdentityOf(Value value, ReductionKind kind) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  auto elements = dyn_cast_or_null<DenseElementsAttr>(property(def, "value"));
  if (!elements || !elements.isSplat())
    return false;
  Type type = elements.getElementType();
  if (isa<FloatType>(type)) {
    APFloat v = elements.getSplatValue<APFloat>();
    switch (kind) {
    case ReductionKind::Sum:
      return v.isZero();
    case ReductionKind::Max:
      return v.isInfinity() && v.isNegative();
    case ReductionKind::Min:
      return v.isInfinity() && !v.isNegative();
    default:
      return false;
    }
  }
  APInt v = elements.getSplatValue<APInt>();
  unsigned width = v.getBitWidth();
  switch (kind) {
  case ReductionKind::Sum:
  case ReductionKind::Or:
    return v.isZero();
  case ReductionKind::Max:
    return width == 1 ? v.isZero() : v.isMinSignedValue();
  case ReductionKind::Min:
  case ReductionKind::And:
    return width == 1 ? v.isOne() : (kind == ReductionKind::And
                                         ? v.isAllOnes()
                                         : v.isMaxSignedValue());
  }
  return false;
}

namespace {

/// The iota dimension of `value` if an iota defines it.
std::optional<int64_t> iotaDimension(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || (def->getName().getStringRef() != "stablehlo.iota" &&
               !isa<IotaOp>(def)))
    return std::nullopt;
  if (auto iota = dyn_cast<IotaOp>(def))
    return iota.getDim();
  if (auto dim = dyn_cast_or_null<IntegerAttr>(property(def, "iota_dimension")))
    return dim.getInt();
  return std::nullopt;
}

} // namespace

/// The reduction a reduce body computes: its one combining op applied to
/// the two block arguments.
std::optional<ReductionKind> reductionOfBody(Region &body) {
  if (!body.hasOneBlock())
    return std::nullopt;
  Block &block = body.front();
  if (block.getNumArguments() != 2 || block.getOperations().size() != 2)
    return std::nullopt;
  Operation &combine = block.front();
  if (combine.getNumOperands() != 2 ||
      !llvm::is_contained(combine.getOperands(), block.getArgument(0)) ||
      !llvm::is_contained(combine.getOperands(), block.getArgument(1)))
    return std::nullopt;
  static const std::pair<const char *, ReductionKind> combines[] = {
      {"stablehlo.add", ReductionKind::Sum},
      {"stablehlo.maximum", ReductionKind::Max},
      {"stablehlo.minimum", ReductionKind::Min},
      {"stablehlo.and", ReductionKind::And},
      {"stablehlo.or", ReductionKind::Or}};
  StringRef name = combine.getName().getStringRef();
  for (const auto &[opName, kind] : combines)
    if (name == opName)
      return kind;
  return std::nullopt;
}

namespace {

/// `x` and `y` combined elementwise by `kind` (add, max, min, and, or).
Value combineBy(OpBuilder &builder, Location loc, ReductionKind kind, Type type,
                Value x, Value y) {
  switch (kind) {
  case ReductionKind::Sum:
    return AddOp::create(builder, loc, type, x, y);
  case ReductionKind::Max:
    return MaxOp::create(builder, loc, type, x, y);
  case ReductionKind::Min:
    return MinOp::create(builder, loc, type, x, y);
  case ReductionKind::And:
    return AndOp::create(builder, loc, type, x, y);
  case ReductionKind::Or:
    return OrOp::create(builder, loc, type, x, y);
  }
  return {};
}

} // namespace

FailureOr<SmallVector<Value>> Importer::reduce(Operation *op) {
  std::optional<SmallVector<int64_t>> dims =
      integers(property(op, "dimensions"));
  if (!dims || op->getNumRegions() != 1)
    return reject(op, "stablehlo.reduce without dimensions or a body");
  if (op->getNumOperands() == 4)
    return argReduce(op, *dims);
  if (op->getNumOperands() != 2)
    return reject(op, "stablehlo.reduce over " +
                          Twine(op->getNumOperands() / 2) +
                          " values at once is not supported");
  std::optional<ReductionKind> kind = reductionOfBody(op->getRegion(0));
  if (!kind)
    return reject(op, "stablehlo.reduce whose body is not one add, maximum, "
                      "minimum, and or or of its two arguments");
  Location loc = op->getLoc();
  auto resultType = tensorOf(op->getResult(0));
  Value reduced = ReduceOp::create(builder, loc, resultType, *kind,
                                   op->getOperand(0),
                                   builder.getDenseI64ArrayAttr(*dims));
  Value init = op->getOperand(1);
  if (isIdentityOf(init, *kind))
    return SmallVector<Value>{reduced};
  // Fold a non-identity init value in once.
  Value initWhole = resultType.getRank() == 0
                        ? init
                        : Value(BroadcastOp::create(
                              builder, loc, resultType, init,
                              builder.getDenseI64ArrayAttr({})));
  return SmallVector<Value>{
      combineBy(builder, loc, *kind, resultType, reduced, initWhole)};
}

FailureOr<SmallVector<Value>> Importer::argReduce(Operation *op,
                                                  ArrayRef<int64_t> dims) {
  // jnp.argmax/argmin: reduce (values, iota along the reduced dimension)
  // with a body that keeps the greater (lesser) value and, on ties, the
  // lower index.
  Value values = op->getOperand(0);
  std::optional<int64_t> iotaDim = iotaDimension(op->getOperand(1));
  if (dims.size() != 1 || !iotaDim || *iotaDim != dims[0])
    return reject(op, "a two-value stablehlo.reduce that is not an argmax "
                      "or argmin (values and an iota along the one reduced "
                      "dimension)");
  std::optional<CompareDirection> direction;
  op->getRegion(0).walk([&](Operation *inner) {
    if (inner->getName().getStringRef() != "stablehlo.compare" ||
        inner->getOperand(0) != op->getRegion(0).getArgument(0))
      return;
    std::string text = printed(property(inner, "comparison_direction"));
    if (text.find(" GT") != std::string::npos)
      direction = CompareDirection::GT;
    else if (text.find(" LT") != std::string::npos)
      direction = CompareDirection::LT;
  });
  if (!direction)
    return reject(op, "a two-value stablehlo.reduce whose body compares "
                      "neither greater nor less");
  Location loc = op->getLoc();
  auto valueType = tensorOf(values);
  if (*direction == CompareDirection::LT)
    values = NegOp::create(builder, loc, valueType, values);
  Value index = ArgmaxOp::create(builder, loc, op->getResult(1).getType(),
                                 values, dims[0]);
  Value extreme = ReduceOp::create(
      builder, loc, op->getResult(0).getType(),
      *direction == CompareDirection::GT ? ReductionKind::Max
                                         : ReductionKind::Min,
      op->getOperand(0), builder.getDenseI64ArrayAttr(dims));
  return SmallVector<Value>{extreme, index};
}

FailureOr<SmallVector<Value>> Importer::reduceWindow(Operation *op) {
  // jnp.cumsum: a sum over a window as long as one dimension, padded by
  // length - 1 on one side, stride 1.
  std::optional<SmallVector<int64_t>> window =
      integers(property(op, "window_dimensions"));
  auto padding = dyn_cast_or_null<DenseIntElementsAttr>(property(op, "padding"));
  std::optional<SmallVector<int64_t>> strides =
      integers(property(op, "window_strides"));
  auto type = tensorOf(op->getResult(0));
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  std::optional<int64_t> dim;
  bool reverse = false, matches = window && padding && op->getNumOperands() == 2 &&
                                  kind && *kind == ReductionKind::Sum &&
                                  isIdentityOf(op->getOperand(1), *kind);
  SmallVector<int64_t> pads;
  if (padding)
    for (const APInt &value : padding)
      pads.push_back(value.getSExtValue());
  for (int64_t d = 0; matches && d < type.getRank(); ++d) {
    int64_t size = type.getDimSize(d);
    if ((*window)[d] == 1 && pads[2 * d] == 0 && pads[2 * d + 1] == 0)
      continue;
    if (dim || (*window)[d] != size ||
        !((pads[2 * d] == size - 1 && pads[2 * d + 1] == 0) ||
          (pads[2 * d] == 0 && pads[2 * d + 1] == size - 1)))
      matches = false;
    dim = d;
    reverse = pads[2 * d] == 0 && size > 1;
  }
  if (strides && llvm::any_of(*strides, [](int64_t v) { return v != 1; }))
    matches = false;
  if (matches && dim)
    return SmallVector<Value>{CumsumOp::create(builder, op->getLoc(), type,
                                               op->getOperand(0), *dim,
                                               reverse)};
  return poolWindows(op);
}

FailureOr<SmallVector<Value>> Importer::poolWindows(Operation *op) {
  // Pooling (nnx.max_pool, nnx.avg_pool's sum, lax.reduce_window): the
  // operand padded with the init value (and dilated), then one strided
  // slice per window offset, combined elementwise.
  auto type = tensorOf(op->getResult(0));
  int64_t rank = type.getRank();
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  if (op->getNumOperands() != 2 || op->getNumResults() != 1 || !kind ||
      (*kind != ReductionKind::Sum && *kind != ReductionKind::Max &&
       *kind != ReductionKind::Min) ||
      tensorOf(op->getOperand(1)).getRank() != 0)
    return reject(op, "stablehlo.reduce_window other than a sum, max or min "
                      "of one array is not supported");
  std::optional<SmallVector<int64_t>> window =
      integers(property(op, "window_dimensions"));
  std::optional<SmallVector<int64_t>>
      strides = positiveListOr1(op, "window_strides", rank),
      baseDilation = positiveListOr1(op, "base_dilations", rank),
      windowDilation = positiveListOr1(op, "window_dilations", rank);
  SmallVector<int64_t> low, high;
  if (!paddingPairs(op, rank, low, high))
    return reject(op, "stablehlo.reduce_window with padding for another "
                      "rank");
  if (!window || static_cast<int64_t>(window->size()) != rank || !strides ||
      !baseDilation || !windowDilation ||
      llvm::any_of(*window, [](int64_t v) { return v < 1; }))
    return reject(op, "stablehlo.reduce_window with unreadable window "
                      "dimensions, strides or dilations");
  int64_t offsets = 1;
  for (int64_t w : *window)
    offsets *= w;
  if (offsets > 1024)
    return reject(op, "stablehlo.reduce_window over windows of more than "
                      "1024 elements is not supported");
  SmallVector<int64_t> interior;
  for (int64_t d : *baseDilation)
    interior.push_back(d - 1);
  Value init = op->getOperand(1);
  FailureOr<Value> x =
      padded(op, op->getOperand(0), init, low, high, interior);
  if (failed(x))
    return failure();
  Location loc = op->getLoc();
  auto xType = tensorOf(*x);
  for (int64_t d = 0; d < rank; ++d)
    if (type.getDimSize(d) > 0 &&
        ((*window)[d] - 1) * (*windowDilation)[d] +
                (type.getDimSize(d) - 1) * (*strides)[d] + 1 >
            xType.getDimSize(d))
      return reject(op, "stablehlo.reduce_window whose result shape does "
                        "not fit its windows");
  Value result;
  SmallVector<int64_t> offset(rank, 0);
  for (int64_t n = 0; n < offsets; ++n) {
    SmallVector<int64_t> start;
    for (int64_t d = 0; d < rank; ++d)
      start.push_back(offset[d] * (*windowDilation)[d]);
    Value piece = windowSlice(loc, *x, start, *strides, type.getShape());
    if (!result)
      result = piece;
    else if (*kind == ReductionKind::Sum)
      result = AddOp::create(builder, loc, type, result, piece);
    else if (*kind == ReductionKind::Max)
      result = MaxOp::create(builder, loc, type, result, piece);
    else
      result = MinOp::create(builder, loc, type, result, piece);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++offset[d] < (*window)[d])
        break;
      offset[d] = 0;
    }
  }
  // An init value other than the identity is combined once.
  if (!isIdentityOf(init, *kind)) {
    Value spread = BroadcastOp::create(builder, loc, type, init,
                                       builder.getDenseI64ArrayAttr({}));
    if (*kind == ReductionKind::Sum)
      result = AddOp::create(builder, loc, type, result, spread);
    else if (*kind == ReductionKind::Max)
      result = MaxOp::create(builder, loc, type, result, spread);
    else
      result = MinOp::create(builder, loc, type, result, spread);
  }
  return SmallVector<Value>{result};
}

Value Importer::windowSlice(Location loc, Value x, ArrayRef<int64_t> start,
                            ArrayRef<int64_t> strides, ArrayRef<int64_t> out) {
  auto type = tensorOf(x);
  SmallVector<int64_t> limit;
  for (size_t d = 0; d < start.size(); ++d)
    limit.push_back(out[d] == 0 ? start[d]
                                : start[d] + (out[d] - 1) * strides[d] + 1);
  return SliceOp::create(
      builder, loc, RankedTensorType::get(out, type.getElementType()), x,
      builder.getDenseI64ArrayAttr(start), builder.getDenseI64ArrayAttr(limit),
      builder.getDenseI64ArrayAttr(strides));
}

} // namespace stablehlo_import
} // namespace partita
