//===- CudaBackend.h - Partitioned programs on NVIDIA GPUs ------*- C++ -*-===//
//
// The CUDA implementation of the runtime's Backend (Backend.h): device
// memory from a caching allocator (no cudaMalloc per op), one stream per
// device, host<->device copies, einsum through cuBLAS (f32, optional TF32,
// bf16/f16 with f32 accumulation, f64; batched), and our kernels for every
// other tensor op (lib/Runtime/CUDA/CudaKernels.cu), whose index math is
// DeviceMath.h, tested on the CPU. No MLIR here; built when CUDA is found
// (PARTITA_HAVE_CUDA), and every CUDA/cuBLAS call is checked and reported
// with file:line and the library's message. docs/GPU.md.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_CUDA_CUDABACKEND_H
#define PARTITA_RUNTIME_CUDA_CUDABACKEND_H

#include "partita/Runtime/Backend.h"
#include "partita/Runtime/Executable.h"

#include <memory>
#include <string>

namespace partita {

/// How many CUDA devices this process sees; 0 with `why` set when there is
/// no GPU or no usable driver.
int cudaDeviceCount(std::string *why = nullptr);

/// Options of the CUDA backend.
struct CudaBackendOptions {
  /// f32 einsums may use TF32 tensor cores (cuBLAS's FAST_TF32 compute).
  bool allowTF32 = false;
};

/// A backend on CUDA device `device`.
Expected<std::unique_ptr<Backend>>
createCudaBackend(int device, const CudaBackendOptions &options = {});

/// Runs `program` on its mesh's N devices as N logical devices spread over
/// the visible GPUs (device d on GPU d mod count), one host thread each.
/// Collectives stage device buffers through host memory into the
/// in-process communicator, so N > the GPU count works (NCCL refuses two
/// ranks on one GPU); the NCCL communicator is the multi-GPU path.
/// Inputs, outputs and the partial-sum handling are runOnCpuDevices's.
Expected<std::vector<HostArray>>
runOnCudaDevices(const Executable &program,
                 const std::vector<HostArray> &globalInputs,
                 const CudaBackendOptions &options = {},
                 RunStatistics *statistics = nullptr);

} // namespace partita

#endif // PARTITA_RUNTIME_CUDA_CUDABACKEND_H
