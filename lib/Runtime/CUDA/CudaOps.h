//===- CudaOps.h - Kernels the CUDA files share -----------------*- C++ -*-===//
//
// Private to lib/Runtime/CUDA: the strided-copy and placement kernels of
// CudaKernels.cu (the communicators move blocks with them), one instruction
// to run (CudaOp) and the launchers other files implement: the elementwise
// ops and fused chains of CudaElementwise.cu, the einsum of CudaEinsum.cu.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H
#define PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H

#include "CudaCheck.h"

#include "partita/Runtime/Program/DeviceMath.h"
#include "partita/Runtime/Program/Instruction.h"

#include <string>
#include <vector>

namespace partita {

/// Copies the elements `view` selects from `source` into `destination`
/// (dense, in view order) on `stream`.
Status cudaStridedCopy(cudaStream_t stream, const void *source,
                       void *destination, const device::StridedView &view,
                       int64_t elementSize);
/// The inverse: writes the dense `block` to the elements `view` selects in
/// `destination`.
Status cudaPlace(cudaStream_t stream, const void *block, void *destination,
                 const device::StridedView &view, int64_t elementSize);

/// One instruction to run: its buffers, their types, and what every
/// launcher derives from them.
struct CudaOp {
  const CudaContext &ctx;
  const Instruction &inst;
  const std::vector<TensorType> &operandTypes;
  const std::vector<const void *> &operands;
  const std::vector<TensorType> &resultTypes;
  const std::vector<void *> &results;
  const std::vector<HostArray> &constants;
  /// The op's name, for messages.
  std::string name;
  /// Result 0's type, element count and element size.
  const TensorType &out;
  int64_t count;
  int64_t elementSize;

  Status fail(const std::string &message) const {
    return Status::error(name + " on CUDA: " + message);
  }
  /// Copies operand 0 to result 0 unless they are the same buffer.
  Status sameBytes() const {
    if (operands[0] != results[0] && count > 0)
      PARTITA_CUDA_CHECK(cudaMemcpyAsync(results[0], operands[0], out.bytes(),
                                         cudaMemcpyDeviceToDevice, ctx.stream));
    return Status::success();
  }
};

/// Unary and binary elementwise ops (CudaElementwise.cu).
Status runCudaElementwise(const CudaOp &op);
/// A fused chain of elementwise ops (CudaElementwise.cu).
Status runCudaFused(const CudaOp &op);

/// Reduces `operand` (`dtype`, `shape`) over `dims` with ReductionCode
/// `kind` into `result` (`count` elements).
Status cudaReduce(const CudaContext &ctx, int kind, DType dtype,
                  const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &dims, const void *operand,
                  void *result, int64_t count);

/// The einsum `inst.text` of one or two operands into `result`.
Status cudaEinsum(const CudaContext &ctx, const Instruction &inst,
                  const std::vector<TensorType> &operandTypes,
                  const std::vector<const void *> &operands,
                  const TensorType &resultType, void *result);

} // namespace partita

#endif // PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H
