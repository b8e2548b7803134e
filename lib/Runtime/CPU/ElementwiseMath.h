//===- ElementwiseMath.h - The float math of the elementwise ops -*- C++ -*-===//
//
// One definition of what each floating-point elementwise op computes,
// handed to a visitor as a lambda so the caller's loop stays a plain loop
// the compiler vectorizes. The op-at-a-time kernels (Elementwise.cpp) and
// the fused kernel (Fused.cpp) both use it, so a fused chain gives the same
// bits as the ops one by one.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_CPU_ELEMENTWISEMATH_H
#define PARTITA_RUNTIME_CPU_ELEMENTWISEMATH_H

#include "partita/Runtime/Program/Instruction.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace partita {
namespace cpu {

/// max/min that return NaN when either side is NaN.
template <typename T> T nanMax(T a, T b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  return a > b ? a : b;
}
template <typename T> T nanMin(T a, T b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  return a < b ? a : b;
}

/// e^x in float without a call: 2^n e^r with n = round(x / ln 2) and
/// |r| <= ln 2 / 2 (ln 2 in two parts, so r is exact to a few ulps), e^r
/// by its Taylor polynomial to r^7 (truncation below 5e-9 relative), 2^n
/// built from its exponent bits in two halves (so n = 128 is no overflow).
/// Branch-free, so loops over it vectorize; within 2 ulps of std::exp on
/// normal results; results below 2^-126 (x < -87.33654) are 0.
inline float expFloat(float x) {
  // NaN is computed as 0 and replaced at the end: every integer below is
  // in range (n from -127 to 129).
  const float finite = x == x ? x : 0.0f;
  const float clamped =
      finite < -88.0f ? -88.0f : (finite > 89.0f ? 89.0f : finite);
  // Round to nearest by adding and taking away 1.5 * 2^23 (no call, so
  // it vectorizes without SSE4.1's round).
  const float n =
      (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r =
      (clamped - n * 0.693145751953125f) - n * 1.428606765330187045e-6f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n as 2^(n / 2) * 2^(n - n / 2): each half a normal float.
  int32_t k = static_cast<int32_t>(n);
  int32_t half = k / 2;
  uint32_t bitsA = static_cast<uint32_t>(half + 127) << 23;
  uint32_t bitsB = static_cast<uint32_t>(k - half + 127) << 23;
  float a, b;
  __builtin_memcpy(&a, &bitsA, 4);
  __builtin_memcpy(&b, &bitsB, 4);
  float result = p * a * b;
  result = x < -87.33654f ? 0.0f : result; // ln 2^-126
  result = x > 88.7228391f ? __builtin_inff() : result;
  return x != x ? x : result;
}

/// tanh(x) in float without a call: an odd Taylor polynomial to x^11 for
/// |x| < 0.3 (truncation below 2e-9 relative), else (e - 1) / (e + 1)
/// with e = e^(2|x|) (at least 1.8, so e - 1 loses no more than a bit),
/// and +-1 from |x| >= 9. Branch-free; within a few ulps of std::tanh.
inline float tanhFloat(float x) {
  float a = __builtin_fabsf(x);
  float z = x * x;
  float small = -1382.0f / 155925;
  small = small * z + 62.0f / 2835;
  small = small * z - 17.0f / 315;
  small = small * z + 2.0f / 15;
  small = small * z - 1.0f / 3;
  small = x + x * z * small;
  float e = expFloat(2.0f * (a < 9.0f ? a : 9.0f));
  float large = (e - 1.0f) / (e + 1.0f);
  large = a >= 9.0f ? 1.0f : large;
  large = x < 0 ? -large : large;
  float result = a < 0.3f ? small : large;
  return x != x ? x : __builtin_copysignf(result, x);
}

/// Inlined into the caller, so the caller's loops (the visitors) are
/// compiled for the caller's target (Fused.cpp's AVX versions).
#if defined(__GNUC__) || defined(__clang__)
#define PARTITA_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PARTITA_ALWAYS_INLINE inline
#endif

/// Calls `visit(fn)` with the math of unary op `op` on compute type C;
/// false when `op` is not a float unary op.
template <typename C, typename Visit>
PARTITA_ALWAYS_INLINE bool visitFloatUnary(OpCode op, Visit &&visit) {
  switch (op) {
  case OpCode::Neg:
    visit([](C x) { return -x; });
    return true;
  case OpCode::Abs:
    visit([](C x) { return std::fabs(x); });
    return true;
  case OpCode::Sign:
    visit([](C x) { return x > 0 ? C(1) : (x < 0 ? C(-1) : x); });
    return true;
  case OpCode::Exp:
    if constexpr (std::is_same_v<C, float>)
      visit([](C x) { return expFloat(x); });
    else
      visit([](C x) { return std::exp(x); });
    return true;
  case OpCode::Log:
    visit([](C x) { return std::log(x); });
    return true;
  case OpCode::Log1p:
    visit([](C x) { return std::log1p(x); });
    return true;
  case OpCode::Tanh:
    if constexpr (std::is_same_v<C, float>)
      visit([](C x) { return tanhFloat(x); });
    else
      visit([](C x) { return std::tanh(x); });
    return true;
  case OpCode::Logistic:
    if constexpr (std::is_same_v<C, float>)
      visit([](C x) { return C(1) / (C(1) + expFloat(-x)); });
    else
      visit([](C x) { return C(1) / (C(1) + std::exp(-x)); });
    return true;
  case OpCode::Sqrt:
    visit([](C x) { return std::sqrt(x); });
    return true;
  case OpCode::Rsqrt:
    visit([](C x) { return C(1) / std::sqrt(x); });
    return true;
  case OpCode::Erf:
    visit([](C x) { return std::erf(x); });
    return true;
  case OpCode::Sin:
    visit([](C x) { return std::sin(x); });
    return true;
  case OpCode::Cos:
    visit([](C x) { return std::cos(x); });
    return true;
  case OpCode::Floor:
    visit([](C x) { return std::floor(x); });
    return true;
  default:
    return false;
  }
}

/// Calls `visit(fn)` with the math of binary op `op` on compute type C;
/// false when `op` is not a float binary op.
template <typename C, typename Visit>
PARTITA_ALWAYS_INLINE bool visitFloatBinary(OpCode op, Visit &&visit) {
  switch (op) {
  case OpCode::Add:
    visit([](C a, C b) { return a + b; });
    return true;
  case OpCode::Sub:
    visit([](C a, C b) { return a - b; });
    return true;
  case OpCode::Mul:
    visit([](C a, C b) { return a * b; });
    return true;
  case OpCode::Div:
    visit([](C a, C b) { return a / b; });
    return true;
  case OpCode::Rem:
    visit([](C a, C b) { return std::fmod(a, b); });
    return true;
  case OpCode::Max:
    visit([](C a, C b) { return nanMax(a, b); });
    return true;
  case OpCode::Min:
    visit([](C a, C b) { return nanMin(a, b); });
    return true;
  case OpCode::Pow:
    visit([](C a, C b) { return std::pow(a, b); });
    return true;
  default:
    return false;
  }
}

} // namespace cpu
} // namespace partita

#endif // PARTITA_RUNTIME_CPU_ELEMENTWISEMATH_H
