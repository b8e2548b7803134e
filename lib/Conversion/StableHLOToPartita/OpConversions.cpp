//===- OpConversions.cpp - Single StableHLO ops into partita --------------===//
//
// Conversions of one StableHLO op each: constants and iota, comparisons,
// dot_general (an einsum), broadcast_in_dim, transpose, slices,
// concatenate and pad. Gathers and scatters are in Indexing.cpp.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"

namespace partita {
namespace stablehlo_import {

Value Importer::splat(Location loc, RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute scalar;
  if (auto floating = dyn_cast<FloatType>(element))
    scalar = FloatAttr::get(floating, value);
  else
    scalar = IntegerAttr::get(element, static_cast<int64_t>(value));
  return ConstantOp::create(builder, loc, type,
                            DenseElementsAttr::get(type, scalar));
}

FailureOr<SmallVector<Value>> Importer::constant(Operation *op) {
  auto value = dyn_cast_or_null<ElementsAttr>(property(op, "value"));
  if (!value)
    return reject(op, "stablehlo.constant without a dense value");
  // Unsigned constants are held in the signless type of their width.
  auto resultType = tensorOf(op->getResult(0));
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (dense && dense.getElementType() != resultType.getElementType() &&
      dense.getElementType().isInteger() &&
      dense.getElementType().getIntOrFloatBitWidth() ==
          resultType.getElementType().getIntOrFloatBitWidth())
    value = dense.bitcast(resultType.getElementType());
  return SmallVector<Value>{ConstantOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), value)};
}

FailureOr<SmallVector<Value>> Importer::iota(Operation *op) {
  auto dim = dyn_cast_or_null<IntegerAttr>(property(op, "iota_dimension"));
  if (!dim)
    return reject(op, "stablehlo.iota without an iota_dimension");
  return SmallVector<Value>{IotaOp::create(builder, op->getLoc(),
                                           op->getResult(0).getType(),
                                           dim.getInt())};
}

FailureOr<SmallVector<Value>> Importer::compare(Operation *op) {
  Attribute direction = property(op, "comparison_direction");
  std::string text = direction ? printed(direction) : "";
  std::optional<CompareDirection> kind;
  for (auto [name, value] :
       {std::pair{" EQ", CompareDirection::EQ}, {" NE", CompareDirection::NE},
        {" LT", CompareDirection::LT}, {" LE", CompareDirection::LE},
        {" GT", CompareDirection::GT}, {" GE", CompareDirection::GE}})
    if (text.find(name) != std::string::npos)
      kind = value;
  if (!kind)
    return reject(op, "stablehlo.compare with comparison_direction '" + text +
                          "'");
  if (Attribute type = property(op, "compare_type")) {
    std::string typeText = printed(type);
    if (typeText.find("TOTALORDER") != std::string::npos)
      return reject(op, "stablehlo.compare with compare_type TOTALORDER "
                        "(NaN ordering) is not supported");
  }
  return SmallVector<Value>{CompareOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), *kind,
      op->getOperand(0), op->getOperand(1))};
}

FailureOr<SmallVector<Value>> Importer::dotGeneral(Operation *op) {
  Attribute numbers = property(op, "dot_dimension_numbers");
  if (!numbers)
    return reject(op, "stablehlo.dot_general without dot_dimension_numbers");
  std::string text = printed(numbers);
  SmallVector<int64_t> lhsBatch = intList(text, "lhs_batching_dimensions");
  SmallVector<int64_t> rhsBatch = intList(text, "rhs_batching_dimensions");
  SmallVector<int64_t> lhsContract =
      intList(text, "lhs_contracting_dimensions");
  SmallVector<int64_t> rhsContract =
      intList(text, "rhs_contracting_dimensions");
  int64_t lhsRank = tensorOf(op->getOperand(0)).getRank();
  int64_t rhsRank = tensorOf(op->getOperand(1)).getRank();
  // Each side's batch and contracting dimensions: distinct, in range.
  auto valid = [](ArrayRef<int64_t> batch, ArrayRef<int64_t> contract,
                  int64_t rank) {
    llvm::SmallDenseSet<int64_t> seen;
    for (ArrayRef<int64_t> list : {batch, contract})
      for (int64_t d : list)
        if (d < 0 || d >= rank || !seen.insert(d).second)
          return false;
    return true;
  };
  if (lhsBatch.size() != rhsBatch.size() ||
      lhsContract.size() != rhsContract.size() || lhsRank + rhsRank > 26 ||
      !valid(lhsBatch, lhsContract, lhsRank) ||
      !valid(rhsBatch, rhsContract, rhsRank))
    return reject(op, "stablehlo.dot_general with dimension numbers '" + text +
                          "' that do not pair up");
  // Letters: lhs dims a.., rhs free dims after; batch and contracting rhs
  // dims share the lhs letter they pair with.
  std::string lhs, rhs(rhsRank, ' '), out;
  char next = 'a';
  for (int64_t d = 0; d < lhsRank; ++d)
    lhs += next++;
  for (size_t i = 0; i < rhsBatch.size(); ++i)
    rhs[rhsBatch[i]] = lhs[lhsBatch[i]];
  for (size_t i = 0; i < rhsContract.size(); ++i)
    rhs[rhsContract[i]] = lhs[lhsContract[i]];
  for (char &c : rhs)
    if (c == ' ')
      c = next++;
  auto contains = [](ArrayRef<int64_t> list, int64_t d) {
    return llvm::is_contained(list, d);
  };
  for (int64_t d : lhsBatch)
    out += lhs[d];
  for (int64_t d = 0; d < lhsRank; ++d)
    if (!contains(lhsBatch, d) && !contains(lhsContract, d))
      out += lhs[d];
  for (int64_t d = 0; d < rhsRank; ++d)
    if (!contains(rhsBatch, d) && !contains(rhsContract, d))
      out += rhs[d];
  std::string spec = lhs + "," + rhs + "->" + out;
  return SmallVector<Value>{EinsumOp::create(
      builder, op->getLoc(), op->getResult(0).getType(),
      builder.getStringAttr(spec),
      ValueRange{op->getOperand(0), op->getOperand(1)})};
}

FailureOr<SmallVector<Value>> Importer::broadcastInDim(Operation *op) {
  std::optional<SmallVector<int64_t>> dims =
      integers(property(op, "broadcast_dimensions"));
  if (!dims)
    return reject(op, "stablehlo.broadcast_in_dim without "
                      "broadcast_dimensions");
  Value operand = op->getOperand(0);
  auto resultType = tensorOf(op->getResult(0));
  // Ours needs increasing dims: transpose the operand first when they are
  // not (StableHLO allows any order).
  SmallVector<int64_t> order(dims->size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  llvm::sort(order, [&](int64_t a, int64_t b) { return (*dims)[a] < (*dims)[b]; });
  SmallVector<int64_t> sorted;
  for (int64_t i : order)
    sorted.push_back((*dims)[i]);
  bool identity = llvm::equal(order, llvm::seq<int64_t>(0, order.size()));
  if (!identity) {
    auto type = tensorOf(operand);
    SmallVector<int64_t> shape;
    for (int64_t i : order)
      shape.push_back(type.getDimSize(i));
    operand = TransposeOp::create(
        builder, op->getLoc(),
        RankedTensorType::get(shape, type.getElementType()), operand,
        builder.getDenseI64ArrayAttr(order));
  }
  if (tensorOf(operand).getShape() == resultType.getShape())
    return SmallVector<Value>{operand};
  return SmallVector<Value>{BroadcastOp::create(
      builder, op->getLoc(), resultType, operand,
      builder.getDenseI64ArrayAttr(sorted))};
}

FailureOr<SmallVector<Value>> Importer::transpose(Operation *op) {
  std::optional<SmallVector<int64_t>> perm =
      integers(property(op, "permutation"));
  if (!perm)
    return reject(op, "stablehlo.transpose without a permutation");
  return SmallVector<Value>{TransposeOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      builder.getDenseI64ArrayAttr(*perm))};
}

FailureOr<SmallVector<Value>> Importer::slice(Operation *op) {
  auto start = integers(property(op, "start_indices"));
  auto limit = integers(property(op, "limit_indices"));
  auto stride = integers(property(op, "strides"));
  if (!start || !limit || !stride)
    return reject(op, "stablehlo.slice without start, limit and strides");
  return SmallVector<Value>{SliceOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      builder.getDenseI64ArrayAttr(*start),
      builder.getDenseI64ArrayAttr(*limit),
      builder.getDenseI64ArrayAttr(*stride))};
}

FailureOr<SmallVector<Value>> Importer::concatenate(Operation *op) {
  auto dim = dyn_cast_or_null<IntegerAttr>(property(op, "dimension"));
  if (!dim)
    return reject(op, "stablehlo.concatenate without a dimension");
  return SmallVector<Value>{ConcatenateOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperands(),
      dim.getInt())};
}

FailureOr<SmallVector<Value>> Importer::pad(Operation *op) {
  std::optional<SmallVector<int64_t>> low =
      integers(property(op, "edge_padding_low"));
  std::optional<SmallVector<int64_t>> high =
      integers(property(op, "edge_padding_high"));
  std::optional<SmallVector<int64_t>> interior =
      integers(property(op, "interior_padding"));
  int64_t rank = tensorOf(op->getOperand(0)).getRank();
  auto sized = [&](const std::optional<SmallVector<int64_t>> &list) {
    return list && static_cast<int64_t>(list->size()) == rank;
  };
  if (!sized(low) || !sized(high) || (interior && !sized(interior)))
    return reject(op, "stablehlo.pad without edge padding for every "
                      "dimension");
  if (tensorOf(op->getOperand(1)).getRank() != 0)
    return reject(op, "stablehlo.pad whose padding value is not a scalar");
  SmallVector<int64_t> none(rank, 0);
  FailureOr<Value> x = padded(op, op->getOperand(0), op->getOperand(1), *low,
                              *high, interior ? ArrayRef<int64_t>(*interior)
                                              : ArrayRef<int64_t>(none));
  if (failed(x))
    return failure();
  if (x->getType() != op->getResult(0).getType())
    return reject(op, "stablehlo.pad whose result type does not match its "
                      "padding");
  return SmallVector<Value>{*x};
}

FailureOr<Value> Importer::padded(Operation *op, Value operand, Value padding,
                                  ArrayRef<int64_t> low,
                                  ArrayRef<int64_t> high,
                                  ArrayRef<int64_t> interior) {
  auto operandType = tensorOf(operand);
  int64_t rank = operandType.getRank();
  if (llvm::any_of(interior, [](int64_t v) { return v < 0; })) {
    fail(op) << "negative interior padding";
    return failure();
  }
  Location loc = op->getLoc();
  Type element = operandType.getElementType();
  Value x = operand;
  SmallVector<int64_t> shape(operandType.getShape());
  auto sliceTo = [&](ArrayRef<int64_t> start, ArrayRef<int64_t> limit) {
    SmallVector<int64_t> sizes, strides(rank, 1);
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(limit[d] - start[d]);
    x = SliceOp::create(builder, loc, RankedTensorType::get(sizes, element), x,
                        builder.getDenseI64ArrayAttr(start),
                        builder.getDenseI64ArrayAttr(limit),
                        builder.getDenseI64ArrayAttr(strides));
    shape = sizes;
  };
  // Interior padding (the gradient of a strided slice, x[::2]; a
  // convolution's input dilation): each element gets a new dimension of
  // `gap` padding values after it, which is then merged and its last `gap`
  // positions cut.
  for (int64_t d = 0; d < rank; ++d) {
    int64_t gap = interior[d], n = shape[d];
    if (gap == 0 || n == 0)
      continue;
    SmallVector<int64_t> split(shape);
    split.insert(split.begin() + d + 1, 1);
    x = ReshapeOp::create(builder, loc, RankedTensorType::get(split, element),
                          x);
    SmallVector<int64_t> none(rank + 1, 0), after(rank + 1, 0);
    after[d + 1] = gap;
    split[d + 1] = 1 + gap;
    x = PadOp::create(builder, loc, RankedTensorType::get(split, element), x,
                      padding, builder.getDenseI64ArrayAttr(none),
                      builder.getDenseI64ArrayAttr(after));
    shape[d] = n * (1 + gap);
    x = ReshapeOp::create(builder, loc, RankedTensorType::get(shape, element),
                          x);
    SmallVector<int64_t> start(rank, 0), limit(shape);
    limit[d] = n + (n - 1) * gap;
    sliceTo(start, limit);
  }
  // Edge padding; a negative one cuts.
  SmallVector<int64_t> grow(rank), growHigh(rank), wider(shape);
  for (int64_t d = 0; d < rank; ++d) {
    grow[d] = std::max<int64_t>(low[d], 0);
    growHigh[d] = std::max<int64_t>(high[d], 0);
    wider[d] += grow[d] + growHigh[d];
  }
  if (llvm::any_of(grow, [](int64_t v) { return v > 0; }) ||
      llvm::any_of(growHigh, [](int64_t v) { return v > 0; })) {
    x = PadOp::create(builder, loc, RankedTensorType::get(wider, element), x,
                      padding, builder.getDenseI64ArrayAttr(grow),
                      builder.getDenseI64ArrayAttr(growHigh));
    shape = wider;
  }
  SmallVector<int64_t> start(rank, 0), limit(shape);
  bool cut = false;
  for (int64_t d = 0; d < rank; ++d) {
    start[d] = std::max<int64_t>(-low[d], 0);
    limit[d] = shape[d] - std::max<int64_t>(-high[d], 0);
    cut |= start[d] > 0 || limit[d] < shape[d];
    if (limit[d] < start[d]) {
      fail(op) << "padding that cuts more than the whole dimension " << d;
      return failure();
    }
  }
  if (cut)
    sliceTo(start, limit);
  return x;
}

} // namespace stablehlo_import
} // namespace partita
