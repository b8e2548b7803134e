//===- CudaCheck.h - Checked CUDA and cuBLAS calls --------------*- C++ -*-===//
//
// Every CUDA runtime and cuBLAS call goes through these macros: a failure
// returns a Status naming the call, file:line and the library's message.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_CUDA_CUDACHECK_H
#define PARTITA_LIB_RUNTIME_CUDA_CUDACHECK_H

#include "partita/Sharding/Status.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

namespace partita {

/// "<call> failed at <file's base name>:<line>: <message>".
inline Status failureAt(const char *call, const char *file, int line,
                        const char *message) {
  const char *base = file;
  for (const char *p = file; *p; ++p)
    if (*p == '/')
      base = p + 1;
  return Status::error(std::string(call) + " failed at " + base + ":" +
                       std::to_string(line) + ": " + message);
}

inline Status cudaFailure(cudaError_t code, const char *call, const char *file,
                          int line) {
  return failureAt(call, file, line, cudaGetErrorString(code));
}

inline Status cublasFailure(cublasStatus_t code, const char *call,
                            const char *file, int line) {
  return failureAt(call, file, line, cublasGetStatusString(code));
}

#define PARTITA_CUDA_CHECK(call)                                               \
  do {                                                                         \
    cudaError_t partitaCudaCode = (call);                                      \
    if (partitaCudaCode != cudaSuccess)                                        \
      return ::partita::cudaFailure(partitaCudaCode, #call, __FILE__,          \
                                    __LINE__);                                 \
  } while (false)

#define PARTITA_CUBLAS_CHECK(call)                                             \
  do {                                                                         \
    cublasStatus_t partitaCublasCode = (call);                                 \
    if (partitaCublasCode != CUBLAS_STATUS_SUCCESS)                            \
      return ::partita::cublasFailure(partitaCublasCode, #call, __FILE__,      \
                                      __LINE__);                               \
  } while (false)

/// What a kernel needs from the backend: its stream and cuBLAS handle, and
/// scratch device memory (released by the backend after the op).
struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  bool allowTF32 = false;
  /// Device memory for the op's temporaries; freed when the op is done.
  void *(*scratch)(void *backend, int64_t bytes) = nullptr;
  void *backend = nullptr;
};

} // namespace partita

#endif // PARTITA_LIB_RUNTIME_CUDA_CUDACHECK_H
