//===- KernelTestSupport.h - Helpers for the CPU kernel tests ---*- C++ -*-===//
//
// Buffers with typed element access (through double), random fills with a
// fixed seed, a runner for one instruction, row-major index helpers for the
// naive reference loops, and a tolerance check that treats NaN == NaN.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TEST_UNIT_KERNELTESTSUPPORT_H
#define PARTITA_TEST_UNIT_KERNELTESTSUPPORT_H

#include "partita/Runtime/CPU/Kernels.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../IndexTestSupport.h"

namespace partita {
namespace kernel_test {

/// A typed host buffer.
struct Buffer {
  TensorType type;
  std::vector<uint8_t> bytes;

  Buffer() = default;
  Buffer(DType dtype, std::vector<int64_t> shape) {
    type.dtype = dtype;
    type.shape = std::move(shape);
    bytes.assign(type.bytes(), 0);
  }
  int64_t size() const { return type.numElements(); }

  /// Element `i` widened to double (exact for every dtype but i64 > 2^53).
  double get(int64_t i) const {
    const uint8_t *p = bytes.data() + i * dtypeSize(type.dtype);
    switch (type.dtype) {
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return halfToFloat(v);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16ToFloat(v);
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::I8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case DType::U8:
      return *p;
    case DType::Bool:
      return *p != 0;
    }
    return 0;
  }
  /// Element `i` as int64 (integer dtypes).
  int64_t getInt(int64_t i) const {
    if (type.dtype == DType::I64) {
      int64_t v;
      std::memcpy(&v, bytes.data() + 8 * i, 8);
      return v;
    }
    return static_cast<int64_t>(get(i));
  }
  /// Stores `value` rounded (floats) or truncated (integers) to the dtype.
  void set(int64_t i, double value) {
    uint8_t *p = bytes.data() + i * dtypeSize(type.dtype);
    auto put = [&](auto v) { std::memcpy(p, &v, sizeof(v)); };
    switch (type.dtype) {
    case DType::F64:
      put(value);
      break;
    case DType::F32:
      put(float(value));
      break;
    case DType::F16:
      put(floatToHalf(float(value)));
      break;
    case DType::BF16:
      put(floatToBFloat16(float(value)));
      break;
    case DType::I64:
      put(int64_t(value));
      break;
    case DType::I32:
      put(int32_t(value));
      break;
    case DType::I16:
      put(int16_t(value));
      break;
    case DType::I8:
      put(int8_t(value));
      break;
    case DType::U8:
      put(uint8_t(value));
      break;
    case DType::Bool:
      put(uint8_t(value != 0));
      break;
    }
  }
  void setInt(int64_t i, int64_t value) {
    if (type.dtype == DType::I64)
      std::memcpy(bytes.data() + 8 * i, &value, 8);
    else
      set(i, double(value));
  }
};

inline bool isFloatType(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

/// A buffer of `shape` filled from a fixed-seed generator: floats uniform
/// in [lo, hi), integers uniform in [lo, hi], bools fair coins.
inline Buffer randomBuffer(DType dtype, std::vector<int64_t> shape,
                           std::mt19937 &rng, double lo = -2, double hi = 2) {
  Buffer buffer(dtype, std::move(shape));
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer{int64_t(lo), int64_t(hi)};
  for (int64_t i = 0; i < buffer.size(); ++i) {
    if (isFloatType(dtype))
      buffer.set(i, real(rng));
    else if (dtype == DType::Bool)
      buffer.set(i, rng() & 1);
    else
      buffer.setInt(i, integer(rng));
  }
  return buffer;
}

/// A buffer holding `values` (converted to the dtype).
inline Buffer bufferOf(DType dtype, std::vector<int64_t> shape,
                       const std::vector<double> &values) {
  Buffer buffer(dtype, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == buffer.size());
  for (size_t i = 0; i < values.size(); ++i)
    buffer.set(i, values[i]);
  return buffer;
}

/// Runs one instruction; results are allocated from `resultTypes`.
inline Status runOp(OpCode op, const std::vector<int64_t> &ints,
                    const std::vector<const Buffer *> &operands,
                    std::vector<Buffer> &results, const std::string &text = "",
                    const std::vector<HostArray> *pool = nullptr) {
  Instruction inst;
  inst.op = op;
  inst.ints = ints;
  inst.text = text;
  std::vector<TensorType> operandTypes, resultTypes;
  std::vector<const void *> operandData;
  std::vector<void *> resultData;
  for (const Buffer *operand : operands) {
    operandTypes.push_back(operand->type);
    operandData.push_back(operand->bytes.data());
  }
  for (Buffer &result : results) {
    resultTypes.push_back(result.type);
    resultData.push_back(result.bytes.data());
  }
  return cpu::runKernel(inst, operandTypes, operandData, resultTypes,
                        resultData, pool);
}

/// Runs `op` with one result of `resultType`, requiring success.
inline Buffer runOne(OpCode op, const std::vector<int64_t> &ints,
                     const std::vector<const Buffer *> &operands, DType dtype,
                     std::vector<int64_t> shape, const std::string &text = "") {
  std::vector<Buffer> results{Buffer(dtype, std::move(shape))};
  Status status = runOp(op, ints, operands, results, text);
  INFO(opCodeName(op) << ": " << status.message());
  REQUIRE(status.ok());
  return results[0];
}

using index_test::countOf;
using index_test::flatten;
using index_test::unflatten;

/// Checks |actual - expected| <= absolute + relative * |expected| per
/// element (NaN matches NaN, infinities must match exactly).
inline void checkClose(const Buffer &actual,
                       const std::vector<double> &expected, double absolute,
                       double relative, const std::string &what = "") {
  REQUIRE(actual.size() == static_cast<int64_t>(expected.size()));
  int mismatches = 0;
  for (int64_t i = 0; i < actual.size() && mismatches < 5; ++i) {
    double a = actual.get(i), e = expected[i];
    bool ok;
    if (std::isnan(e) || std::isnan(a))
      ok = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a))
      ok = a == e;
    else
      ok = std::fabs(a - e) <= absolute + relative * std::fabs(e);
    if (!ok) {
      ++mismatches;
      FAIL_CHECK(what << " element " << i << ": got " << a << ", expected "
                      << e);
    }
  }
}

/// Exact equality of every element.
inline void checkEqual(const Buffer &actual,
                       const std::vector<double> &expected,
                       const std::string &what = "") {
  checkClose(actual, expected, 0, 0, what);
}

/// Tolerances used throughout: f32 results are compared with a double
/// reference at 1e-5 relative; bf16 results (rounded once from f32) at
/// 2^-7 relative (one bf16 ulp); f64 at 1e-12.
struct Tolerance {
  double absolute, relative;
};
inline Tolerance toleranceFor(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return {1e-12, 1e-12};
  case DType::F32:
    return {1e-6, 1e-5};
  case DType::BF16:
    return {1e-3, 1.0 / 128};
  case DType::F16:
    return {1e-4, 1.0 / 1024};
  default:
    return {0, 0};
  }
}

} // namespace kernel_test
} // namespace partita

#endif // PARTITA_TEST_UNIT_KERNELTESTSUPPORT_H
