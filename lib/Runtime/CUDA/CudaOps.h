//===- CudaOps.h - Kernels the CUDA files share -----------------*- C++ -*-===//
//
// Private to lib/Runtime/CUDA: the strided-copy and placement kernels of
// CudaKernels.cu (the communicators move blocks with them) and the einsum of
// CudaEinsum.cu.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H
#define PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H

#include "CudaCheck.h"

#include "partita/Runtime/Program/DeviceMath.h"
#include "partita/Runtime/Program/Instruction.h"

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

/// The einsum `inst.text` of one or two operands into `result`.
Status cudaEinsum(const CudaContext &ctx, const Instruction &inst,
                  const std::vector<TensorType> &operandTypes,
                  const std::vector<const void *> &operands,
                  const TensorType &resultType, void *result);

} // namespace partita

#endif // PARTITA_LIB_RUNTIME_CUDA_CUDAOPS_H
