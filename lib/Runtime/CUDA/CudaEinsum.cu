//===- CudaEinsum.cu - Einsum as a cuBLAS GEMM ----------------------------===//
//
// The contraction op on a GPU: operands permuted (by the strided-copy kernel
// of CudaKernels.cu) to [batch, m, k] and [batch, k, n], one batched cuBLAS
// GEMM with f32 accumulation for bf16/f16 (TF32 when allowed), the product
// permuted to the output's labels.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CudaOps.h"

#include "partita/Runtime/Program/DeviceMath.h"
#include "partita/Runtime/Program/Instruction.h"
#include "partita/Sharding/Einsum.h"

#include <string>
#include <vector>

namespace partita {

using device::StridedView;

namespace {

/// The einsum of one or two operands on a GPU: the spec's terms, the
/// extent of each label, and the steps from the operands to the result.
/// The steps' checked calls keep the names they had in cudaEinsum.
class GemmEinsum {
public:
  GemmEinsum(const CudaContext &ctx, const std::string &spec,
             const std::vector<TensorType> &operandTypes,
             const std::vector<const void *> &operands,
             const TensorType &resultType, void *result)
      : ctx(ctx), spec(spec), operandTypes(operandTypes), operands(operands),
        resultType(resultType), result(result) {}

  /// Checks the spec, then permutes the one operand or contracts the two.
  Status run() {
    if (Status status = parse(); !status)
      return status;
    if (terms.size() == 1)
      return permute();
    return contract();
  }

private:
  /// Checks the spec against the operands and the result before any
  /// index is taken from it (a malformed executable must not read out of
  /// bounds), then splits it into its terms and output and records the
  /// extent of every label and the operands' element type.
  Status parse() {
    Expected<EinsumSpec> parsed =
        parseEinsumSpec(spec, static_cast<int>(operands.size()));
    if (!parsed)
      return Status::error("einsum: " + parsed.status().message());
    std::vector<std::vector<int64_t>> shapes;
    for (const TensorType &type : operandTypes)
      shapes.push_back(type.shape);
    Expected<std::vector<int64_t>> expected =
        einsumResultShape(*parsed, shapes);
    if (!expected)
      return Status::error("einsum: " + expected.status().message());
    if (*expected != resultType.shape)
      return Status::error("einsum: spec '" + spec +
                           "' does not give the result's shape");
    size_t arrow = spec.find("->");
    if (arrow == std::string::npos)
      return Status::error("einsum: spec '" + spec + "' has no '->'");
    std::string inputs = spec.substr(0, arrow);
    output = spec.substr(arrow + 2);
    size_t comma = inputs.find(',');
    terms.push_back(inputs.substr(0, comma));
    if (comma != std::string::npos)
      terms.push_back(inputs.substr(comma + 1));
    if (terms.size() != operands.size())
      return Status::error("einsum: spec '" + spec + "' does not match " +
                           std::to_string(operands.size()) + " operands");
    for (size_t t = 0; t < terms.size(); ++t)
      for (size_t d = 0; d < terms[t].size(); ++d)
        size[static_cast<unsigned char>(terms[t][d])] =
            operandTypes[t].shape[d];
    dtype = operandTypes[0].dtype;
    elementSize = dtypeSize(dtype);
    return Status::success();
  }

  /// The shape of a tensor with `labels`.
  std::vector<int64_t> labelsShape(const std::string &labels) const {
    std::vector<int64_t> shape;
    for (char c : labels)
      shape.push_back(size[static_cast<unsigned char>(c)]);
    return shape;
  }
  /// The number of elements of `shape`.
  static int64_t product(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  /// The permutation taking labels `from` to labels `to` (same letters).
  static std::vector<int64_t> permutation(const std::string &from,
                                          const std::string &to) {
    std::vector<int64_t> perm;
    for (char c : to)
      perm.push_back(static_cast<int64_t>(from.find(c)));
    return perm;
  }
  /// Whether `term` has label `c`.
  static bool has(const std::string &term, char c) {
    return term.find(c) != std::string::npos;
  }

  /// Sets `out` to `data` (labels `from`) with labels `to`: `data` itself
  /// when they are the same, else a permuted copy in scratch.
  Status permuted(const void *data, const std::string &from,
                  const std::string &to, const void *&out) const {
    if (from == to) {
      out = data;
      return Status::success();
    }
    StridedView view;
    if (!device::transposeView(labelsShape(from), permutation(from, to), view))
      return Status::error("einsum: cannot permute " + from + " to " + to);
    void *buffer =
        ctx.scratch(ctx.backend, product(labelsShape(to)) * elementSize);
    out = buffer;
    return cudaStridedCopy(ctx.stream, data, buffer, view, elementSize);
  }

  /// One operand: a permutation (labels summed away in one operand: not
  /// on CUDA yet).
  Status permute() {
    if (terms[0].size() != output.size())
      return Status::error("einsum '" + spec +
                           "': a one-operand sum is not supported on CUDA");
    const void *out = nullptr;
    if (resultType.dtype != dtype)
      return Status::error("einsum '" + spec +
                           "': a one-operand einsum cannot change the type");
    if (Status status = permuted(operands[0], terms[0], output, out); !status)
      return status;
    if (out != result && product(labelsShape(output)) > 0)
      PARTITA_CUDA_CHECK(cudaMemcpyAsync(
          result, out, product(labelsShape(output)) * elementSize,
          cudaMemcpyDeviceToDevice, ctx.stream));
    return Status::success();
  }

  /// Two operands: the labels sorted into batch, m, n and k, the
  /// operands permuted to [batch, m, k] and [batch, k, n], then one GEMM.
  Status contract() {
    const std::string &lhs = terms[0], &rhs = terms[1];
    if (Status status = splitLabels(lhs, rhs); !status)
      return status;
    cudaDataType_t type, resultTypeCode;
    cublasComputeType_t compute;
    if (Status status = gemmTypes(type, compute); !status)
      return status;
    resultTypeCode = resultType.dtype == DType::F32 ? CUDA_R_32F : type;
    const void *a = nullptr, *b = nullptr;
    if (Status status = permuted(operands[0], lhs, batch + m + k, a); !status)
      return status;
    if (Status status = permuted(operands[1], rhs, batch + k + n, b); !status)
      return status;
    return multiply(a, b, type, resultTypeCode, compute);
  }

  /// Sorts the labels into batch (output, both operands), m (output,
  /// `lhs`), n (output, `rhs`) and k (contracted); fails on a label
  /// summed in one operand only.
  Status splitLabels(const std::string &lhs, const std::string &rhs) {
    for (char c : output) {
      if (has(lhs, c) && has(rhs, c))
        batch += c;
      else if (has(lhs, c))
        m += c;
      else if (has(rhs, c))
        n += c;
    }
    for (char c : lhs)
      if (has(rhs, c) && !has(output, c))
        k += c;
    for (const std::string &term : terms)
      for (char c : term)
        if (!has(output, c) && !has(k, c))
          return Status::error("einsum '" + spec +
                               "': a label summed in one operand only is "
                               "not supported on CUDA");
    return Status::success();
  }

  /// The cuBLAS element type and compute type of the operands' dtype: f32
  /// accumulation for bf16/f16, TF32 when allowed.
  Status gemmTypes(cudaDataType_t &type, cublasComputeType_t &compute) const {
    switch (dtype) {
    case DType::F32:
      type = CUDA_R_32F;
      compute =
          ctx.allowTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::BF16:
      type = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case DType::F16:
      type = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case DType::F64:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    default:
      return Status::error(std::string("einsum on ") + dtypeName(dtype) +
                           " is not supported on CUDA");
    }
    return Status::success();
  }

  /// The product [batch, m, n] of `a` ([batch, m, k]) and `b` ([batch, k,
  /// n]) as one batched GEMM, into the result or, when its labels differ
  /// from the output's, into scratch permuted to the result.
  Status multiply(const void *a, const void *b, cudaDataType_t type,
                  cudaDataType_t resultTypeCode, cublasComputeType_t compute) {
    int64_t batches = product(labelsShape(batch));
    int64_t rows = product(labelsShape(m)), cols = product(labelsShape(n)),
            depth = product(labelsShape(k));
    std::string productLabels = batch + m + n;
    int64_t resultElement = dtypeSize(resultType.dtype);
    void *c =
        productLabels == output
            ? result
            : ctx.scratch(ctx.backend, batches * rows * cols * resultElement);
    if (batches * rows * cols == 0)
      return Status::success();
    float oneF = 1, zeroF = 0;
    double oneD = 1, zeroD = 0;
    const void *alpha = dtype == DType::F64 ? static_cast<const void *>(&oneD)
                                            : static_cast<const void *>(&oneF);
    const void *beta = dtype == DType::F64 ? static_cast<const void *>(&zeroD)
                                           : static_cast<const void *>(&zeroF);
    PARTITA_CUBLAS_CHECK(cublasSetStream(ctx.blas, ctx.stream));
    // Row-major C = A·B is column-major C^T = B^T·A^T.
    PARTITA_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        ctx.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(cols),
        static_cast<int>(rows), static_cast<int>(depth), alpha, b, type,
        static_cast<int>(std::max<int64_t>(cols, 1)), depth * cols, a, type,
        static_cast<int>(std::max<int64_t>(depth, 1)), rows * depth, beta, c,
        resultTypeCode, static_cast<int>(std::max<int64_t>(cols, 1)),
        rows * cols, static_cast<int>(batches), compute, CUBLAS_GEMM_DEFAULT));
    if (c == result)
      return Status::success();
    StridedView view;
    if (!device::transposeView(labelsShape(productLabels),
                               permutation(productLabels, output), view))
      return Status::error("einsum: cannot permute the product");
    return cudaStridedCopy(ctx.stream, c, result, view, resultElement);
  }

  const CudaContext &ctx;
  const std::string &spec;
  const std::vector<TensorType> &operandTypes;
  const std::vector<const void *> &operands;
  const TensorType &resultType;
  void *result;
  /// The spec's operand terms and output labels.
  std::vector<std::string> terms;
  std::string output;
  /// The extent of each label.
  std::vector<int64_t> size = std::vector<int64_t>(128, 0);
  DType dtype = DType::F32;
  int64_t elementSize = 0;
  /// The output's labels in both operands, in the first or the second
  /// only, and the contracted ones.
  std::string batch, m, n, k;
};

} // namespace

/// The einsum of one or two operands as a (batched) cuBLAS GEMM: operands
/// permuted to [batch, m, k] and [batch, k, n], the product [batch, m, n]
/// permuted to the output's labels.
Status cudaEinsum(const CudaContext &ctx, const Instruction &inst,
                  const std::vector<TensorType> &operandTypes,
                  const std::vector<const void *> &operands,
                  const TensorType &resultType, void *result) {
  return GemmEinsum(ctx, inst.text, operandTypes, operands, resultType, result)
      .run();
}

} // namespace partita
