//===- HostArray.h - A dense array in host memory ---------------*- C++ -*-===//
//
// The runtime's currency for data that enters or leaves a program: inputs
// read from .npy files, outputs assembled from device blocks, the blocks
// themselves. A HostArray is an element type, a shape and the elements as
// raw little-endian bytes in C (row-major) order; it does not interpret the
// bytes beyond what printing and comparing need.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_HOSTARRAY_H
#define PARTITA_RUNTIME_HOSTARRAY_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace partita {

/// Element types the runtime moves around.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// Every DType, in declaration order (for tests and help texts).
const std::vector<DType> &allDTypes();

/// Bytes per element: 8 for f64 and i64 down to 1 for i8, u8 and bool.
int64_t dtypeSize(DType dtype);

/// Short name used across Partita: "f64", "f32", "f16", "bf16", "i64",
/// "i32", "i16", "i8", "u8", "bool".
const char *dtypeName(DType dtype);

/// Inverse of dtypeName; the failure lists the accepted names.
Expected<DType> parseDType(std::string_view name);

/// Product of `shape`, or a failure when a dimension is negative or the
/// product overflows int64 (shapes read from files are untrusted).
Expected<int64_t> checkedNumElements(const std::vector<int64_t> &shape);

/// Bytes of an array of `dtype` and `shape`, or a failure as for
/// checkedNumElements.
Expected<int64_t> checkedNumBytes(DType dtype,
                                  const std::vector<int64_t> &shape);

/// "[2, 3]" ("[]" for a scalar).
std::string formatShape(const std::vector<int64_t> &shape);

/// The dimensions of `shape` joined by ", " ("2, 3"; "" for a scalar).
std::string joinDims(const std::vector<int64_t> &shape);

/// Product of `shape` (1 for a scalar), unchecked: for shapes already
/// validated (checkedNumElements() for the others).
int64_t numElementsOf(const std::vector<int64_t> &shape);

/// A dense array in host memory: `bytes` holds numElements() elements of
/// `dtype`, C order, little-endian. Bool elements are one byte, 0 or 1.
struct HostArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// An array of `shape` with every byte zero (0, 0.0 and false). The shape
  /// must be valid (non-negative, no overflow).
  static HostArray zeros(DType dtype, std::vector<int64_t> shape);

  /// An array holding a copy of `values`; sizeof(T) must equal the dtype's
  /// size and `values` must hold exactly the product of `shape` elements
  /// (both are programming errors, checked by the caller's tests).
  template <typename T>
  static HostArray fromValues(DType dtype, std::vector<int64_t> shape,
                              const std::vector<T> &values) {
    HostArray array;
    array.dtype = dtype;
    array.shape = std::move(shape);
    array.bytes.resize(values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
    return array;
  }

  /// Number of dimensions.
  int rank() const { return static_cast<int>(shape.size()); }
  /// Product of the shape (1 for a scalar).
  int64_t numElements() const;
  /// numElements() * dtypeSize(dtype).
  int64_t numBytes() const;
  /// Fails when `bytes` does not hold exactly numElements() elements.
  Status checkConsistent() const;

  /// Element `flatIndex` (C order) as T; sizeof(T) must be the dtype's size.
  template <typename T> T element(int64_t flatIndex) const {
    T value;
    std::memcpy(&value, bytes.data() + flatIndex * sizeof(T), sizeof(T));
    return value;
  }
  /// Element `flatIndex` converted to double (f16 and bf16 widened exactly).
  double elementAsDouble(int64_t flatIndex) const;
  /// Element `flatIndex` printed for a person: "1.5", "-3", "true".
  std::string formatElement(int64_t flatIndex) const;

  /// Same dtype, shape and bytes.
  bool operator==(const HostArray &other) const {
    return dtype == other.dtype && shape == other.shape && bytes == other.bytes;
  }
  bool operator!=(const HostArray &other) const { return !(*this == other); }
};

/// Widens an IEEE half-precision value (bit pattern) to float.
float halfToFloat(uint16_t bits);
/// Widens a bfloat16 value (bit pattern) to float.
float bfloat16ToFloat(uint16_t bits);

/// Rounds a float to bfloat16 (nearest even; NaN stays a quiet NaN with its
/// sign).
uint16_t floatToBFloat16(float value);

/// Rounds a float to IEEE half (nearest even; overflow to infinity; NaN
/// stays NaN).
uint16_t floatToHalf(float value);

/// Stores `value` as element `flatIndex` (C order) of `array`, rounded to
/// a float dtype (nearest even), truncated toward zero for an integer one
/// (the low bytes, little-endian), nonzero as true for bool.
void setElementFromDouble(HostArray &array, int64_t flatIndex, double value);
/// Stores `value` as one element of `dtype` at `at`, as
/// setElementFromDouble() does.
void storeElement(DType dtype, uint8_t *at, double value);

/// Element `flatIndex` (C order) of `array` as a double, whatever its dtype
/// (bool as 0/1).
double elementAsDouble(const HostArray &array, int64_t flatIndex);

} // namespace partita

#endif // PARTITA_RUNTIME_HOSTARRAY_H
