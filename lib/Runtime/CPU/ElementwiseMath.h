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

/// Calls `visit(fn)` with the math of unary op `op` on compute type C;
/// false when `op` is not a float unary op.
template <typename C, typename Visit>
bool visitFloatUnary(OpCode op, Visit &&visit) {
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
    visit([](C x) { return std::exp(x); });
    return true;
  case OpCode::Log:
    visit([](C x) { return std::log(x); });
    return true;
  case OpCode::Log1p:
    visit([](C x) { return std::log1p(x); });
    return true;
  case OpCode::Tanh:
    visit([](C x) { return std::tanh(x); });
    return true;
  case OpCode::Logistic:
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
bool visitFloatBinary(OpCode op, Visit &&visit) {
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
