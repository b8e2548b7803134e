//===- Elementwise.cpp - Elementwise CPU kernels --------------------------===//
//
// Unary and binary elementwise ops, compare, select and convert: flat loops
// over the elements (operands of elementwise ops have identical shapes), one
// instantiation per element type, so the compiler can vectorize them.
//
// Integer semantics follow XLA where the op descriptions leave a case open:
// arithmetic wraps; x / 0 is all ones (-1, or the maximum unsigned) and
// x rem 0 is x; INT_MIN / -1 is INT_MIN and INT_MIN rem -1 is 0. A float
// converted to an integer truncates toward zero and saturates; NaN becomes 0.
//
//===----------------------------------------------------------------------===//
#include "ElementwiseMath.h"
#include "KernelSupport.h"

#include <algorithm>

namespace partita {
namespace cpu {
namespace {

template <typename T> T wrapSub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) -
                        static_cast<WrapType<T>>(b));
}
template <typename T> T wrapMul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) *
                        static_cast<WrapType<T>>(b));
}
template <typename T> T integerDivide(T a, T b) {
  if (b == 0)
    return static_cast<T>(~T(0));
  if constexpr (std::is_signed<T>::value)
    if (a == std::numeric_limits<T>::min() && b == T(-1))
      return a;
  return static_cast<T>(a / b);
}
template <typename T> T integerRemainder(T a, T b) {
  if (b == 0)
    return a;
  if constexpr (std::is_signed<T>::value)
    if (a == std::numeric_limits<T>::min() && b == T(-1))
      return 0;
  return static_cast<T>(a % b);
}

template <typename Storage, typename Fn>
void mapUnary(const Storage *in, Storage *out, int64_t count, Fn fn) {
  using Traits = ElementTraits<Storage>;
  for (int64_t i = 0; i < count; ++i)
    out[i] = Traits::store(fn(Traits::load(in[i])));
}

template <typename Storage, typename Fn>
void mapBinary(const Storage *lhs, const Storage *rhs, Storage *out,
               int64_t count, Fn fn) {
  using Traits = ElementTraits<Storage>;
  for (int64_t i = 0; i < count; ++i)
    out[i] = Traits::store(fn(Traits::load(lhs[i]), Traits::load(rhs[i])));
}

template <typename Storage>
Status unaryKernel(const KernelContext &ctx, int64_t count) {
  using Traits = ElementTraits<Storage>;
  using C = ComputeOf<Storage>;
  const Storage *in = ctx.operand<Storage>(0);
  Storage *out = ctx.result<Storage>(0);
  auto map = [&](auto fn) {
    mapUnary(in, out, count, fn);
    return Status::success();
  };
  OpCode op = ctx.call.inst.op;
  if constexpr (Traits::isFloat) {
    if (visitFloatUnary<C>(op, [&](auto fn) { mapUnary(in, out, count, fn); }))
      return Status::success();
  } else if constexpr (Traits::isInteger) {
    switch (op) {
    case OpCode::Neg:
      return map([](C x) { return wrapSub(C(0), x); });
    case OpCode::Abs:
      return map([](C x) { return x < C(0) ? wrapSub(C(0), x) : x; });
    case OpCode::Sign:
      return map([](C x) { return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0)); });
    case OpCode::Not:
      return map([](C x) { return static_cast<C>(~x); });
    default:
      break;
    }
  } else if (op == OpCode::Not) {
    return map([](C x) { return !x; });
  }
  return ctx.unsupported(ctx.operandType(0).dtype);
}

/// StableHLO's shifts (`op` one of the three): the amount read as unsigned;
/// at or past the bit width, 0 (left and logical) or every bit the sign
/// (arithmetic).
template <typename C> C integerShift(OpCode op, C value, C amount) {
  using U = std::make_unsigned_t<C>;
  using S = std::make_signed_t<C>;
  U shift = static_cast<U>(amount);
  bool past = shift >= sizeof(C) * 8;
  if (op == OpCode::ShiftRightArithmetic) {
    S signedValue = static_cast<S>(value);
    if (past)
      return static_cast<C>(signedValue < 0 ? S(-1) : S(0));
    return static_cast<C>(signedValue >> shift);
  }
  if (past)
    return C(0);
  U bits = static_cast<U>(value);
  return static_cast<C>(
      static_cast<U>(op == OpCode::ShiftLeft ? bits << shift : bits >> shift));
}

template <typename Storage>
Status binaryKernel(const KernelContext &ctx, int64_t count) {
  using Traits = ElementTraits<Storage>;
  using C = ComputeOf<Storage>;
  const Storage *lhs = ctx.operand<Storage>(0);
  const Storage *rhs = ctx.operand<Storage>(1);
  Storage *out = ctx.result<Storage>(0);
  auto map = [&](auto fn) {
    mapBinary(lhs, rhs, out, count, fn);
    return Status::success();
  };
  OpCode op = ctx.call.inst.op;
  if constexpr (Traits::isFloat) {
    if (visitFloatBinary<C>(
            op, [&](auto fn) { mapBinary(lhs, rhs, out, count, fn); }))
      return Status::success();
  } else if constexpr (Traits::isInteger) {
    switch (op) {
    case OpCode::Add:
      return map([](C a, C b) { return wrappingAdd(a, b); });
    case OpCode::Sub:
      return map([](C a, C b) { return wrapSub(a, b); });
    case OpCode::Mul:
      return map([](C a, C b) { return wrapMul(a, b); });
    case OpCode::Div:
      return map([](C a, C b) { return integerDivide(a, b); });
    case OpCode::Rem:
      return map([](C a, C b) { return integerRemainder(a, b); });
    case OpCode::Max:
      return map([](C a, C b) { return std::max(a, b); });
    case OpCode::Min:
      return map([](C a, C b) { return std::min(a, b); });
    case OpCode::And:
      return map([](C a, C b) { return C(a & b); });
    case OpCode::Or:
      return map([](C a, C b) { return C(a | b); });
    case OpCode::Xor:
      return map([](C a, C b) { return C(a ^ b); });
    case OpCode::ShiftLeft:
    case OpCode::ShiftRightLogical:
    case OpCode::ShiftRightArithmetic:
      return map([op](C a, C b) { return integerShift(op, a, b); });
    default:
      break;
    }
  } else {
    switch (op) {
    case OpCode::Max:
    case OpCode::Or:
      return map([](C a, C b) { return a || b; });
    case OpCode::Min:
    case OpCode::And:
      return map([](C a, C b) { return a && b; });
    case OpCode::Xor:
      return map([](C a, C b) { return a != b; });
    default:
      break;
    }
  }
  return ctx.unsupported(ctx.operandType(0).dtype);
}

/// Checks that every operand and the result have the type of operand 0.
Status checkSameTypes(const KernelContext &ctx, size_t firstOperand) {
  const TensorType &reference = ctx.operandType(firstOperand);
  for (size_t i = firstOperand; i < ctx.numOperands(); ++i)
    if (ctx.operandType(i).dtype != reference.dtype ||
        ctx.operandType(i).shape != reference.shape)
      return ctx.error("operands have different types: " + describe(reference) +
                       " and " + describe(ctx.operandType(i)));
  if (ctx.resultType(0).dtype != reference.dtype ||
      ctx.resultType(0).shape != reference.shape)
    return ctx.error("result " + describe(ctx.resultType(0)) +
                     " does not match operand " + describe(reference));
  return Status::success();
}

/// Float to integer: truncate toward zero, saturate, NaN to 0.
template <typename Int> Int saturatingFloatToInt(double value) {
  if (value != value)
    return 0;
  double truncated = std::trunc(value);
  if (truncated <= static_cast<double>(std::numeric_limits<Int>::min()))
    return std::numeric_limits<Int>::min();
  if (truncated >= static_cast<double>(std::numeric_limits<Int>::max()) + 1.0)
    return std::numeric_limits<Int>::max();
  return static_cast<Int>(truncated);
}

/// Double to float rounding to odd, so that a second rounding to a narrower
/// format (bf16, f16) gives the correctly rounded result.
float roundToOddFloat(double value) {
  float rounded = static_cast<float>(value);
  if (value != value || static_cast<double>(rounded) == value)
    return rounded;
  if (std::fabs(static_cast<double>(rounded)) > std::fabs(value))
    rounded = std::nextafter(rounded, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof(bits));
  bits |= 1u;
  std::memcpy(&rounded, &bits, sizeof(bits));
  return rounded;
}

template <typename To, typename From> To convertElement(From value) {
  using FromTraits = ElementTraits<From>;
  using ToTraits = ElementTraits<To>;
  auto widened = FromTraits::load(value);
  using Widened = decltype(widened);
  if constexpr (ToTraits::isBool) {
    return ToTraits::store(widened != Widened(0));
  } else if constexpr (ToTraits::isInteger) {
    if constexpr (FromTraits::isFloat)
      return saturatingFloatToInt<To>(static_cast<double>(widened));
    else
      return static_cast<To>(widened);
  } else if constexpr (std::is_same<To, BF16>::value ||
                       std::is_same<To, F16>::value) {
    // Through float; wider sources round to odd first (no double rounding).
    if constexpr (std::is_same<Widened, float>::value ||
                  std::is_same<Widened, bool>::value)
      return ToTraits::store(static_cast<float>(widened));
    else
      return ToTraits::store(roundToOddFloat(static_cast<double>(widened)));
  } else {
    return static_cast<To>(widened);
  }
}

} // namespace

bool convertElements(DType from, const void *src, DType to, void *dst,
                     int64_t count) {
  if (from == to) {
    if (src != dst && count > 0)
      std::memmove(dst, src, count * dtypeSize(from));
    return true;
  }
  if (from == DType::Bool && to == DType::F32) { // Masks and one-hots.
    const auto *in = static_cast<const uint8_t *>(src);
    auto *out = static_cast<float *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[i] != 0 ? 1.0f : 0.0f;
    return true;
  }
  Status status = visitDType(from, [&](auto fromTag) {
    using From = decltype(fromTag);
    return visitDType(to, [&](auto toTag) {
      using To = decltype(toTag);
      const From *in = static_cast<const From *>(src);
      To *out = static_cast<To *>(dst);
      for (int64_t i = 0; i < count; ++i)
        out[i] = convertElement<To>(in[i]);
      return Status::success();
    });
  });
  return status.ok();
}

Status runElementwiseUnary(const KernelContext &ctx) {
  if (Status s = checkSameTypes(ctx, 0); !s)
    return s;
  int64_t count = ctx.operandType(0).numElements();
  return visitDType(ctx.operandType(0).dtype, [&](auto tag) {
    return unaryKernel<decltype(tag)>(ctx, count);
  });
}

Status runElementwiseBinary(const KernelContext &ctx) {
  if (Status s = checkSameTypes(ctx, 0); !s)
    return s;
  int64_t count = ctx.operandType(0).numElements();
  return visitDType(ctx.operandType(0).dtype, [&](auto tag) {
    return binaryKernel<decltype(tag)>(ctx, count);
  });
}

Status runCompare(const KernelContext &ctx) {
  const TensorType &lhsType = ctx.operandType(0);
  if (ctx.operandType(1).dtype != lhsType.dtype ||
      ctx.operandType(1).shape != lhsType.shape)
    return ctx.error("operands have different types: " + describe(lhsType) +
                     " and " + describe(ctx.operandType(1)));
  if (ctx.resultType(0).dtype != DType::Bool ||
      ctx.resultType(0).shape != lhsType.shape)
    return ctx.error("result must be bool" + formatShape(lhsType.shape) +
                     ", got " + describe(ctx.resultType(0)));
  if (ctx.ints().size() != 1 || ctx.ints()[0] < 0 ||
      ctx.ints()[0] > static_cast<int64_t>(CompareCode::GE))
    return ctx.error("expects ints = {direction} with a valid CompareCode");
  auto direction = static_cast<CompareCode>(ctx.ints()[0]);
  int64_t count = lhsType.numElements();
  return visitDType(lhsType.dtype, [&](auto tag) {
    using Storage = decltype(tag);
    using Traits = ElementTraits<Storage>;
    const Storage *lhs = ctx.operand<Storage>(0);
    const Storage *rhs = ctx.operand<Storage>(1);
    uint8_t *out = ctx.result<uint8_t>(0);
    auto map = [&](auto predicate) {
      for (int64_t i = 0; i < count; ++i)
        out[i] = predicate(Traits::load(lhs[i]), Traits::load(rhs[i]));
    };
    switch (direction) {
    case CompareCode::EQ:
      map([](auto a, auto b) { return a == b; });
      break;
    case CompareCode::NE:
      map([](auto a, auto b) { return a != b; });
      break;
    case CompareCode::LT:
      map([](auto a, auto b) { return a < b; });
      break;
    case CompareCode::LE:
      map([](auto a, auto b) { return a <= b; });
      break;
    case CompareCode::GT:
      map([](auto a, auto b) { return a > b; });
      break;
    case CompareCode::GE:
      map([](auto a, auto b) { return a >= b; });
      break;
    }
    return Status::success();
  });
}

namespace {
template <typename Word>
void selectWords(const uint8_t *pred, const void *onTrue, const void *onFalse,
                 void *out, int64_t count) {
  const Word *t = static_cast<const Word *>(onTrue);
  const Word *f = static_cast<const Word *>(onFalse);
  Word *o = static_cast<Word *>(out);
  for (int64_t i = 0; i < count; ++i)
    o[i] = pred[i] ? t[i] : f[i];
}
} // namespace

Status runSelect(const KernelContext &ctx) {
  const TensorType &predType = ctx.operandType(0);
  if (predType.dtype != DType::Bool)
    return ctx.error("predicate must be bool, got " + describe(predType));
  if (Status s = checkSameTypes(ctx, 1); !s)
    return s;
  if (predType.shape != ctx.operandType(1).shape)
    return ctx.error("predicate " + describe(predType) +
                     " does not match values " + describe(ctx.operandType(1)));
  int64_t count = predType.numElements();
  const uint8_t *pred = ctx.operand<uint8_t>(0);
  switch (dtypeSize(ctx.operandType(1).dtype)) {
  case 1:
    selectWords<uint8_t>(pred, ctx.operand(1), ctx.operand(2), ctx.result(0),
                         count);
    break;
  case 2:
    selectWords<uint16_t>(pred, ctx.operand(1), ctx.operand(2), ctx.result(0),
                          count);
    break;
  case 4:
    selectWords<uint32_t>(pred, ctx.operand(1), ctx.operand(2), ctx.result(0),
                          count);
    break;
  default:
    selectWords<uint64_t>(pred, ctx.operand(1), ctx.operand(2), ctx.result(0),
                          count);
    break;
  }
  return Status::success();
}

Status runConvert(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (in.shape != out.shape)
    return ctx.error("operand " + describe(in) + " and result " +
                     describe(out) + " differ in shape");
  if (!convertElements(in.dtype, ctx.operand(0), out.dtype, ctx.result(0),
                       in.numElements()))
    return ctx.error(std::string("cannot convert ") + dtypeName(in.dtype) +
                     " to " + dtypeName(out.dtype));
  return Status::success();
}

} // namespace cpu
} // namespace partita
