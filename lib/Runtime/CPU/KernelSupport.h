//===- KernelSupport.h - Shared pieces of the CPU kernels -------*- C++ -*-===//
//
// Private to lib/Runtime/CPU: element storage types and their compute types,
// dtype dispatch, row-major index arithmetic, a strided copy, and the entry
// points of each kernel family (one .cpp per family).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_CPU_KERNELSUPPORT_H
#define PARTITA_LIB_RUNTIME_CPU_KERNELSUPPORT_H

#include "partita/Runtime/CPU/Kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace partita {
namespace cpu {

/// A bfloat16 element as stored.
struct BF16 {
  uint16_t bits;
};
/// An IEEE half element as stored.
struct F16 {
  uint16_t bits;
};
/// A bool element as stored (one byte, 0 or 1; nonzero reads as true).
struct BoolByte {
  uint8_t value;
};

inline float widenBFloat16(uint16_t bits) {
  uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

/// How an element type is loaded into and stored from its compute type:
/// f16/bf16 compute in float, bool in bool, the rest in themselves.
template <typename Storage> struct ElementTraits {
  using Compute = Storage;
  static constexpr bool isFloat = std::is_floating_point<Storage>::value;
  static constexpr bool isInteger = std::is_integral<Storage>::value;
  static constexpr bool isBool = false;
  static Compute load(Storage value) { return value; }
  static Storage store(Compute value) { return value; }
};
template <> struct ElementTraits<BF16> {
  using Compute = float;
  static constexpr bool isFloat = true, isInteger = false, isBool = false;
  static float load(BF16 value) { return widenBFloat16(value.bits); }
  static BF16 store(float value) { return BF16{floatToBFloat16(value)}; }
};
template <> struct ElementTraits<F16> {
  using Compute = float;
  static constexpr bool isFloat = true, isInteger = false, isBool = false;
  static float load(F16 value) { return halfToFloat(value.bits); }
  static F16 store(float value) { return F16{floatToHalf(value)}; }
};
template <> struct ElementTraits<BoolByte> {
  using Compute = bool;
  static constexpr bool isFloat = false, isInteger = false, isBool = true;
  static bool load(BoolByte value) { return value.value != 0; }
  static BoolByte store(bool value) {
    return BoolByte{static_cast<uint8_t>(value)};
  }
};

template <typename Storage>
using ComputeOf = typename ElementTraits<Storage>::Compute;

/// The unsigned type integer arithmetic wraps in (never promoted to int).
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                    std::make_unsigned_t<T>>;

/// a + b, wrapping for integers (no undefined overflow), plain otherwise.
template <typename T> T wrappingAdd(T a, T b) {
  if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value)
    return static_cast<T>(static_cast<WrapType<T>>(a) +
                          static_cast<WrapType<T>>(b));
  else
    return a + b;
}

/// The larger / smaller of a and b; a NaN (the first one) wins (reduce's
/// max and min, fused or not).
template <typename T> T nanAwareMax(T a, T b) {
  if (a != a || b != b)
    return a != a ? a : b;
  return a > b ? a : b;
}
template <typename T> T nanAwareMin(T a, T b) {
  if (a != a || b != b)
    return a != a ? a : b;
  return a < b ? a : b;
}

/// a * b, wrapping for integers (no undefined overflow), plain otherwise.
template <typename T> T wrappingMul(T a, T b) {
  if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value)
    return static_cast<T>(static_cast<WrapType<T>>(a) *
                          static_cast<WrapType<T>>(b));
  else
    return a * b;
}

/// Calls `visitor(Storage{})` with the storage type of `dtype` and returns
/// its Status.
template <typename Visitor> Status visitDType(DType dtype, Visitor &&visitor) {
  switch (dtype) {
  case DType::F64:
    return visitor(double{});
  case DType::F32:
    return visitor(float{});
  case DType::F16:
    return visitor(F16{});
  case DType::BF16:
    return visitor(BF16{});
  case DType::I64:
    return visitor(int64_t{});
  case DType::I32:
    return visitor(int32_t{});
  case DType::I16:
    return visitor(int16_t{});
  case DType::I8:
    return visitor(int8_t{});
  case DType::U8:
    return visitor(uint8_t{});
  case DType::Bool:
    return visitor(BoolByte{});
  }
  return Status::error("unknown dtype");
}

/// Everything a kernel family needs about one call, checked for arity.
struct KernelContext {
  const KernelCall &call;
  const TensorType &operandType(size_t i) const { return call.operandTypes[i]; }
  const TensorType &resultType(size_t i) const { return call.resultTypes[i]; }
  template <typename T = void> const T *operand(size_t i) const {
    return static_cast<const T *>(call.operands[i]);
  }
  template <typename T = void> T *result(size_t i) const {
    return static_cast<T *>(call.results[i]);
  }
  size_t numOperands() const { return call.operands.size(); }
  const std::vector<int64_t> &ints() const { return call.inst.ints; }
  /// A failure "<op>: <what>".
  Status error(const std::string &what) const {
    return Status::error(std::string(opCodeName(call.inst.op)) + ": " + what);
  }
  /// Fails unless ints() holds `count` attributes (`names`, e.g. "dim, k")
  /// whose first is a dimension of a tensor of rank `rank`.
  Status checkDimInts(size_t count, int64_t rank, const char *names) const {
    if (ints().size() != count || ints()[0] < 0 || ints()[0] >= rank)
      return error(std::string("expects ints = {") + names +
                   "} with 0 <= dim < rank " + std::to_string(rank));
    return Status::success();
  }
  /// checkDimInts() for a dimension of `type`.
  Status checkDimInts(size_t count, const TensorType &type,
                      const char *names) const {
    return checkDimInts(count, static_cast<int64_t>(type.shape.size()), names);
  }
  /// A failure for an element type the op does not support.
  Status unsupported(DType dtype) const {
    return error(std::string("unsupported element type ") + dtypeName(dtype));
  }
};

/// Row-major strides of `shape` in elements.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

/// Product of `shape` (1 for a scalar).
int64_t productOf(const std::vector<int64_t> &shape);

/// "f32[2, 3]".
std::string describe(const TensorType &type);

/// Copies `shape`-many elements of `elementSize` bytes: element `idx` is read
/// at `src + sum(idx * srcStrides)` and written at `dst + sum(idx *
/// dstStrides)` (strides in elements, may be 0 on the source side).
void copyStrided(void *dst, const std::vector<int64_t> &dstStrides,
                 const void *src, const std::vector<int64_t> &srcStrides,
                 const std::vector<int64_t> &shape, int64_t elementSize);

/// Reads a 0-d or indexed i32/i64 element as int64 (other dtypes: 0).
int64_t loadIndex(DType dtype, const void *data, int64_t position);

// Kernel families; each checks its own operands and attributes.
Status runElementwiseUnary(const KernelContext &ctx);
Status runElementwiseBinary(const KernelContext &ctx);
Status runCompare(const KernelContext &ctx);
Status runSelect(const KernelContext &ctx);
Status runFused(const KernelContext &ctx);
Status runConvert(const KernelContext &ctx);
Status runReduce(const KernelContext &ctx);
Status runArgmax(const KernelContext &ctx);
Status runTopK(const KernelContext &ctx);
Status runCumsum(const KernelContext &ctx);
Status runBroadcast(const KernelContext &ctx);
Status runTranspose(const KernelContext &ctx);
Status runSlice(const KernelContext &ctx);
Status runDynamicSlice(const KernelContext &ctx);
Status runDynamicUpdateSlice(const KernelContext &ctx);
Status runConcatenate(const KernelContext &ctx);
Status runPad(const KernelContext &ctx);
Status runGather(const KernelContext &ctx);
Status runScatterAdd(const KernelContext &ctx);
/// Called with each range [begin, end) of an einsum's product (result 0)
/// once it is complete, in order, covering the whole product.
using ProductEpilogue = std::function<Status(int64_t begin, int64_t end)>;
/// An einsum; with `epilogue`, a two-operand f32 product laid out as the
/// result is computed in blocks of rows, each handed to it as it completes
/// (a fused instruction's head, Fused.cpp).
Status runEinsum(const KernelContext &ctx,
                 const ProductEpilogue *epilogue = nullptr);

/// Integer GEMM with the contract of gemmF32 (built-in kernel, wrapping).
void gemmI64(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const int64_t *a, int64_t lda, const int64_t *b, int64_t ldb,
             int64_t *c, int64_t ldc);

/// Converts `count` elements of `from` at `src` to `to` at `dst` (the
/// semantics of partita.convert). Returns false for an unknown dtype.
bool convertElements(DType from, const void *src, DType to, void *dst,
                     int64_t count);

} // namespace cpu
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_CPU_KERNELSUPPORT_H
