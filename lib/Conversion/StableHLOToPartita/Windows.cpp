//===- Windows.cpp - StableHLO convolutions and pooling gradients ---------===//
//
// stablehlo.convolution (nnx.Conv, lax.conv_general_dilated and their
// gradients) as one strided slice of the padded, dilated input per kernel
// offset, each contracted with that offset's kernel slice by an einsum and
// summed: the partitioner splits them along the batch and feature
// dimensions like any einsum. select_and_scatter (max pooling's gradient)
// as the first maximum of each window taking the source, placed back by
// interior padding. docs/JAX.md gives the limits.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include <limits>

namespace partita {
namespace stablehlo_import {

std::optional<SmallVector<int64_t>> positiveListOr1(Operation *op,
                                                    StringRef name,
                                                    size_t count) {
  Attribute attr = property(op, name);
  if (!attr)
    return SmallVector<int64_t>(count, 1);
  std::optional<SmallVector<int64_t>> list = integers(attr);
  if (!list || list->size() != count ||
      llvm::any_of(*list, [](int64_t v) { return v < 1; }))
    return std::nullopt;
  return list;
}

bool paddingPairs(Operation *op, size_t count, SmallVector<int64_t> &low,
                  SmallVector<int64_t> &high) {
  low.assign(count, 0);
  high.assign(count, 0);
  Attribute attr = property(op, "padding");
  if (!attr)
    return true;
  auto padding = dyn_cast<DenseIntElementsAttr>(attr);
  if (!padding || static_cast<size_t>(padding.getNumElements()) != 2 * count)
    return false;
  size_t i = 0;
  for (const APInt &value : padding) {
    (i % 2 ? high : low)[i / 2] = value.getSExtValue();
    ++i;
  }
  return true;
}

namespace {

/// One side of a convolution's dimension numbers: the batch (or input
/// feature) dimension, the feature (or output feature) dimension, and the
/// position of each spatial dimension.
struct ConvLayout {
  int64_t batch = -1, feature = -1;
  SmallVector<int64_t> spatial;
};

/// Parses "[b, 0, 1, f]" (letters `first` and `second`, spatial indices).
std::optional<ConvLayout> parseLayout(StringRef list, char first,
                                      char second) {
  list = list.trim();
  if (!list.consume_front("[") || !list.consume_back("]"))
    return std::nullopt;
  SmallVector<StringRef> items;
  list.split(items, ',');
  ConvLayout layout;
  SmallVector<int64_t> spatialAt(items.size(), -1);
  int64_t spatialCount = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    StringRef item = items[i].trim();
    int64_t index;
    if (item.size() == 1 && item[0] == first)
      layout.batch = i;
    else if (item.size() == 1 && item[0] == second)
      layout.feature = i;
    else if (!item.getAsInteger(10, index) && index >= 0 &&
             index < static_cast<int64_t>(items.size())) {
      spatialAt[index] = i;
      ++spatialCount;
    } else
      return std::nullopt;
  }
  if (layout.batch < 0 || layout.feature < 0)
    return std::nullopt;
  for (int64_t s = 0; s < spatialCount; ++s) {
    if (spatialAt[s] < 0)
      return std::nullopt;
    layout.spatial.push_back(spatialAt[s]);
  }
  return layout;
}

/// What a convolution's attributes say: the layouts of its input (`lhs`),
/// kernel (`rhs`) and result (`out`), its feature group count, and per
/// spatial dimension its strides, dilations, padding and window reversal.
struct ConvAttributes {
  ConvLayout lhs, rhs, out;
  int64_t groups = 1;
  SmallVector<int64_t> strides, lhsDilation, rhsDilation, low, high;
  SmallVector<bool> reversed;

  size_t spatial() const { return lhs.spatial.size(); }
};

/// Reads the layouts of `op`'s dimension numbers into `conv`: why they are
/// not supported, empty when they are.
std::string readConvLayouts(Operation *op, ConvAttributes &conv) {
  std::string text = printed(property(op, "dimension_numbers"));
  // #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
  size_t open = text.find('<'), cross = text.find("]x["),
         arrow = text.find("]->[");
  if (open == std::string::npos || cross == std::string::npos ||
      arrow == std::string::npos)
    return "with unreadable dimension numbers '" + text + "'";
  StringRef all(text);
  std::optional<ConvLayout> lhs =
      parseLayout(all.slice(open + 1, cross + 1), 'b', 'f');
  std::optional<ConvLayout> rhs =
      parseLayout(all.slice(cross + 2, arrow + 1), 'i', 'o');
  std::optional<ConvLayout> out = parseLayout(
      all.slice(arrow + 3, all.rfind('>')), 'b', 'f');
  if (!lhs || !rhs || !out || lhs->spatial.size() != rhs->spatial.size() ||
      lhs->spatial.size() != out->spatial.size() || lhs->spatial.size() > 3)
    return "with dimension numbers '" + text + "'";
  conv.lhs = *lhs;
  conv.rhs = *rhs;
  conv.out = *out;
  return "";
}

/// Why the element types or ranks of `op`'s operands and result do not suit
/// a convolution over `spatial` spatial dimensions, empty when they do.
std::string checkConvTypes(Operation *op, size_t spatial) {
  auto lhsType = tensorOf(op->getOperand(0)),
       rhsType = tensorOf(op->getOperand(1)),
       resultType = tensorOf(op->getResult(0));
  Type element = resultType.getElementType();
  if (lhsType.getElementType() != element ||
      rhsType.getElementType() != element || !isa<FloatType>(element))
    return "of mixed or non-float element types";
  if (lhsType.getRank() != static_cast<int64_t>(spatial) + 2 ||
      rhsType.getRank() != lhsType.getRank() ||
      resultType.getRank() != lhsType.getRank())
    return "whose operand ranks do not match its dimension numbers";
  return "";
}

/// Reads `op`'s group counts, strides, dilations, padding and window
/// reversal into `conv`: why they are not supported, empty when they are.
std::string readConvWindow(Operation *op, ConvAttributes &conv) {
  size_t spatial = conv.spatial();
  auto count = [&](StringRef name) -> int64_t {
    auto attr = dyn_cast_or_null<IntegerAttr>(property(op, name));
    return attr ? attr.getInt() : 1;
  };
  conv.groups = count("feature_group_count");
  if (count("batch_group_count") != 1)
    return "with batch_group_count > 1 (the kernel gradient of a "
           "grouped convolution)";
  std::optional<SmallVector<int64_t>>
      strides = positiveListOr1(op, "window_strides", spatial),
      lhsDilation = positiveListOr1(op, "lhs_dilation", spatial),
      rhsDilation = positiveListOr1(op, "rhs_dilation", spatial);
  if (!strides || !lhsDilation || !rhsDilation)
    return "with unreadable strides or dilations";
  conv.strides = *strides;
  conv.lhsDilation = *lhsDilation;
  conv.rhsDilation = *rhsDilation;
  if (!paddingPairs(op, spatial, conv.low, conv.high))
    return "with padding for another number of spatial dimensions";
  conv.reversed.assign(spatial, false);
  if (Attribute attr = property(op, "window_reversal")) {
    std::string flags = printed(attr);
    SmallVector<StringRef> parts;
    StringRef(flags).split(parts, ',');
    for (size_t s = 0; s < spatial && s < parts.size(); ++s)
      conv.reversed[s] = parts[s].contains("true");
  }
  return "";
}

/// Reads `op`'s convolution attributes into `conv` and checks its operands:
/// why it is not supported, empty when it is.
std::string readConvolution(Operation *op, ConvAttributes &conv) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return "with other than an input and a kernel";
  std::string why = readConvLayouts(op, conv);
  if (why.empty())
    why = checkConvTypes(op, conv.spatial());
  if (why.empty())
    why = readConvWindow(op, conv);
  return why;
}

/// `v` transposed so that its dimension d is `perm[d]` of `v` (`v` itself
/// when `perm` is the identity), of element type `element`.
Value permuted(OpBuilder &builder, Location loc, Value v,
               ArrayRef<int64_t> perm, Type element) {
  auto type = tensorOf(v);
  bool identity = true;
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < perm.size(); ++d) {
    identity &= perm[d] == static_cast<int64_t>(d);
    shape.push_back(type.getDimSize(perm[d]));
  }
  if (identity)
    return v;
  return TransposeOp::create(builder, loc,
                             RankedTensorType::get(shape, element), v,
                             builder.getDenseI64ArrayAttr(perm));
}

/// The permutations to the canonical layouts: input [b, s..., c] from
/// `lhs`, kernel [s..., c, o] from `rhs`.
void canonicalPermutations(const ConvAttributes &conv,
                           SmallVector<int64_t> &lhsPerm,
                           SmallVector<int64_t> &rhsPerm) {
  lhsPerm.assign({conv.lhs.batch});
  for (int64_t d : conv.lhs.spatial)
    lhsPerm.push_back(d);
  lhsPerm.push_back(conv.lhs.feature);
  rhsPerm.clear();
  for (int64_t d : conv.rhs.spatial)
    rhsPerm.push_back(d);
  rhsPerm.push_back(conv.rhs.batch);   // `i`
  rhsPerm.push_back(conv.rhs.feature); // `o`
}

/// The padding of the canonical input [b, s..., c]: low and high edges,
/// and the interior zeros that dilate it.
void inputPadding(const ConvAttributes &conv, SmallVector<int64_t> &padLow,
                  SmallVector<int64_t> &padHigh,
                  SmallVector<int64_t> &interior) {
  padLow.assign({0});
  padHigh.assign({0});
  interior.assign({0});
  for (size_t s = 0; s < conv.spatial(); ++s) {
    padLow.push_back(conv.low[s]);
    padHigh.push_back(conv.high[s]);
    interior.push_back(conv.lhsDilation[s] - 1);
  }
  padLow.push_back(0);
  padHigh.push_back(0);
  interior.push_back(0);
}

/// The sizes of a convolution in canonical layouts: input [b, s..., c],
/// kernel [s..., c / groups, o], result [b, s..., o].
struct ConvGeometry {
  int64_t batch = 0, channels = 0, kernelIn = 0, outFeatures = 0;
  /// The canonical result's shape, and the kernel's spatial sizes.
  SmallVector<int64_t> outShape, kernelSize;
  /// The number of kernel positions.
  int64_t offsets = 1;
  Type element;
};

/// Fills `g.outShape`, `g.kernelSize` and `g.offsets` from the result type
/// and the kernel's, checking them against the padded input of type
/// `xType`: why they do not fit, empty when they do.
std::string fitWindows(const ConvAttributes &conv, RankedTensorType resultType,
                       RankedTensorType kernelType, RankedTensorType xType,
                       ConvGeometry &g) {
  size_t spatial = conv.spatial();
  g.outShape.assign({g.batch});
  for (int64_t d : conv.out.spatial)
    g.outShape.push_back(resultType.getDimSize(d));
  g.outShape.push_back(g.outFeatures);
  if (resultType.getDimSize(conv.out.batch) != g.batch ||
      resultType.getDimSize(conv.out.feature) != g.outFeatures)
    return "whose result shape does not match its operands";
  g.offsets = 1;
  g.kernelSize.clear();
  for (size_t s = 0; s < spatial; ++s) {
    g.kernelSize.push_back(kernelType.getDimSize(s));
    g.offsets *= g.kernelSize.back();
    int64_t needed = (g.kernelSize.back() - 1) * conv.rhsDilation[s] +
                     (g.outShape[s + 1] - 1) * conv.strides[s] + 1;
    if (g.outShape[s + 1] > 0 && needed > xType.getDimSize(s + 1))
      return "whose result shape does not fit its windows";
  }
  if (g.offsets > 1024)
    return "with kernels of more than 1024 positions";
  return "";
}

/// The strided window of the padded input [b, s..., c] that kernel
/// position `offset` reads: its `start`, `step` and `shape`.
void inputWindow(const ConvAttributes &conv, const ConvGeometry &g,
                 ArrayRef<int64_t> offset, SmallVector<int64_t> &start,
                 SmallVector<int64_t> &step, SmallVector<int64_t> &shape) {
  start.assign({0});
  step.assign({1});
  shape.assign({g.batch});
  for (size_t s = 0; s < conv.spatial(); ++s) {
    start.push_back(offset[s] * conv.rhsDilation[s]);
    step.push_back(conv.strides[s]);
    shape.push_back(g.outShape[s + 1]);
  }
  start.push_back(0);
  step.push_back(1);
  shape.push_back(g.channels);
}

/// The canonical kernel [s..., c, o] at position `offset` (flipped where
/// window_reversal says), as [1..., c, o].
Value kernelTap(OpBuilder &builder, Location loc, Value kernel,
                const ConvAttributes &conv, const ConvGeometry &g,
                ArrayRef<int64_t> offset) {
  size_t spatial = conv.spatial();
  SmallVector<int64_t> kStart, kLimit, kStrides(spatial + 2, 1);
  for (size_t s = 0; s < spatial; ++s) {
    int64_t at = conv.reversed[s] ? g.kernelSize[s] - 1 - offset[s] : offset[s];
    kStart.push_back(at);
    kLimit.push_back(at + 1);
  }
  kStart.append({0, 0});
  kLimit.append({g.kernelIn, g.outFeatures});
  SmallVector<int64_t> kShape(spatial, 1);
  kShape.append({g.kernelIn, g.outFeatures});
  return SliceOp::create(builder, loc, RankedTensorType::get(kShape, g.element),
                         kernel, builder.getDenseI64ArrayAttr(kStart),
                         builder.getDenseI64ArrayAttr(kLimit),
                         builder.getDenseI64ArrayAttr(kStrides));
}

/// The input window `piece` (of shape `pieceShape`) contracted with the
/// kernel `tap` into the canonical result [b, s..., o], channels and
/// outputs split into `groups` when there are several (depthwise).
Value contractTap(OpBuilder &builder, Location loc, Value piece, Value tap,
                  ArrayRef<int64_t> pieceShape, int64_t groups,
                  const ConvGeometry &g) {
  Type element = g.element;
  auto canonicalType = RankedTensorType::get(g.outShape, element);
  std::string sp = std::string("pqr").substr(0, g.kernelSize.size());
  if (groups == 1) {
    tap = ReshapeOp::create(
        builder, loc,
        RankedTensorType::get({g.kernelIn, g.outFeatures}, element), tap);
    return EinsumOp::create(
        builder, loc, canonicalType,
        builder.getStringAttr("b" + sp + "c,co->b" + sp + "o"),
        ValueRange{piece, tap});
  }
  // Grouped (depthwise): channels and outputs split into groups.
  SmallVector<int64_t> grouped(pieceShape);
  grouped.back() = groups;
  grouped.push_back(g.kernelIn);
  piece = ReshapeOp::create(builder, loc,
                            RankedTensorType::get(grouped, element), piece);
  tap = ReshapeOp::create(
      builder, loc,
      RankedTensorType::get({g.kernelIn, groups, g.outFeatures / groups},
                            element),
      tap);
  SmallVector<int64_t> groupedOut(pieceShape);
  groupedOut.back() = groups;
  groupedOut.push_back(g.outFeatures / groups);
  Value term = EinsumOp::create(
      builder, loc, RankedTensorType::get(groupedOut, element),
      builder.getStringAttr("b" + sp + "gc,cgo->b" + sp + "go"),
      ValueRange{piece, tap});
  return ReshapeOp::create(builder, loc, canonicalType, term);
}

/// Advances `offset` to the next kernel position, last dimension fastest.
void nextOffset(SmallVector<int64_t> &offset, ArrayRef<int64_t> kernelSize) {
  for (int64_t s = static_cast<int64_t>(offset.size()) - 1; s >= 0; --s) {
    if (++offset[s] < kernelSize[s])
      break;
    offset[s] = 0;
  }
}

/// The permutation from the canonical result [b, s..., o] back to the
/// result's layout `out`: result dim j is canonical dim perm[j].
SmallVector<int64_t> resultPermutation(const ConvLayout &out, int64_t rank) {
  SmallVector<int64_t> perm(rank);
  perm[out.batch] = 0;
  for (size_t s = 0; s < out.spatial.size(); ++s)
    perm[out.spatial[s]] = s + 1;
  perm[out.feature] = out.spatial.size() + 1;
  return perm;
}

} // namespace

FailureOr<SmallVector<Value>> Importer::convolution(Operation *op) {
  auto refuse = [&](const Twine &why) {
    return reject(op, "stablehlo.convolution " + why + " is not supported");
  };
  ConvAttributes conv;
  std::string why = readConvolution(op, conv);
  if (!why.empty())
    return refuse(why);
  size_t spatial = conv.spatial();
  auto resultType = tensorOf(op->getResult(0));
  ConvGeometry g;
  g.element = resultType.getElementType();
  Location loc = op->getLoc();
  // Canonical layouts: input [b, s..., c], kernel [s..., c, o].
  SmallVector<int64_t> lhsPerm, rhsPerm;
  canonicalPermutations(conv, lhsPerm, rhsPerm);
  Value input = permuted(builder, loc, op->getOperand(0), lhsPerm, g.element);
  Value kernel = permuted(builder, loc, op->getOperand(1), rhsPerm, g.element);
  auto inputType = tensorOf(input), kernelType = tensorOf(kernel);
  g.batch = inputType.getDimSize(0);
  g.channels = inputType.getDimSize(spatial + 1);
  g.kernelIn = kernelType.getDimSize(spatial);
  g.outFeatures = kernelType.getDimSize(spatial + 1);
  int64_t groups = conv.groups;
  if (groups < 1 || g.channels != g.kernelIn * groups || g.outFeatures % groups)
    return refuse("whose feature_group_count does not divide its features");
  // The input padded and dilated (zeros between elements).
  SmallVector<int64_t> padLow, padHigh, interior;
  inputPadding(conv, padLow, padHigh, interior);
  Value zero = splat(loc, RankedTensorType::get({}, g.element), 0);
  FailureOr<Value> x = padded(op, input, zero, padLow, padHigh, interior);
  if (failed(x))
    return failure();
  why = fitWindows(conv, resultType, kernelType, tensorOf(*x), g);
  if (!why.empty())
    return refuse(why);
  auto canonicalType = RankedTensorType::get(g.outShape, g.element);
  Value result;
  SmallVector<int64_t> offset(spatial, 0);
  for (int64_t n = 0; n < g.offsets; ++n) {
    SmallVector<int64_t> start, step, pieceShape;
    inputWindow(conv, g, offset, start, step, pieceShape);
    Value piece = windowSlice(loc, *x, start, step, pieceShape);
    Value tap = kernelTap(builder, loc, kernel, conv, g, offset);
    Value term = contractTap(builder, loc, piece, tap, pieceShape, groups, g);
    result = result ? AddOp::create(builder, loc, canonicalType, result, term)
                          .getResult()
                    : term;
    nextOffset(offset, g.kernelSize);
  }
  return SmallVector<Value>{
      permuted(builder, loc, result,
               resultPermutation(conv.out, resultType.getRank()), g.element)};
}

FailureOr<SmallVector<Value>> Importer::selectAndScatter(Operation *op) {
  // Max pooling's gradient: each window's source value goes to the first
  // position (in window order) holding the window's maximum, summed where
  // windows overlap.
  auto refuse = [&](const Twine &why) {
    return reject(op, "stablehlo.select_and_scatter " + why +
                          " is not supported (max pooling's gradient is)");
  };
  if (op->getNumOperands() != 3 || op->getNumResults() != 1 ||
      op->getNumRegions() != 2)
    return refuse("of other than an operand, a source and an init value");
  Region &select = op->getRegion(0);
  Operation *compare =
      select.hasOneBlock() && select.front().getNumArguments() == 2 &&
              select.front().getOperations().size() == 2
          ? &select.front().front()
          : nullptr;
  if (!compare || compare->getName().getStringRef() != "stablehlo.compare" ||
      compare->getOperand(0) != select.front().getArgument(0) ||
      compare->getOperand(1) != select.front().getArgument(1) ||
      printed(property(compare, "comparison_direction")).find(" GE") ==
          std::string::npos)
    return refuse("selecting other than the first maximum (GE)");
  std::optional<ReductionKind> scatterKind = reductionOfBody(op->getRegion(1));
  if (!scatterKind || *scatterKind != ReductionKind::Sum)
    return refuse("combining other than by a sum");
  Value operand = op->getOperand(0), source = op->getOperand(1),
        init = op->getOperand(2);
  auto type = tensorOf(operand), sourceType = tensorOf(source);
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  if (!isa<FloatType>(element) || sourceType.getRank() != rank ||
      tensorOf(init).getRank() != 0)
    return refuse("of non-float or mismatched arrays");
  std::optional<SmallVector<int64_t>> window =
      integers(property(op, "window_dimensions"));
  std::optional<SmallVector<int64_t>> strides =
      positiveListOr1(op, "window_strides", rank);
  if (!window || !strides || static_cast<int64_t>(window->size()) != rank)
    return refuse("with unreadable windows");
  SmallVector<int64_t> low, high, none(rank, 0);
  if (!paddingPairs(op, rank, low, high))
    return refuse("with padding for another rank");
  int64_t offsets = 1;
  for (int64_t w : *window)
    offsets *= w;
  if (offsets > 1024 || llvm::any_of(low, [](int64_t v) { return v < 0; }) ||
      llvm::any_of(high, [](int64_t v) { return v < 0; }))
    return refuse("with windows over 1024 elements or negative padding");
  Location loc = op->getLoc();
  auto scalarType = RankedTensorType::get({}, element);
  Value lowest = splat(loc, scalarType,
                       -std::numeric_limits<double>::infinity());
  Value zero = splat(loc, scalarType, 0);
  FailureOr<Value> x = padded(op, operand, lowest, low, high, none);
  if (failed(x))
    return failure();
  auto xType = tensorOf(*x);
  ArrayRef<int64_t> outShape = sourceType.getShape();
  for (int64_t d = 0; d < rank; ++d)
    if (outShape[d] > 0 &&
        (*window)[d] + (outShape[d] - 1) * (*strides)[d] > xType.getDimSize(d))
      return refuse("whose source shape does not fit its windows");
  auto forEachOffset = [&](const std::function<void(ArrayRef<int64_t>)> &f) {
    SmallVector<int64_t> offset(rank, 0);
    for (int64_t n = 0; n < offsets; ++n) {
      f(offset);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++offset[d] < (*window)[d])
          break;
        offset[d] = 0;
      }
    }
  };
  Value pooled;
  forEachOffset([&](ArrayRef<int64_t> start) {
    Value piece = windowSlice(loc, *x, start, *strides, outShape);
    pooled = pooled ? MaxOp::create(builder, loc, sourceType, pooled, piece)
                          .getResult()
                    : piece;
  });
  auto boolType = RankedTensorType::get(outShape, builder.getI1Type());
  Value taken = ConstantOp::create(
      builder, loc, boolType,
      DenseElementsAttr::get(boolType, builder.getBoolAttr(false)));
  Value zeros = splat(loc, sourceType, 0);
  Value sum;
  forEachOffset([&](ArrayRef<int64_t> start) {
    Value piece = windowSlice(loc, *x, start, *strides, outShape);
    Value isMax = CompareOp::create(builder, loc, boolType,
                                    CompareDirection::EQ, piece, pooled);
    Value free = NotOp::create(builder, loc, boolType, taken);
    Value hit = AndOp::create(builder, loc, boolType, isMax, free);
    taken = OrOp::create(builder, loc, boolType, taken, hit);
    Value part = SelectOp::create(builder, loc, sourceType, hit, source, zeros);
    // Back to the padded operand's positions: start + i * stride.
    SmallVector<int64_t> before, after, gaps;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t span = outShape[d] == 0 ? 0 : (outShape[d] - 1) * (*strides)[d] + 1;
      before.push_back(start[d]);
      after.push_back(xType.getDimSize(d) - start[d] - span);
      gaps.push_back((*strides)[d] - 1);
    }
    FailureOr<Value> placed = padded(op, part, zero, before, after, gaps);
    if (failed(placed))
      return;
    sum = sum ? AddOp::create(builder, loc, xType, sum, *placed).getResult()
              : *placed;
  });
  if (!sum)
    return failure();
  // The operand's own positions (padding cut), plus the init value.
  SmallVector<int64_t> cutLow, cutHigh;
  for (int64_t d = 0; d < rank; ++d) {
    cutLow.push_back(-low[d]);
    cutHigh.push_back(-high[d]);
  }
  FailureOr<Value> result = padded(op, sum, zero, cutLow, cutHigh, none);
  if (failed(result))
    return failure();
  Value out = *result;
  if (!isIdentityOf(init, ReductionKind::Sum))
    out = AddOp::create(builder, loc, type, out,
                        BroadcastOp::create(builder, loc, type, init,
                                            builder.getDenseI64ArrayAttr({})));
  return SmallVector<Value>{out};
}

} // namespace stablehlo_import
} // namespace partita
