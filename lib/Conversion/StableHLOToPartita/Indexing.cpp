//===- Indexing.cpp - StableHLO gather and scatter into partita -----------===//
//
// stablehlo.gather and stablehlo.scatter with any dimension numbers.
// Row lookups (`table[tokens]`) and their additive adjoints become
// partita.gather and partita.scatter_add; every other form becomes a chain
// of one-hot einsums, one per indexed operand dimension, so that the
// partitioner splits it like any contraction: along the index batch (index
// pass-through), along the operand's indexed dimension (a partial sum and
// an all-reduce: operand pass-through), or both. docs/JAX.md explains the
// lowering and its limits.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "llvm/ADT/STLExtras.h"

namespace partita {
namespace stablehlo_import {

namespace {

/// The integer after `key = ` in an attribute's text, or `absent`.
int64_t intValue(StringRef text, StringRef key, int64_t absent) {
  size_t at = text.find((key + " = ").str());
  if (at == StringRef::npos)
    return absent;
  StringRef rest = text.drop_front(at + key.size() + 3);
  rest = rest.take_while([](char c) { return c == '-' || isdigit(c); });
  int64_t value = absent;
  if (rest.getAsInteger(10, value))
    return absent;
  return value;
}

/// Einsum labels handed out in order, with the size each stands for.
struct Labels {
  std::string pool =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  size_t next = 0;
  llvm::DenseMap<char, int64_t> sizes;
  /// A new label for a dimension of `size`, or none when all are taken.
  std::optional<char> fresh(int64_t size) {
    if (next >= pool.size())
      return std::nullopt;
    char label = pool[next++];
    sizes[label] = size;
    return label;
  }
};

/// The index batch G of a gather or scatter: the index dimensions other
/// than the index vector's, their sizes and labels.
struct IndexBatch {
  SmallVector<int64_t> dims, shape;
  std::string labels;
};

/// The index batch of `indexType` with its vector along `vectorDim`
/// (labels from `pool`), or none when the labels run out.
std::optional<IndexBatch> indexBatchOf(RankedTensorType indexType,
                                       int64_t vectorDim, Labels &pool) {
  IndexBatch batch;
  for (int64_t d = 0; d < indexType.getRank(); ++d) {
    if (d == vectorDim)
      continue;
    std::optional<char> label = pool.fresh(indexType.getDimSize(d));
    if (!label)
      return std::nullopt;
    batch.dims.push_back(d);
    batch.shape.push_back(indexType.getDimSize(d));
    batch.labels.push_back(*label);
  }
  return batch;
}

/// One one-hot factor of an indexing: sel[G..., w, p] = (p == start + w),
/// where start is an index column (clamped or not) or 0.
struct Selection {
  Value value;
  std::string labels;
  char window;   // the w label
  char position; // the p label
};

} // namespace

Value Importer::indexColumn(Location loc, Value indices, int64_t vectorDim,
                            int64_t column, ArrayRef<int64_t> batchShape) {
  auto indexType = tensorOf(indices);
  Value picked = indices;
  if (vectorDim < indexType.getRank()) {
    SmallVector<int64_t> start(indexType.getRank(), 0),
        limit(indexType.getShape()), strides(indexType.getRank(), 1);
    start[vectorDim] = column;
    limit[vectorDim] = column + 1;
    SmallVector<int64_t> shape(indexType.getShape());
    shape[vectorDim] = 1;
    picked = SliceOp::create(
        builder, loc, RankedTensorType::get(shape, indexType.getElementType()),
        indices, builder.getDenseI64ArrayAttr(start),
        builder.getDenseI64ArrayAttr(limit),
        builder.getDenseI64ArrayAttr(strides));
  }
  return ReshapeOp::create(
      builder, loc,
      RankedTensorType::get(batchShape, indexType.getElementType()), picked);
}

Value Importer::selection(Location loc, Value start, int64_t window,
                          int64_t extent, std::optional<int64_t> clampHigh,
                          Type element) {
  // sel[G..., w, p] = (p == clamp(start[G...]) + w).
  auto startType = tensorOf(start);
  Type indexElement = startType.getElementType();
  int64_t batch = startType.getRank();
  if (clampHigh) {
    Value low = splat(loc, startType, 0);
    Value high = splat(loc, startType, static_cast<double>(*clampHigh));
    start = MaxOp::create(builder, loc, startType, start, low);
    start = MinOp::create(builder, loc, startType, start, high);
  }
  SmallVector<int64_t> shape(startType.getShape());
  shape.push_back(window);
  shape.push_back(extent);
  auto indexType = RankedTensorType::get(shape, indexElement);
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < batch; ++d)
    keep.push_back(d);
  Value spread = BroadcastOp::create(builder, loc, indexType, start,
                                     builder.getDenseI64ArrayAttr(keep));
  Value offsets = IotaOp::create(builder, loc, indexType, batch);
  Value positions = IotaOp::create(builder, loc, indexType, batch + 1);
  Value target = AddOp::create(builder, loc, indexType, spread, offsets);
  Value hit = CompareOp::create(
      builder, loc, RankedTensorType::get(shape, builder.getI1Type()),
      CompareDirection::EQ, positions, target);
  return ConvertOp::create(builder, loc, RankedTensorType::get(shape, element),
                           hit);
}

namespace {

/// Builds a chain of two-operand einsums: the running value with its
/// labels, contracted with one selection after another.
class EinsumChain {
public:
  EinsumChain(OpBuilder &builder, Location loc, Value value,
              std::string labels, llvm::DenseMap<char, int64_t> &sizes)
      : builder(builder), loc(loc), value(value), labels(std::move(labels)),
        sizes(sizes) {}

  /// Contracts with `other` (labels `otherLabels`), keeping `keep` labels in
  /// that order.
  void apply(Value other, StringRef otherLabels, StringRef keep) {
    SmallVector<int64_t> shape;
    for (char label : keep)
      shape.push_back(sizes.lookup(label));
    Type element = tensorOf(value).getElementType();
    std::string spec =
        labels + "," + otherLabels.str() + "->" + keep.str();
    value = EinsumOp::create(builder, loc,
                             RankedTensorType::get(shape, element),
                             builder.getStringAttr(spec),
                             ValueRange{value, other});
    labels = keep.str();
  }

  OpBuilder &builder;
  Location loc;
  Value value;
  std::string labels;
  llvm::DenseMap<char, int64_t> &sizes;
};

/// The labels of `labels` and then those of `more` not already in them,
/// less `drop`.
std::string unionLess(StringRef labels, StringRef more, StringRef drop) {
  std::string out;
  for (char c : labels.str() + more.str())
    if (out.find(c) == std::string::npos && drop.find(c) == StringRef::npos)
      out.push_back(c);
  return out;
}

/// Whether `element` is a type partita's einsum computes in (not bool).
bool einsumElement(Type element) { return !element.isInteger(1); }

/// Elements of a tensor of `shape`, saturating.
int64_t elementsOf(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size != 0 && count > (int64_t{1} << 62) / size)
      return int64_t{1} << 62;
    count *= size;
  }
  return count;
}

/// One-hot selections larger than this are refused: they would hold more
/// than the gather's result many times over.
constexpr int64_t kMaxSelectionElements = int64_t{1} << 28;

} // namespace

FailureOr<std::pair<Value, std::string>> Importer::dimensionSelection(
    Operation *op, Value indices, int64_t vectorDim, int64_t column,
    ArrayRef<int64_t> batchShape, StringRef batchLabels, int64_t window,
    int64_t extent, char windowLabel, char position, bool clamp,
    Type element) {
  Location loc = op->getLoc();
  if (column < 0) {
    // A fixed slice from 0: sel[w, p] = (p == w).
    auto zero = RankedTensorType::get({}, builder.getI32Type());
    Value sel = selection(loc, splat(loc, zero, 0), window, extent,
                          std::nullopt, element);
    return std::make_pair(sel, std::string{windowLabel, position});
  }
  if (elementsOf(batchShape) * window >
      kMaxSelectionElements / std::max<int64_t>(extent, 1)) {
    fail(op) << op->getName() << " whose one-hot selection would hold more "
             << "than 2^28 elements is not supported";
    return failure();
  }
  Value start = indexColumn(loc, indices, vectorDim, column, batchShape);
  Value sel = selection(loc, start, window, extent,
                        clamp ? std::optional<int64_t>(extent - window)
                              : std::nullopt,
                        element);
  return std::make_pair(sel, batchLabels.str() + windowLabel + position);
}

FailureOr<SmallVector<Value>> Importer::generalGather(Operation *op,
                                                      StringRef text) {
  Location loc = op->getLoc();
  Value operand = op->getOperand(0), indices = op->getOperand(1);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices);
  auto resultType = tensorOf(op->getResult(0));
  std::optional<SmallVector<int64_t>> sizes =
      integers(property(op, "slice_sizes"));
  int64_t rank = operandType.getRank(), indexRank = indexType.getRank();
  int64_t vectorDim = intValue(text, "index_vector_dim", 0);
  SmallVector<int64_t> offsetDims = intList(text, "offset_dims"),
                       collapsed = intList(text, "collapsed_slice_dims"),
                       operandBatching = intList(text, "operand_batching_dims"),
                       indexBatching =
                           intList(text, "start_indices_batching_dims"),
                       startMap = intList(text, "start_index_map");
  int64_t vectorSize =
      vectorDim < indexRank ? indexType.getDimSize(vectorDim) : 1;
  auto inRange = [](ArrayRef<int64_t> dims, int64_t bound) {
    return llvm::all_of(dims,
                        [&](int64_t d) { return d >= 0 && d < bound; });
  };
  if (!sizes || static_cast<int64_t>(sizes->size()) != rank ||
      vectorDim < 0 || vectorDim > indexRank ||
      static_cast<int64_t>(startMap.size()) != vectorSize ||
      operandBatching.size() != indexBatching.size() ||
      !inRange(startMap, rank) || !inRange(collapsed, rank) ||
      !inRange(operandBatching, rank) || !inRange(indexBatching, indexRank) ||
      !inRange(offsetDims, resultType.getRank()))
    return reject(op, "stablehlo.gather with inconsistent dimension numbers '" +
                          text + "'");
  if (startMap.empty())
    return reject(op, "stablehlo.gather without indexed dimensions is not "
                      "supported");
  Type element = operandType.getElementType();
  if (!einsumElement(element))
    return reject(op, "stablehlo.gather of a boolean array is not supported "
                      "(gather its conversion to an integer type)");

  // The index batch G: the index dimensions other than the vector's.
  Labels pool;
  std::optional<IndexBatch> batch = indexBatchOf(indexType, vectorDim, pool);
  if (!batch)
    return reject(op, "stablehlo.gather of too high a rank");
  const SmallVector<int64_t> &batchDims = batch->dims, &batchShape = batch->shape;
  const std::string &batchLabels = batch->labels;
  llvm::DenseMap<char, int64_t> &labelSize = pool.sizes;
  auto fresh = [&](int64_t size) { return pool.fresh(size); };
  // Each operand dimension: its label, and its window label (the result's
  // offset dimension, or a size-1 label summed away when collapsed).
  std::string operandLabels, windowLabels;
  SmallVector<Selection> selections;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t extent = operandType.getDimSize(d), window = (*sizes)[d];
    if (window < 0 || window > extent)
      return reject(op, "stablehlo.gather with slice size " +
                            std::to_string(window) + " on dimension " +
                            std::to_string(d) + " of size " +
                            std::to_string(extent));
    const int64_t *batching = llvm::find(operandBatching, d);
    if (batching != operandBatching.end()) {
      int64_t indexDim = indexBatching[batching - operandBatching.begin()];
      const int64_t *at = llvm::find(batchDims, indexDim);
      operandLabels.push_back(batchLabels[at - batchDims.begin()]);
      windowLabels.push_back(0);
      continue;
    }
    std::optional<char> position = fresh(extent), windowLabel = fresh(window);
    if (!position || !windowLabel)
      return reject(op, "stablehlo.gather of too high a rank");
    const int64_t *indexed = llvm::find(startMap, d);
    windowLabels.push_back(*windowLabel);
    if (indexed == startMap.end() && window == extent) {
      operandLabels.push_back(*windowLabel);
      continue;
    }
    operandLabels.push_back(*position);
    int64_t column =
        indexed == startMap.end() ? -1 : indexed - startMap.begin();
    FailureOr<std::pair<Value, std::string>> sel = dimensionSelection(
        op, indices, vectorDim, column, batchShape, batchLabels, window,
        extent, *windowLabel, *position, /*clamp=*/true, element);
    if (failed(sel))
      return failure();
    selections.push_back({sel->first, sel->second, *windowLabel, *position});
  }
  // The result's labels: offset dimensions take the window labels of the
  // uncollapsed, unbatched operand dimensions in order; the others the
  // index batch in order.
  std::string resultLabels;
  size_t nextBatch = 0;
  SmallVector<char> offsetLabels;
  for (int64_t d = 0; d < rank; ++d)
    if (windowLabels[d] && !llvm::is_contained(collapsed, d))
      offsetLabels.push_back(windowLabels[d]);
  if (offsetLabels.size() != offsetDims.size() ||
      static_cast<int64_t>(offsetDims.size() + batchLabels.size()) !=
          resultType.getRank())
    return reject(op, "stablehlo.gather whose result rank does not match "
                      "its dimension numbers '" +
                          text + "'");
  size_t nextOffset = 0;
  for (int64_t d = 0; d < resultType.getRank(); ++d)
    resultLabels.push_back(llvm::is_contained(offsetDims, d)
                               ? offsetLabels[nextOffset++]
                               : batchLabels[nextBatch++]);
  for (int64_t d = 0; d < resultType.getRank(); ++d)
    if (labelSize.lookup(resultLabels[d]) != resultType.getDimSize(d))
      return reject(op, "stablehlo.gather whose result shape does not match "
                        "its slice sizes");
  if (selections.empty())
    return reject(op, "stablehlo.gather without indexed dimensions is not "
                      "supported");
  EinsumChain chain(builder, loc, operand, operandLabels, labelSize);
  for (size_t i = 0; i < selections.size(); ++i) {
    const Selection &sel = selections[i];
    bool last = i + 1 == selections.size();
    chain.apply(sel.value, sel.labels,
                last ? StringRef(resultLabels)
                     : StringRef(unionLess(chain.labels, sel.labels,
                                           StringRef(&sel.position, 1))));
  }
  return SmallVector<Value>{chain.value};
}

FailureOr<SmallVector<Value>> Importer::generalScatter(Operation *op,
                                                       StringRef text,
                                                       bool replace) {
  Location loc = op->getLoc();
  Value operand = op->getOperand(0), indices = op->getOperand(1),
        updates = op->getOperand(2);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices),
       updateType = tensorOf(updates);
  int64_t rank = operandType.getRank(), indexRank = indexType.getRank();
  int64_t vectorDim = intValue(text, "index_vector_dim", 0);
  SmallVector<int64_t> windowDims = intList(text, "update_window_dims"),
                       inserted = intList(text, "inserted_window_dims"),
                       operandBatching = intList(text, "input_batching_dims"),
                       indexBatching =
                           intList(text, "scatter_indices_batching_dims"),
                       startMap = intList(text, "scatter_dims_to_operand_dims");
  int64_t vectorSize =
      vectorDim < indexRank ? indexType.getDimSize(vectorDim) : 1;
  auto inRange = [](ArrayRef<int64_t> dims, int64_t bound) {
    return llvm::all_of(dims,
                        [&](int64_t d) { return d >= 0 && d < bound; });
  };
  if (vectorDim < 0 || vectorDim > indexRank ||
      static_cast<int64_t>(startMap.size()) != vectorSize ||
      operandBatching.size() != indexBatching.size() ||
      !inRange(startMap, rank) || !inRange(inserted, rank) ||
      !inRange(operandBatching, rank) || !inRange(indexBatching, indexRank) ||
      !inRange(windowDims, updateType.getRank()))
    return reject(op,
                  "stablehlo.scatter with inconsistent dimension numbers '" +
                      text + "'");
  Type element = operandType.getElementType();
  if (!einsumElement(element))
    return reject(op, "stablehlo.scatter into a boolean array is not "
                      "supported");
  Labels pool;
  std::optional<IndexBatch> batch = indexBatchOf(indexType, vectorDim, pool);
  if (!batch)
    return reject(op, "stablehlo.scatter of too high a rank");
  const SmallVector<int64_t> &batchDims = batch->dims, &batchShape = batch->shape;
  const std::string &batchLabels = batch->labels;
  llvm::DenseMap<char, int64_t> &labelSize = pool.sizes;
  auto fresh = [&](int64_t size) { return pool.fresh(size); };
  // The updates' dimensions: the scatter dimensions are the index batch in
  // order, the window dimensions the operand's uninserted, unbatched
  // dimensions in order.
  SmallVector<int64_t> windowOperandDims;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(inserted, d) &&
        !llvm::is_contained(operandBatching, d))
      windowOperandDims.push_back(d);
  if (windowOperandDims.size() != windowDims.size() ||
      static_cast<int64_t>(windowDims.size() + batchLabels.size()) !=
          updateType.getRank())
    return reject(op, "stablehlo.scatter whose update rank does not match "
                      "its dimension numbers '" +
                          text + "'");
  std::string updateLabels(updateType.getRank(), 0);
  std::string operandLabels(rank, 0);
  SmallVector<Selection> selections;
  size_t nextBatch = 0;
  for (int64_t d = 0; d < updateType.getRank(); ++d)
    if (!llvm::is_contained(windowDims, d)) {
      if (updateType.getDimSize(d) != batchShape[nextBatch])
        return reject(op, "stablehlo.scatter whose updates do not match its "
                          "indices");
      updateLabels[d] = batchLabels[nextBatch++];
    }
  for (int64_t d = 0; d < rank; ++d) {
    int64_t extent = operandType.getDimSize(d);
    const int64_t *batching = llvm::find(operandBatching, d);
    if (batching != operandBatching.end()) {
      int64_t indexDim = indexBatching[batching - operandBatching.begin()];
      const int64_t *at = llvm::find(batchDims, indexDim);
      operandLabels[d] = batchLabels[at - batchDims.begin()];
      continue;
    }
    const int64_t *windowAt = llvm::find(windowOperandDims, d);
    int64_t updateDim = windowAt == windowOperandDims.end()
                            ? -1
                            : windowDims[windowAt - windowOperandDims.begin()];
    int64_t window = updateDim < 0 ? 1 : updateType.getDimSize(updateDim);
    if (window > extent)
      return reject(op, "stablehlo.scatter with a window larger than the "
                        "operand's dimension " +
                            std::to_string(d));
    std::optional<char> position = fresh(extent), windowLabel = fresh(window);
    if (!position || !windowLabel)
      return reject(op, "stablehlo.scatter of too high a rank");
    const int64_t *indexed = llvm::find(startMap, d);
    if (indexed == startMap.end() && window == extent && updateDim >= 0) {
      updateLabels[updateDim] = *position;
      operandLabels[d] = *position;
      continue;
    }
    if (updateDim >= 0)
      updateLabels[updateDim] = *windowLabel;
    operandLabels[d] = *position;
    // Out-of-bounds updates are dropped: no position matches them.
    int64_t column =
        indexed == startMap.end() ? -1 : indexed - startMap.begin();
    FailureOr<std::pair<Value, std::string>> sel = dimensionSelection(
        op, indices, vectorDim, column, batchShape, batchLabels, window,
        extent, *windowLabel, *position, /*clamp=*/false, element);
    if (failed(sel))
      return failure();
    selections.push_back({sel->first, sel->second, *windowLabel, *position});
  }
  if (selections.empty())
    return reject(op, "stablehlo.scatter without indexed dimensions is not "
                      "supported");
  auto scattered = [&](Value source) {
    EinsumChain chain(builder, loc, source, updateLabels, labelSize);
    for (size_t i = 0; i < selections.size(); ++i) {
      const Selection &sel = selections[i];
      bool last = i + 1 == selections.size();
      chain.apply(sel.value, sel.labels,
                  last ? StringRef(operandLabels)
                       : StringRef(unionLess(chain.labels, sel.labels,
                                             StringRef(&sel.window, 1))));
    }
    return chain.value;
  };
  Value placed = scattered(updates);
  if (!replace)
    return SmallVector<Value>{
        AddOp::create(builder, loc, operandType, operand, placed)};
  // x.at[i].set(u): the updated positions take the update, the others keep
  // the operand.
  Value hits = scattered(splat(loc, updateType, 1));
  auto boolType = RankedTensorType::get(operandType.getShape(),
                                        builder.getI1Type());
  Value hit = CompareOp::create(builder, loc, boolType, CompareDirection::GT,
                                hits, splat(loc, operandType, 0));
  return SmallVector<Value>{
      SelectOp::create(builder, loc, operandType, hit, placed, operand)};
}

FailureOr<SmallVector<Value>> Importer::gather(Operation *op) {
  // Row lookups (`table[tokens]`, jnp.take on axis 0): one index per row,
  // whole rows -> partita.gather, which the partitioner splits along the
  // table's rows or columns without one-hot selections.
  Attribute numbers = property(op, "dimension_numbers");
  std::optional<SmallVector<int64_t>> sizes =
      integers(property(op, "slice_sizes"));
  std::string text = numbers ? printed(numbers) : "";
  Value table = op->getOperand(0), indices = op->getOperand(1);
  auto tableType = tensorOf(table), indexType = tensorOf(indices);
  int64_t batchRank = indexType.getRank() - 1;
  bool rowLookup =
      sizes && indexType.getRank() >= 1 && tableType.getRank() >= 1 &&
      static_cast<int64_t>(sizes->size()) == tableType.getRank() &&
      indexType.getDimSize(batchRank) == 1 &&
      intList(text, "collapsed_slice_dims") == SmallVector<int64_t>{0} &&
      intList(text, "start_index_map") == SmallVector<int64_t>{0} &&
      intValue(text, "index_vector_dim", 0) == batchRank &&
      text.find("operand_batching_dims") == std::string::npos &&
      (*sizes)[0] == 1;
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup = (*sizes)[d] == tableType.getDimSize(d);
  SmallVector<int64_t> offsets = intList(text, "offset_dims");
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup =
        static_cast<int64_t>(offsets.size()) == tableType.getRank() - 1 &&
        offsets[d - 1] == batchRank + d - 1;
  if (!rowLookup)
    return generalGather(op, text);
  Location loc = op->getLoc();
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  return SmallVector<Value>{GatherOp::create(
      builder, loc, op->getResult(0).getType(), table, flat)};
}

FailureOr<SmallVector<Value>> Importer::scatter(Operation *op) {
  Attribute numbers = property(op, "scatter_dimension_numbers");
  std::string text = numbers ? printed(numbers) : "";
  if (op->getNumOperands() != 3 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1)
    return reject(op, "stablehlo.scatter into several arrays at once is not "
                      "supported");
  // The combiner: a sum (gradients, .at[].add) or the update itself
  // (.at[].set); min, max and products are refused.
  Region &body = op->getRegion(0);
  std::optional<ReductionKind> kind = reductionOfBody(body);
  bool replace = false;
  if (!kind) {
    Block *block = body.empty() ? nullptr : &body.front();
    Operation *terminator =
        block && !block->empty() ? &block->back() : nullptr;
    replace = block && block->getNumArguments() == 2 && terminator &&
              terminator->getNumOperands() == 1 &&
              terminator->getOperand(0) == block->getArgument(1);
  }
  if (!replace && (!kind || *kind != ReductionKind::Sum))
    return reject(op, "stablehlo.scatter combining other than by a sum "
                      "(x.at[i].add, gradients) or by replacing (x.at[i].set)"
                      " is not supported (x.at[i].min/max/mul write those)");
  Value operand = op->getOperand(0), indices = op->getOperand(1),
        updates = op->getOperand(2);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices);
  int64_t indexRank = indexType.getRank();
  // Rows: table[indices[i...]] += updates[i...] (the adjoint of a row
  // lookup) -> partita.scatter_add.
  bool rows = !replace && indexRank >= 1 &&
              indexType.getDimSize(indexRank - 1) == 1 &&
              intValue(text, "index_vector_dim", 0) == indexRank - 1 &&
              intList(text, "input_batching_dims").empty() &&
              intList(text, "inserted_window_dims") ==
                  SmallVector<int64_t>{0} &&
              intList(text, "scatter_dims_to_operand_dims") ==
                  SmallVector<int64_t>{0};
  auto updateType = tensorOf(updates);
  SmallVector<int64_t> windowDims = intList(text, "update_window_dims");
  for (int64_t d = 1; rows && d < operandType.getRank(); ++d)
    rows = static_cast<int64_t>(windowDims.size()) ==
               operandType.getRank() - 1 &&
           windowDims[d - 1] == indexRank - 1 + d - 1 &&
           updateType.getDimSize(windowDims[d - 1]) ==
               operandType.getDimSize(d);
  if (!rows)
    return generalScatter(op, text, replace);
  Location loc = op->getLoc();
  auto flatIndexType = RankedTensorType::get(indexType.getShape().drop_back(),
                                             indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatIndexType, indices);
  return SmallVector<Value>{
      ScatterAddOp::create(builder, loc, operandType, operand, flat, updates)};
}

} // namespace stablehlo_import
} // namespace partita
