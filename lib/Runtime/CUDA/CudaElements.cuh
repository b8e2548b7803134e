//===- CudaElements.cuh - Element types and launch helpers of our kernels -===//
//
// Shared by the tensor-op kernels (CudaKernels.cu) and the device-memory
// communicator (DeviceCommunicator.cu): how each dtype is stored and
// computed (bf16/f16 in f32, integers in 64 bits, booleans as bytes), the
// grid-stride loop and launch-error check.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_CUDA_CUDAELEMENTS_CUH
#define PARTITA_LIB_RUNTIME_CUDA_CUDAELEMENTS_CUH

#include "CudaCheck.h"

#include "partita/Runtime/Program/DeviceMath.h"
#include "partita/Runtime/IO/HostArray.h"

#include <string>
#include <type_traits>

namespace partita {
namespace cuda_detail {

constexpr int threadsPerBlock = 256;

inline int blocksFor(int64_t count) {
  int64_t blocks = (count + threadsPerBlock - 1) / threadsPerBlock;
  return static_cast<int>(blocks < 65535 * 32 ? (blocks > 0 ? blocks : 1)
                                              : 65535 * 32);
}

#define PARTITA_GRID_LOOP(i, count)                                            \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) +            \
                   threadIdx.x;                                                \
       i < (count); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

//===----------------------------------------------------------------------===//
// Element types: storage type S, compute type C, load/store.
//===----------------------------------------------------------------------===//

template <typename S, typename C> struct Plain {
  using Storage = S;
  using Compute = C;
  static __device__ C load(S v) { return static_cast<C>(v); }
  static __device__ S store(C v) { return static_cast<S>(v); }
};
struct BF16 {
  using Storage = uint16_t;
  using Compute = float;
  static __device__ float load(uint16_t v) { return device::bf16ToFloat(v); }
  static __device__ uint16_t store(float v) { return device::floatToBf16(v); }
};
struct F16 {
  using Storage = uint16_t;
  using Compute = float;
  static __device__ float load(uint16_t v) { return device::halfToFloat(v); }
  static __device__ uint16_t store(float v) { return device::floatToHalf(v); }
};
struct Bool {
  using Storage = uint8_t;
  using Compute = int64_t;
  static __device__ int64_t load(uint8_t v) { return v != 0; }
  static __device__ uint8_t store(int64_t v) { return v != 0; }
};

/// Calls f(Tag{}) with the element tag of `dtype`.
template <typename F> Status withDType(DType dtype, F f) {
  switch (dtype) {
  case DType::F64:
    return f(Plain<double, double>{});
  case DType::F32:
    return f(Plain<float, float>{});
  case DType::BF16:
    return f(BF16{});
  case DType::F16:
    return f(F16{});
  case DType::I64:
    return f(Plain<int64_t, int64_t>{});
  case DType::I32:
    return f(Plain<int32_t, int64_t>{});
  case DType::I16:
    return f(Plain<int16_t, int64_t>{});
  case DType::I8:
    return f(Plain<int8_t, int64_t>{});
  case DType::U8:
    return f(Plain<uint8_t, int64_t>{});
  case DType::Bool:
    return f(Bool{});
  }
  return Status::error("unknown dtype");
}

template <typename T> constexpr bool isFloating() {
  return std::is_floating_point<typename T::Compute>::value;
}

template <int Bytes> struct Chunk { uint8_t bytes[Bytes]; };

inline Status launched(const char *what) {
  cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess)
    return Status::error(std::string(what) + ": kernel launch failed: " +
                         cudaGetErrorString(code));
  return Status::success();
}

} // namespace cuda_detail
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_CUDA_CUDAELEMENTS_CUH
