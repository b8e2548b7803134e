//===- OpConversions.cpp - Single StableHLO ops into partita --------------===//
//
// Conversions of one StableHLO op each: constants and iota, comparisons,
// dot_general (an einsum), broadcast_in_dim, transpose, slices,
// concatenate, pad, and the gathers and scatters JAX writes for row lookups,
// take_along_axis and their gradients (one-hot einsums).
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
  if (!low || !high)
    return reject(op, "stablehlo.pad without edge padding");
  if (interior && llvm::any_of(*interior, [](int64_t v) { return v != 0; }))
    return reject(op, "stablehlo.pad with interior padding is not supported");
  if (llvm::any_of(*low, [](int64_t v) { return v < 0; }) ||
      llvm::any_of(*high, [](int64_t v) { return v < 0; }))
    return reject(op, "stablehlo.pad with negative padding is not supported");
  return SmallVector<Value>{PadOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      op->getOperand(1), builder.getDenseI64ArrayAttr(*low),
      builder.getDenseI64ArrayAttr(*high))};
}

FailureOr<SmallVector<Value>> Importer::gather(Operation *op) {
  // Row lookups (`table[tokens]`, jnp.take on axis 0): one index per row,
  // whole rows.
  Attribute numbers = property(op, "dimension_numbers");
  std::optional<SmallVector<int64_t>> sizes =
      integers(property(op, "slice_sizes"));
  std::string text = numbers ? printed(numbers) : "";
  Value table = op->getOperand(0), indices = op->getOperand(1);
  auto tableType = tensorOf(table), indexType = tensorOf(indices);
  int64_t batchRank = indexType.getRank() - 1;
  bool rowLookup =
      sizes && indexType.getRank() >= 1 &&
      indexType.getDimSize(batchRank) == 1 &&
      intList(text, "collapsed_slice_dims") == SmallVector<int64_t>{0} &&
      intList(text, "start_index_map") == SmallVector<int64_t>{0} &&
      text.find("index_vector_dim = " + std::to_string(batchRank)) !=
          std::string::npos &&
      text.find("operand_batching_dims") == std::string::npos &&
      (*sizes)[0] == 1;
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup = (*sizes)[d] == tableType.getDimSize(d);
  SmallVector<int64_t> offsets = intList(text, "offset_dims");
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup = static_cast<int64_t>(offsets.size()) == tableType.getRank() - 1 &&
                offsets[d - 1] == batchRank + d - 1;
  if (!rowLookup)
    return takeAlongLastAxis(op, text, sizes);
  Location loc = op->getLoc();
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  return SmallVector<Value>{GatherOp::create(
      builder, loc, op->getResult(0).getType(), table, flat)};
}

FailureOr<SmallVector<Value>> Importer::scatter(Operation *op) {
  // Two additive scatters JAX's gradients write:
  //  * rows: table[indices[i...]] += updates[i...] (the adjoint of a row
  //    gather: embeddings) -> partita.scatter_add;
  //  * one element per batch row: out[b..., idx[b..., k]] += upd[b..., k]
  //    (the adjoint of top_k) -> a one-hot einsum, exact for sums.
  Attribute numbers = property(op, "scatter_dimension_numbers");
  std::string text = numbers ? printed(numbers) : "";
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  if (op->getNumOperands() != 3 || !kind || *kind != ReductionKind::Sum)
    return reject(op, "stablehlo.scatter other than a sum into one array");
  Value operand = op->getOperand(0), indices = op->getOperand(1),
        updates = op->getOperand(2);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices),
       updateType = tensorOf(updates);
  int64_t indexRank = indexType.getRank();
  bool trailingIndex =
      indexRank >= 1 && indexType.getDimSize(indexRank - 1) == 1 &&
      text.find("index_vector_dim = " + std::to_string(indexRank - 1)) !=
          std::string::npos;
  Location loc = op->getLoc();
  auto flatIndexType = RankedTensorType::get(
      indexType.getShape().drop_back(), indexType.getElementType());
  SmallVector<int64_t> batching = intList(text, "input_batching_dims");
  SmallVector<int64_t> inserted = intList(text, "inserted_window_dims");
  SmallVector<int64_t> toOperand = intList(text, "scatter_dims_to_operand_dims");
  if (trailingIndex && batching.empty() && inserted == SmallVector<int64_t>{0} &&
      toOperand == SmallVector<int64_t>{0}) {
    Value flat = ReshapeOp::create(builder, loc, flatIndexType, indices);
    return SmallVector<Value>{ScatterAddOp::create(
        builder, loc, operandType, operand, flat, updates)};
  }
  int64_t batch = static_cast<int64_t>(batching.size());
  bool perRow =
      trailingIndex && operandType.getRank() == batch + 1 &&
      intList(text, "scatter_indices_batching_dims") == batching &&
      inserted == SmallVector<int64_t>{batch} &&
      toOperand == SmallVector<int64_t>{batch} &&
      indexRank == batch + 2 && updateType.getRank() == batch + 1;
  for (int64_t d = 0; perRow && d < batch; ++d)
    perRow = batching[d] == d;
  if (!perRow)
    return reject(op, "stablehlo.scatter other than rows of a table or one "
                      "element per batch row is not supported");
  // out += sum_k upd[b..., k] * one_hot[b..., k, e].
  Value hot = oneHot(loc, indices, operandType.getDimSize(batch),
                     updateType.getElementType());
  std::string letters = "abcdefghij";
  std::string b = letters.substr(0, batch);
  std::string spec = b + "k," + b + "ke->" + b + "e";
  Value added = EinsumOp::create(builder, loc, operandType,
                                 builder.getStringAttr(spec),
                                 ValueRange{updates, hot});
  return SmallVector<Value>{
      AddOp::create(builder, loc, operandType, operand, added)};
}

Value Importer::oneHot(Location loc, Value indices, int64_t width,
                       Type element) {
  auto indexType = tensorOf(indices);
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  SmallVector<int64_t> hotShape(flatType.getShape());
  hotShape.push_back(width);
  auto hotIndexType =
      RankedTensorType::get(hotShape, indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < flatType.getRank(); ++d)
    keep.push_back(d);
  Value spread = BroadcastOp::create(builder, loc, hotIndexType, flat,
                                     builder.getDenseI64ArrayAttr(keep));
  Value positions = IotaOp::create(builder, loc, hotIndexType,
                                   static_cast<int64_t>(hotShape.size()) - 1);
  Value hit = CompareOp::create(
      builder, loc, RankedTensorType::get(hotShape, builder.getI1Type()),
      CompareDirection::EQ, spread, positions);
  return ConvertOp::create(builder, loc,
                           RankedTensorType::get(hotShape, element), hit);
}

FailureOr<SmallVector<Value>> Importer::takeAlongLastAxis(
    Operation *op, const std::string &text,
    const std::optional<SmallVector<int64_t>> &sizes) {
  // jnp.take_along_axis on the last axis: out[b..., k] =
  // x[b..., idx[b..., k]], a batched one-element gather -> a one-hot einsum
  // (exact for finite values).
  Value operand = op->getOperand(0), indices = op->getOperand(1);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices);
  auto resultType = tensorOf(op->getResult(0));
  int64_t batch = operandType.getRank() - 1;
  SmallVector<int64_t> batching = intList(text, "operand_batching_dims");
  bool matches =
      sizes && isa<FloatType>(operandType.getElementType()) && batch <= 9 &&
      static_cast<int64_t>(batching.size()) == batch &&
      intList(text, "start_indices_batching_dims") == batching &&
      intList(text, "collapsed_slice_dims") == SmallVector<int64_t>{batch} &&
      intList(text, "start_index_map") == SmallVector<int64_t>{batch} &&
      intList(text, "offset_dims").empty() &&
      indexType.getRank() == batch + 2 &&
      indexType.getDimSize(batch + 1) == 1 &&
      text.find("index_vector_dim = " + std::to_string(batch + 1)) !=
          std::string::npos &&
      llvm::all_of(*sizes, [](int64_t v) { return v == 1; });
  for (int64_t d = 0; matches && d < batch; ++d)
    matches = batching[d] == d;
  if (!matches)
    return reject(op, "stablehlo.gather other than whole rows by one index "
                      "each (table[indices]) or one element per row "
                      "(take_along_axis on the last axis) is not supported");
  Location loc = op->getLoc();
  Value hot = oneHot(loc, indices, operandType.getDimSize(batch),
                     operandType.getElementType());
  std::string b = std::string("abcdefghi").substr(0, batch);
  std::string spec = b + "e," + b + "ke->" + b + "k";
  return SmallVector<Value>{EinsumOp::create(builder, loc, resultType,
                                             builder.getStringAttr(spec),
                                             ValueRange{operand, hot})};
}

} // namespace stablehlo_import
} // namespace partita
