//===- Einsum.cpp - einsum as a batched GEMM ------------------------------===//
//
// Every einsum with one or two operands becomes a batched GEMM. The labels
// of a two-operand spec fall into four classes:
//   batch: in both operands and the output,
//   M:     in the first operand and the output only,
//   N:     in the second operand and the output only,
//   K:     in both operands, not in the output (contracted).
// Labels in a single operand and not in the output are summed out of that
// operand first. Operands already laid out as [batch, M, K] / [batch, K, M]
// (and [batch, K, N] / [batch, N, K]) go to the GEMM as they are, with the
// transposition flag; others are permuted into that layout. The product,
// laid out [batch, M, N], is permuted into the output's order when it
// differs. bf16/f16 operands are widened to f32 and accumulate in f32; f64
// runs in f64; integers in i64 (wrapping).
//
//===----------------------------------------------------------------------===//
#include "KernelSupport.h"

#include <algorithm>
#include <memory>

namespace partita {
namespace cpu {
namespace {

struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
  int64_t sizeOf[128] = {};
};

bool isLabel(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

Status parseSpec(const KernelContext &ctx, EinsumSpec &spec) {
  std::string text;
  for (char c : ctx.call.inst.text)
    if (c != ' ')
      text.push_back(c);
  size_t arrow = text.find("->");
  if (arrow == std::string::npos ||
      text.find("->", arrow + 1) != std::string::npos)
    return ctx.error("spec '" + ctx.call.inst.text +
                     "' needs exactly one explicit '->'");
  std::string lhs = text.substr(0, arrow);
  spec.output = text.substr(arrow + 2);
  size_t comma = lhs.find(',');
  spec.inputs.push_back(lhs.substr(0, comma));
  if (comma != std::string::npos)
    spec.inputs.push_back(lhs.substr(comma + 1));
  if (spec.inputs.size() != ctx.numOperands() || ctx.numOperands() > 2)
    return ctx.error("spec '" + ctx.call.inst.text + "' has " +
                     std::to_string(spec.inputs.size()) + " term(s) for " +
                     std::to_string(ctx.numOperands()) + " operand(s)");
  auto checkTerm = [&](const std::string &term,
                       const std::vector<int64_t> &shape) -> Status {
    if (term.size() != shape.size())
      return ctx.error("term '" + term + "' does not match rank " +
                       std::to_string(shape.size()));
    for (size_t i = 0; i < term.size(); ++i) {
      char label = term[i];
      if (!isLabel(label) || term.find(label) != i)
        return ctx.error("term '" + term +
                         "' must be distinct letters a-z, A-Z");
      int64_t &size = spec.sizeOf[static_cast<int>(label)];
      if (size != 0 && size != shape[i] + 1)
        return ctx.error(std::string("label '") + label +
                         "' has different sizes");
      size = shape[i] + 1; // Stored +1 so that 0 means "not seen".
    }
    return Status::success();
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (Status s = checkTerm(spec.inputs[i], ctx.operandType(i).shape); !s)
      return s;
  for (size_t i = 0; i < spec.output.size(); ++i) {
    char label = spec.output[i];
    if (!isLabel(label) || spec.output.find(label) != i ||
        spec.sizeOf[static_cast<int>(label)] == 0)
      return ctx.error("output term '" + spec.output +
                       "' must be distinct labels of the operands");
  }
  for (int64_t &size : spec.sizeOf)
    size = size > 0 ? size - 1 : 0;
  std::vector<int64_t> outShape;
  for (char label : spec.output)
    outShape.push_back(spec.sizeOf[static_cast<int>(label)]);
  if (ctx.resultType(0).shape != outShape)
    return ctx.error("result " + describe(ctx.resultType(0)) +
                     " does not match the spec's shape " +
                     formatShape(outShape));
  return Status::success();
}

std::vector<int64_t> shapeOf(const EinsumSpec &spec,
                             const std::string &labels) {
  std::vector<int64_t> shape;
  for (char label : labels)
    shape.push_back(spec.sizeOf[static_cast<int>(label)]);
  return shape;
}

/// Writes `src` (labelled `from`) into `dst` laid out as `to`, summing the
/// labels of `from` that `to` lacks. Every label of `to` is in `from`.
template <typename T>
void permuteAndSum(const EinsumSpec &spec, const T *src,
                   const std::string &from, T *dst, const std::string &to) {
  std::vector<int64_t> fromShape = shapeOf(spec, from);
  std::vector<int64_t> toShape = shapeOf(spec, to);
  std::vector<int64_t> fromStrides = rowMajorStrides(fromShape);
  std::vector<int64_t> toStrides = rowMajorStrides(toShape);
  if (from.size() == to.size()) { // A pure permutation.
    std::vector<int64_t> srcStrides;
    for (char label : to)
      srcStrides.push_back(fromStrides[from.find(label)]);
    copyStrided(dst, toStrides, src, srcStrides, toShape, sizeof(T));
    return;
  }
  int64_t toCount = productOf(toShape), fromCount = productOf(fromShape);
  std::fill(dst, dst + toCount, T(0));
  if (fromCount == 0)
    return;
  // Destination stride of each source dimension (0 when summed).
  std::vector<int64_t> dstStrides(from.size(), 0);
  for (size_t d = 0; d < from.size(); ++d) {
    size_t position = to.find(from[d]);
    if (position != std::string::npos)
      dstStrides[d] = toStrides[position];
  }
  std::vector<int64_t> index(from.size(), 0);
  int64_t dstOffset = 0;
  for (int64_t i = 0; i < fromCount; ++i) {
    dst[dstOffset] = wrappingAdd(dst[dstOffset], src[i]);
    for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
      dstOffset += dstStrides[d];
      if (++index[d] < fromShape[d])
        break;
      dstOffset -= dstStrides[d] * fromShape[d];
      index[d] = 0;
    }
  }
}

/// An operand read in place as a batch of [rows, cols] matrices: its
/// labels are the batch's, the rows' and the cols', each group of rows and
/// cols consecutive in memory in its own order, one of the two groups the
/// innermost (unit stride). Element (r, c) of batch index b is at
/// sum(b_i * batchStrides[i]) + (transposed ? r + c * ld : r * ld + c).
/// An attention einsum's operands ("bshk" as [b, h] batches of [s, k])
/// are read so, not copied batch-first.
struct MatrixView {
  bool transposed = false;
  int64_t ld = 1;
  std::vector<int64_t> batchStrides;
};

bool viewAsMatrices(const EinsumSpec &spec, const std::string &labels,
                    const std::string &batch, const std::string &rows,
                    const std::string &cols, MatrixView &view) {
  if (labels.size() != batch.size() + rows.size() + cols.size())
    return false;
  for (char label : batch + rows + cols)
    if (labels.find(label) == std::string::npos)
      return false;
  std::vector<int64_t> strides = rowMajorStrides(shapeOf(spec, labels));
  auto strideOf = [&](char label) { return strides[labels.find(label)]; };
  // The stride of a group whose labels are consecutive in memory (that of
  // its last label), or -1; 0 for an empty group.
  auto groupStride = [&](const std::string &group) -> int64_t {
    for (size_t i = 0; i + 1 < group.size(); ++i)
      if (strideOf(group[i]) !=
          strideOf(group[i + 1]) * spec.sizeOf[static_cast<int>(group[i + 1])])
        return -1;
    return group.empty() ? 0 : strideOf(group.back());
  };
  int64_t rowStride = groupStride(rows), colStride = groupStride(cols);
  int64_t rowCount = productOf(shapeOf(spec, rows));
  int64_t colCount = productOf(shapeOf(spec, cols));
  if (rowStride < 0 || colStride < 0)
    return false;
  if (cols.empty() || colStride == 1 || colCount == 1) {
    view.transposed = false;
    view.ld = rowCount > 1 ? rowStride : std::max<int64_t>(colCount, 1);
  } else if (rows.empty() || rowStride == 1 || rowCount == 1) {
    view.transposed = true;
    view.ld = colCount > 1 ? colStride : std::max<int64_t>(rowCount, 1);
  } else {
    return false;
  }
  view.batchStrides.clear();
  for (char label : batch)
    view.batchStrides.push_back(strideOf(label));
  return true;
}

template <typename T>
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc) {
  if constexpr (std::is_same<T, float>::value)
    gemmF32(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
  else if constexpr (std::is_same<T, double>::value)
    gemmF64(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
  else
    gemmI64(transposeA, transposeB, m, n, k, a, lda, b, ldb, c, ldc);
}

/// Rows of a product block handed to an epilogue: about 1 MiB of f32 (half
/// an L2 cache here), and at least 256 rows: OpenBLAS packs the whole
/// second operand for every call, which smaller blocks repeat too often (64
/// KiB blocks of 32 rows made a GPT train step 2-4% slower than whole
/// products, 1 MiB blocks within noise of them).
constexpr int64_t kEpilogueElements = 262144;
constexpr int64_t kEpilogueLeastRows = 256;
/// A right operand past the core's caches (more than 2 MiB of f32: an LM
/// head's [d, vocab], GPT-2 small's [768, 768]) is packed from memory
/// again for every block: blocks of at least 1,024 rows keep that small
/// (with 256-342-row blocks GPT-2 small's step's einsums ran at 0.92 of
/// OpenBLAS called once on the same shapes, with these at 0.97-0.98;
/// bench/compute.cpp).
constexpr int64_t kLargeRhsElements = int64_t(1) << 19;
constexpr int64_t kLargeRhsRows = 1024;

/// Whether `term` has `label`.
bool hasLabel(const std::string &term, char label) {
  return term.find(label) != std::string::npos;
}

/// How a two-operand einsum runs as a batched GEMM: which operand is the
/// left one, the labels of the product [batch, m, n] and the contracted
/// ones, and how each operand is read as matrices in place (when it can).
struct ContractionPlan {
  /// The left operand.
  int first = 0;
  std::string batch, mLabels, nLabels, kLabels;
  MatrixView lhsView, rhsView;
  bool lhsInPlace = false, rhsInPlace = false;
};

/// Sets the labels of the product [batch, m, n] with `first` as the left
/// operand: batch in both operands and the output, m (n) in the left
/// (right) one only, each in the output's order.
void splitOutput(const EinsumSpec &spec, int first, ContractionPlan &plan) {
  const std::string &left = spec.inputs[first];
  const std::string &right = spec.inputs[1 - first];
  plan.batch.clear(), plan.mLabels.clear(), plan.nLabels.clear();
  for (char label : spec.output) {
    if (hasLabel(left, label) && hasLabel(right, label))
      plan.batch += label;
    else if (hasLabel(left, label))
      plan.mLabels += label;
    else
      plan.nLabels += label;
  }
}

/// Chooses the left operand and splits the output's labels for it. An
/// output that lists the right operand's labels first ("bsd,bsf->fd", a
/// weight gradient) is the product with the operands swapped: computed
/// that way it needs no transposed copy of the product.
void chooseLeftOperand(const EinsumSpec &spec, ContractionPlan &plan) {
  plan.first = 0;
  splitOutput(spec, 0, plan);
  if (plan.batch + plan.mLabels + plan.nLabels != spec.output) {
    splitOutput(spec, 1, plan);
    if (plan.batch + plan.mLabels + plan.nLabels == spec.output)
      plan.first = 1;
    else
      splitOutput(spec, 0, plan);
  }
}

/// Chooses the order of the contracted labels that lets the most operands
/// be read in place (an operand that cannot is packed as [batch, rows,
/// cols]), and the operands' views in that order.
void chooseContractedOrder(const EinsumSpec &spec, ContractionPlan &plan) {
  const std::string &lhs = spec.inputs[plan.first];
  const std::string &rhs = spec.inputs[1 - plan.first];
  std::string kLhsOrder, kRhsOrder;
  for (char label : lhs)
    if (hasLabel(rhs, label) && !hasLabel(spec.output, label))
      kLhsOrder += label;
  for (char label : rhs)
    if (hasLabel(lhs, label) && !hasLabel(spec.output, label))
      kRhsOrder += label;
  plan.kLabels = kLhsOrder;
  const std::string *orders[2] = {&kLhsOrder, &kRhsOrder};
  for (int o = 0; o < 2; ++o) {
    const std::string &order = *orders[o];
    MatrixView l, r;
    bool lOk = viewAsMatrices(spec, lhs, plan.batch, plan.mLabels, order, l);
    bool rOk = viewAsMatrices(spec, rhs, plan.batch, order, plan.nLabels, r);
    if (o == 0 ||
        int(lOk) + int(rOk) > int(plan.lhsInPlace) + int(plan.rhsInPlace)) {
      plan.kLabels = order;
      plan.lhsView = l, plan.rhsView = r;
      plan.lhsInPlace = lOk, plan.rhsInPlace = rOk;
    }
  }
}

/// The plan of the two-operand einsum `spec`.
ContractionPlan planContraction(const EinsumSpec &spec) {
  ContractionPlan plan;
  chooseLeftOperand(spec, plan);
  chooseContractedOrder(spec, plan);
  return plan;
}

/// The extents of a contraction's GEMM: the batch's shape and element
/// count, the product's m and n, and the contracted k.
struct GemmShape {
  std::vector<int64_t> batchShape;
  int64_t batchCount, m, n, k;
};

/// The GEMM extents of `plan`.
GemmShape gemmShapeOf(const EinsumSpec &spec, const ContractionPlan &plan) {
  GemmShape shape;
  shape.batchShape = shapeOf(spec, plan.batch);
  shape.batchCount = productOf(shape.batchShape);
  shape.m = productOf(shapeOf(spec, plan.mLabels));
  shape.n = productOf(shapeOf(spec, plan.nLabels));
  shape.k = productOf(shapeOf(spec, plan.kLabels));
  return shape;
}

/// One einsum computed in `T`, the C++ type of `computeType`: the
/// operands converted to it where needed, the result written from it.
template <typename T> class TypedEinsum {
public:
  TypedEinsum(const KernelContext &ctx, const EinsumSpec &spec,
              DType computeType, const ProductEpilogue *epilogue)
      : ctx(ctx), spec(spec), computeType(computeType), epilogue(epilogue),
        resultType(ctx.resultType(0)), resultCount(resultType.numElements()) {}

  /// Computes the einsum into the result (and runs the epilogue).
  Status run() {
    if (spec.inputs.size() == 1)
      return whole(emitResult(operandAsCompute(0), spec.inputs[0]));
    return contract();
  }

private:
  /// Operand `i` in the compute type: the operand itself, or converted.
  const T *operandAsCompute(size_t i) {
    const TensorType &type = ctx.operandType(i);
    if (type.dtype == computeType)
      return ctx.operand<T>(i);
    converted[i].resize(type.numElements());
    convertElements(type.dtype, ctx.operand(i), computeType,
                    converted[i].data(), type.numElements());
    return converted[i].data();
  }

  /// Writes `data` (labelled `labels`) to the result, permuting, summing
  /// and converting as needed.
  Status emitResult(const T *data, const std::string &labels) {
    bool direct = resultType.dtype == computeType;
    std::vector<T> staging;
    T *target = direct ? ctx.result<T>(0) : nullptr;
    if (!direct) {
      staging.resize(resultCount);
      target = staging.data();
    }
    if (labels == spec.output) {
      if (data != target && resultCount > 0)
        std::memcpy(target, data, resultCount * sizeof(T));
    } else {
      permuteAndSum(spec, data, labels, target, spec.output);
    }
    if (!direct)
      convertElements(computeType, target, resultType.dtype, ctx.result(0),
                      resultCount);
    return Status::success();
  }

  /// `status`, then the epilogue over the whole result: without a GEMM
  /// the product is complete in one piece.
  Status whole(Status status) {
    if (!status || !epilogue)
      return status;
    return (*epilogue)(0, resultCount);
  }

  /// Packs `data` (labelled `labels`) as [batch, rows, cols] into
  /// `packed` and sets `view` to read it. Scratch is left uninitialized:
  /// every element is written before it is read (zeroing it was 2% of a
  /// train step).
  const T *pack(const T *data, const std::string &labels,
                const std::string &batch, const std::string &rows,
                const std::string &cols, std::unique_ptr<T[]> &packed,
                MatrixView &view) {
    std::string target = batch + rows + cols;
    packed.reset(new T[productOf(shapeOf(spec, target))]);
    permuteAndSum(spec, data, labels, packed.get(), target);
    viewAsMatrices(spec, target, batch, rows, cols, view);
    return static_cast<const T *>(packed.get());
  }

  /// Two operands: the batched GEMM of the planned layout (operands
  /// packed where they cannot be read in place), its product written to
  /// the result directly or through emitResult().
  Status contract() {
    ContractionPlan plan = planContraction(spec);
    const std::string &lhs = spec.inputs[plan.first];
    const std::string &rhs = spec.inputs[1 - plan.first];
    const T *lhsData = operandAsCompute(plan.first);
    const T *rhsData = operandAsCompute(1 - plan.first);
    std::unique_ptr<T[]> lhsPacked, rhsPacked;
    if (!plan.lhsInPlace)
      lhsData = pack(lhsData, lhs, plan.batch, plan.mLabels, plan.kLabels,
                     lhsPacked, plan.lhsView);
    if (!plan.rhsInPlace)
      rhsData = pack(rhsData, rhs, plan.batch, plan.kLabels, plan.nLabels,
                     rhsPacked, plan.rhsView);
    GemmShape shape = gemmShapeOf(spec, plan);
    std::string productLabels = plan.batch + plan.mLabels + plan.nLabels;
    bool direct =
        productLabels == spec.output && resultType.dtype == computeType;
    std::unique_ptr<T[]> product;
    T *productData = direct ? ctx.result<T>(0) : nullptr;
    if (!direct) {
      product.reset(new T[shape.batchCount * shape.m * shape.n]);
      productData = product.get();
    }
    if (Status status =
            multiplyBlocks(plan, shape, lhsData, rhsData, productData, direct);
        !status)
      return status;
    if (direct) // Every block went to the epilogue.
      return Status::success();
    return whole(emitResult(productData, productLabels));
  }

  /// The GEMM of every batch index into `productData` ([batch, m, n]),
  /// in blocks of rows; with an epilogue and the product in the result's
  /// layout (`direct`) each block is handed to the epilogue while it is in
  /// the cache (docs/Runtime.md, "Fusion"). Without one the blocks are the
  /// same, because a BLAS may round a row differently in a call of another
  /// height (OpenBLAS on AMD Zen: rows near a call's end), and a fused
  /// program must give the unfused one's bits.
  Status multiplyBlocks(const ContractionPlan &plan, const GemmShape &shape,
                        const T *lhsData, const T *rhsData, T *productData,
                        bool direct) {
    const MatrixView &lhsView = plan.lhsView, &rhsView = plan.rhsView;
    const std::vector<int64_t> &batchShape = shape.batchShape;
    int64_t batchCount = shape.batchCount, m = shape.m, n = shape.n,
            k = shape.k;
    int64_t lda = std::max<int64_t>(lhsView.ld, 1);
    int64_t ldb = std::max<int64_t>(rhsView.ld, 1);
    int64_t rows = m;
    if (n > 0)
      rows = std::max(kEpilogueLeastRows, (kEpilogueElements + n - 1) / n);
    if (k * n > kLargeRhsElements)
      rows = std::max(rows, kLargeRhsRows);
    bool perBlock = epilogue && direct;
    // Each batch index's offsets into the operands, walked as an odometer.
    std::vector<int64_t> index(plan.batch.size(), 0);
    int64_t lhsOffset = 0, rhsOffset = 0;
    for (int64_t b = 0; b < batchCount; ++b) {
      for (int64_t r0 = 0; r0 < m; r0 += rows) {
        int64_t r1 = std::min(m, r0 + rows);
        const T *a = lhsData + lhsOffset + (lhsView.transposed ? r0 : r0 * lda);
        gemm<T>(lhsView.transposed, rhsView.transposed, r1 - r0, n, k, a, lda,
                rhsData + rhsOffset, ldb, productData + b * m * n + r0 * n,
                std::max<int64_t>(n, 1));
        if (perBlock)
          if (Status status =
                  (*epilogue)(b * m * n + r0 * n, b * m * n + r1 * n);
              !status)
            return status;
      }
      for (int64_t d = static_cast<int64_t>(plan.batch.size()) - 1; d >= 0;
           --d) {
        lhsOffset += lhsView.batchStrides[d];
        rhsOffset += rhsView.batchStrides[d];
        if (++index[d] < batchShape[d])
          break;
        lhsOffset -= lhsView.batchStrides[d] * batchShape[d];
        rhsOffset -= rhsView.batchStrides[d] * batchShape[d];
        index[d] = 0;
      }
    }
    return Status::success();
  }

  const KernelContext &ctx;
  const EinsumSpec &spec;
  DType computeType;
  const ProductEpilogue *epilogue;
  const TensorType &resultType;
  int64_t resultCount;
  /// Operands converted to the compute type (those not already in it).
  std::vector<T> converted[2];
};

/// The einsum of `spec` computed in `T`, the C++ type of `computeType`.
template <typename T>
Status einsumTyped(const KernelContext &ctx, const EinsumSpec &spec,
                   DType computeType, const ProductEpilogue *epilogue) {
  return TypedEinsum<T>(ctx, spec, computeType, epilogue).run();
}

} // namespace

Status runEinsum(const KernelContext &ctx, const ProductEpilogue *epilogue) {
  if (ctx.numOperands() < 1 || ctx.numOperands() > 2)
    return ctx.error("expects one or two operands, got " +
                     std::to_string(ctx.numOperands()));
  DType dtype = ctx.operandType(0).dtype;
  if (ctx.numOperands() == 2 && ctx.operandType(1).dtype != dtype)
    return ctx.error("operands have different element types " +
                     describe(ctx.operandType(0)) + " and " +
                     describe(ctx.operandType(1)));
  DType resultDType = ctx.resultType(0).dtype;
  bool narrowFloat = dtype == DType::BF16 || dtype == DType::F16;
  if (resultDType != dtype && !(narrowFloat && resultDType == DType::F32))
    return ctx.error(std::string("result element type ") +
                     dtypeName(resultDType) + " is not allowed for " +
                     dtypeName(dtype) + " operands");
  if (dtype == DType::Bool)
    return ctx.unsupported(dtype);
  EinsumSpec spec;
  if (Status s = parseSpec(ctx, spec); !s)
    return s;
  switch (dtype) {
  case DType::F64:
    return einsumTyped<double>(ctx, spec, DType::F64, epilogue);
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    return einsumTyped<float>(ctx, spec, DType::F32, epilogue);
  default:
    return einsumTyped<int64_t>(ctx, spec, DType::I64, epilogue);
  }
}

} // namespace cpu
} // namespace partita
