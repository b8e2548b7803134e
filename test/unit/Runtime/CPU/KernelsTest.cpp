//===- KernelsTest.cpp - CPU kernels: elementwise and friends -------------===//
//
// Every elementwise op, compare, select, convert, iota, constant and
// optimization_barrier, against naive reference loops written here (in
// double, from the widened inputs), for f32, bf16 and f64 and the integer
// and bool types where the op is defined; the rounding helpers and the
// references are first checked on hand-computed cases. Tolerances: see
// toleranceFor (f32 1e-5 relative, bf16 one bf16 ulp = 2^-7 relative).
// Also: the errors (each names the op) for bad dtypes, shapes, attributes.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cstring>
#include <functional>
#include <limits>

using namespace partita;
using namespace partita::kernel_test;

namespace {

const std::vector<std::vector<int64_t>> elementwiseShapes = {
    {}, {1}, {3, 1, 4}, {37}};
const std::vector<DType> floatTypes = {DType::F32, DType::BF16, DType::F64};
const double NaN = std::numeric_limits<double>::quiet_NaN();
const double inf = std::numeric_limits<double>::infinity();

} // namespace

TEST_CASE("bf16 and f16 rounding: nearest even, NaN kept", "[kernels]") {
  CHECK(floatToBFloat16(1.0f) == 0x3f80);
  CHECK(floatToBFloat16(-2.0f) == 0xc000);
  CHECK(floatToBFloat16(1.0f + 1.0f / 256) == 0x3f80); // Tie to even.
  CHECK(floatToBFloat16(1.0f + 3.0f / 256) == 0x3f82); // Tie to even (up).
  CHECK(floatToBFloat16(1.0f + 1.0f / 256 + 1.0f / 65536) == 0x3f81);
  CHECK(floatToBFloat16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(floatToBFloat16(3.4e38f) == 0x7f80); // Overflow rounds to infinity.
  uint16_t bfNaN = floatToBFloat16(-std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bfloat16ToFloat(bfNaN)));
  CHECK((bfNaN & 0x8000) != 0);
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00);
  CHECK(floatToHalf(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(floatToHalf(std::ldexp(1.0f, -25)) == 0x0000); // Tie to even zero.
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  CHECK(floatToHalf(-0.0f) == 0x8000);
}

TEST_CASE("op code names and tensor sizes", "[kernels]") {
  CHECK(std::string(opCodeName(OpCode::Einsum)) == "einsum");
  CHECK(std::string(opCodeName(OpCode::TopK)) == "top_k");
  CHECK(std::string(opCodeName(OpCode::OptimizationBarrier)) ==
        "optimization_barrier");
  TensorType type{DType::BF16, {2, 3}};
  CHECK(type.numElements() == 6);
  CHECK(type.bytes() == 12);
  CHECK(TensorType{DType::F32, {}}.numElements() == 1);
  CHECK(TensorType{DType::F32, {4, 0}}.bytes() == 0);
}

TEST_CASE("test helpers: index arithmetic and rounding store", "[kernels]") {
  CHECK(unflatten(5, {2, 3}) == std::vector<int64_t>{1, 2});
  CHECK(flatten({1, 0, 2}, {2, 2, 3}) == 8);
  CHECK(unflatten(0, {}).empty());
  Buffer b = bufferOf(DType::BF16, {2}, {1.0 + 1.0 / 256, 3.0});
  CHECK(b.get(0) == 1.0);
  CHECK(b.get(1) == 3.0);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

namespace {
struct UnaryCase {
  OpCode op;
  std::function<double(double)> reference;
  double lo, hi;
};
} // namespace

TEST_CASE("unary float ops match the reference", "[kernels]") {
  std::vector<UnaryCase> cases = {
      {OpCode::Neg, [](double x) { return -x; }, -3, 3},
      {OpCode::Abs, [](double x) { return std::fabs(x); }, -3, 3},
      {OpCode::Sign,
       [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3},
      {OpCode::Exp, [](double x) { return std::exp(x); }, -3, 3},
      {OpCode::Log, [](double x) { return std::log(x); }, 0.1, 5},
      {OpCode::Log1p, [](double x) { return std::log1p(x); }, -0.5, 3},
      {OpCode::Tanh, [](double x) { return std::tanh(x); }, -3, 3},
      {OpCode::Logistic, [](double x) { return 1 / (1 + std::exp(-x)); }, -5,
       5},
      {OpCode::Sqrt, [](double x) { return std::sqrt(x); }, 0, 9},
      {OpCode::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1, 9},
      {OpCode::Erf, [](double x) { return std::erf(x); }, -2, 2},
      {OpCode::Sin, [](double x) { return std::sin(x); }, -4, 4},
      {OpCode::Cos, [](double x) { return std::cos(x); }, -4, 4},
      {OpCode::Floor, [](double x) { return std::floor(x); }, -4, 4},
  };
  std::mt19937 rng(1);
  for (const UnaryCase &c : cases)
    for (DType dtype : floatTypes)
      for (const auto &shape : elementwiseShapes) {
        Buffer x = randomBuffer(dtype, shape, rng, c.lo, c.hi);
        Buffer y = runOne(c.op, {}, {&x}, dtype, shape);
        std::vector<double> expected;
        for (int64_t i = 0; i < x.size(); ++i)
          expected.push_back(c.reference(x.get(i)));
        Tolerance tol = toleranceFor(dtype);
        checkClose(y, expected, tol.absolute, tol.relative,
                   std::string(opCodeName(c.op)) + " " + dtypeName(dtype));
      }
}

TEST_CASE("f32 exp, tanh and logistic are within a few ulps", "[kernels]") {
  // The runtime computes them without libm calls so that their loops
  // vectorize (ElementwiseMath.h): every f32 result over a dense sweep is
  // within 2 ulps of the double-precision value rounded to f32 (exp's
  // results below 2^-126 are 0), and special values are IEEE's.
  auto ulps = [](float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(static_cast<int64_t>(ia) - ib);
  };
  struct Sweep {
    OpCode op;
    double lo, hi;
    std::function<double(double)> reference;
    int64_t allowed;
  };
  std::vector<Sweep> sweeps = {
      {OpCode::Exp, -87.3, 88.7, [](double x) { return std::exp(x); }, 2},
      {OpCode::Tanh, -12, 12, [](double x) { return std::tanh(x); }, 2},
      {OpCode::Tanh, -1e-3, 1e-3, [](double x) { return std::tanh(x); }, 2},
      {OpCode::Logistic, -80, 80,
       [](double x) { return 1 / (1 + std::exp(-x)); }, 4}};
  for (const Sweep &sweep : sweeps) {
    constexpr int64_t n = 200001;
    std::vector<double> xs;
    for (int64_t i = 0; i < n; ++i)
      xs.push_back(sweep.lo + (sweep.hi - sweep.lo) * i / (n - 1));
    Buffer x = bufferOf(DType::F32, {n}, xs);
    Buffer y = runOne(sweep.op, {}, {&x}, DType::F32, {n});
    int64_t worst = 0;
    double at = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = static_cast<float>(sweep.reference(x.get(i)));
      int64_t u = ulps(static_cast<float>(y.get(i)), want);
      if (u > worst) {
        worst = u;
        at = x.get(i);
      }
    }
    INFO(opCodeName(sweep.op) << " worst " << worst << " ulps at " << at);
    CHECK(worst <= sweep.allowed);
  }
  Buffer special =
      bufferOf(DType::F32, {7}, {NaN, inf, -inf, -0.0, 100, -100, 1e-30});
  checkEqual(runOne(OpCode::Exp, {}, {&special}, DType::F32, {7}),
             {NaN, inf, 0, 1, inf, 0, 1});
  Buffer tanh = runOne(OpCode::Tanh, {}, {&special}, DType::F32, {7});
  checkEqual(tanh, {NaN, 1, -1, -0.0, 1, -1, 1e-30f});
  CHECK(std::signbit(tanh.get(3)));
}

TEST_CASE("unary ops on special values", "[kernels]") {
  Buffer x = bufferOf(DType::F32, {4}, {NaN, -0.0, inf, -inf});
  checkEqual(runOne(OpCode::Sign, {}, {&x}, DType::F32, {4}), {NaN, 0, 1, -1});
  checkEqual(runOne(OpCode::Abs, {}, {&x}, DType::F32, {4}),
             {NaN, 0, inf, inf});
  Buffer b = bufferOf(DType::BF16, {2}, {NaN, -1.5});
  checkEqual(runOne(OpCode::Neg, {}, {&b}, DType::BF16, {2}), {NaN, 1.5});
}

TEST_CASE("unary integer and bool ops", "[kernels]") {
  std::mt19937 rng(2);
  for (DType dtype : {DType::I32, DType::I64, DType::I8})
    for (const auto &shape : elementwiseShapes) {
      Buffer x = randomBuffer(dtype, shape, rng, -100, 100);
      std::vector<double> neg, abs, sign, bitNot;
      for (int64_t i = 0; i < x.size(); ++i) {
        int64_t v = x.getInt(i);
        neg.push_back(double(-v));
        abs.push_back(double(v < 0 ? -v : v));
        sign.push_back(v > 0 ? 1 : (v < 0 ? -1 : 0));
        bitNot.push_back(double(~v));
      }
      checkEqual(runOne(OpCode::Neg, {}, {&x}, dtype, shape), neg);
      checkEqual(runOne(OpCode::Abs, {}, {&x}, dtype, shape), abs);
      checkEqual(runOne(OpCode::Sign, {}, {&x}, dtype, shape), sign);
      checkEqual(runOne(OpCode::Not, {}, {&x}, dtype, shape), bitNot);
    }
  Buffer minimum(DType::I32, {1});
  minimum.setInt(0, std::numeric_limits<int32_t>::min());
  CHECK(runOne(OpCode::Neg, {}, {&minimum}, DType::I32, {1}).getInt(0) ==
        std::numeric_limits<int32_t>::min()); // Wraps, no UB.
  Buffer flags = bufferOf(DType::Bool, {3}, {1, 0, 1});
  checkEqual(runOne(OpCode::Not, {}, {&flags}, DType::Bool, {3}), {0, 1, 0});
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

namespace {
struct BinaryCase {
  OpCode op;
  std::function<double(double, double)> reference;
  double lhsLo, lhsHi, rhsLo, rhsHi;
};
} // namespace

TEST_CASE("binary float ops match the reference", "[kernels]") {
  std::vector<BinaryCase> cases = {
      {OpCode::Add, [](double a, double b) { return a + b; }, -3, 3, -3, 3},
      {OpCode::Sub, [](double a, double b) { return a - b; }, -3, 3, -3, 3},
      {OpCode::Mul, [](double a, double b) { return a * b; }, -3, 3, -3, 3},
      {OpCode::Div, [](double a, double b) { return a / b; }, -3, 3, 0.5, 3},
      {OpCode::Rem, [](double a, double b) { return std::fmod(a, b); }, -9, 9,
       0.7, 3},
      {OpCode::Max, [](double a, double b) { return std::max(a, b); }, -3, 3,
       -3, 3},
      {OpCode::Min, [](double a, double b) { return std::min(a, b); }, -3, 3,
       -3, 3},
      {OpCode::Pow, [](double a, double b) { return std::pow(a, b); }, 0.2, 3,
       -2, 2},
  };
  std::mt19937 rng(3);
  for (const BinaryCase &c : cases)
    for (DType dtype : floatTypes)
      for (const auto &shape : elementwiseShapes) {
        Buffer x = randomBuffer(dtype, shape, rng, c.lhsLo, c.lhsHi);
        Buffer y = randomBuffer(dtype, shape, rng, c.rhsLo, c.rhsHi);
        Buffer z = runOne(c.op, {}, {&x, &y}, dtype, shape);
        std::vector<double> expected;
        for (int64_t i = 0; i < x.size(); ++i)
          expected.push_back(c.reference(x.get(i), y.get(i)));
        Tolerance tol = toleranceFor(dtype);
        // rem of bf16 inputs is exact in f32 but cancels: absolute slack.
        double absolute =
            c.op == OpCode::Rem && dtype == DType::BF16 ? 0.02 : tol.absolute;
        checkClose(z, expected, absolute, tol.relative,
                   std::string(opCodeName(c.op)) + " " + dtypeName(dtype));
      }
}

TEST_CASE("max and min propagate NaN", "[kernels]") {
  for (DType dtype : floatTypes) {
    Buffer x = bufferOf(dtype, {3}, {NaN, 1, 2});
    Buffer y = bufferOf(dtype, {3}, {1, NaN, 3});
    checkEqual(runOne(OpCode::Max, {}, {&x, &y}, dtype, {3}), {NaN, NaN, 3});
    checkEqual(runOne(OpCode::Min, {}, {&x, &y}, dtype, {3}), {NaN, NaN, 2});
  }
}

TEST_CASE("binary integer ops, including division by zero", "[kernels]") {
  auto divide = [](int64_t a, int64_t b) -> int64_t { return b ? a / b : -1; };
  auto remainder = [](int64_t a, int64_t b) -> int64_t {
    return b ? a % b : a;
  };
  std::mt19937 rng(4);
  for (DType dtype : {DType::I32, DType::I64, DType::I8})
    for (const auto &shape : elementwiseShapes) {
      Buffer x = randomBuffer(dtype, shape, rng, -11, 11);
      Buffer y = randomBuffer(dtype, shape, rng, -3, 3); // Includes zeros.
      std::vector<std::pair<OpCode, std::function<int64_t(int64_t, int64_t)>>>
          ops = {{OpCode::Add, [](int64_t a, int64_t b) { return a + b; }},
                 {OpCode::Sub, [](int64_t a, int64_t b) { return a - b; }},
                 {OpCode::Mul, [](int64_t a, int64_t b) { return a * b; }},
                 {OpCode::Div, divide},
                 {OpCode::Rem, remainder},
                 {OpCode::Max,
                  [](int64_t a, int64_t b) { return std::max(a, b); }},
                 {OpCode::Min,
                  [](int64_t a, int64_t b) { return std::min(a, b); }},
                 {OpCode::And, [](int64_t a, int64_t b) { return a & b; }},
                 {OpCode::Or, [](int64_t a, int64_t b) { return a | b; }},
                 {OpCode::Xor, [](int64_t a, int64_t b) { return a ^ b; }}};
      for (auto &[op, reference] : ops) {
        std::vector<double> expected;
        for (int64_t i = 0; i < x.size(); ++i)
          expected.push_back(double(reference(x.getInt(i), y.getInt(i))));
        checkEqual(runOne(op, {}, {&x, &y}, dtype, shape), expected,
                   std::string(opCodeName(op)) + " " + dtypeName(dtype));
      }
    }
  Buffer minimum(DType::I32, {2}), minusOne(DType::I32, {2});
  for (int i = 0; i < 2; ++i) {
    minimum.setInt(i, std::numeric_limits<int32_t>::min());
    minusOne.setInt(i, -1);
  }
  CHECK(runOne(OpCode::Div, {}, {&minimum, &minusOne}, DType::I32, {2})
            .getInt(0) == std::numeric_limits<int32_t>::min());
  CHECK(runOne(OpCode::Rem, {}, {&minimum, &minusOne}, DType::I32, {2})
            .getInt(0) == 0);
}

TEST_CASE("shifts read the amount as unsigned and saturate at the width",
          "[kernels]") {
  // i8: 0b1001'0110 (-106) by 0, 1, 7, 8 (the width), 200 (past it as
  // unsigned) and -1 (255 unsigned).
  Buffer x = bufferOf(DType::I8, {6}, {-106, -106, -106, -106, -106, -106});
  Buffer by = bufferOf(DType::I8, {6}, {0, 1, 7, 8, -56, -1});
  checkEqual(runOne(OpCode::ShiftLeft, {}, {&x, &by}, DType::I8, {6}),
             {-106, 44, 0, 0, 0, 0});
  checkEqual(runOne(OpCode::ShiftRightLogical, {}, {&x, &by}, DType::I8, {6}),
             {-106, 75, 1, 0, 0, 0});
  checkEqual(
      runOne(OpCode::ShiftRightArithmetic, {}, {&x, &by}, DType::I8, {6}),
      {-106, -53, -1, -1, -1, -1});
  // i32 and i64, the widths threefry uses: a logical shift fills with
  // zeros whatever the sign.
  Buffer w = bufferOf(DType::I32, {3}, {-1, 0x12345678, -2147483647 - 1});
  Buffer s = bufferOf(DType::I32, {3}, {9, 13, 31});
  checkEqual(runOne(OpCode::ShiftRightLogical, {}, {&w, &s}, DType::I32, {3}),
             {8388607, 0x91A2, 1});
  checkEqual(runOne(OpCode::ShiftLeft, {}, {&w, &s}, DType::I32, {3}),
             {-512, double(int32_t(uint32_t(0x12345678u) << 13)), 0});
  Buffer l = bufferOf(DType::I64, {2}, {-1, 1});
  Buffer t = bufferOf(DType::I64, {2}, {32, 63});
  checkEqual(runOne(OpCode::ShiftRightLogical, {}, {&l, &t}, DType::I64, {2}),
             {4294967295.0, 0});
  checkEqual(
      runOne(OpCode::ShiftRightArithmetic, {}, {&l, &t}, DType::I64, {2}),
      {-1, 0});
}

TEST_CASE("bitcast_convert keeps the bits", "[kernels]") {
  // 0x3F800000 is 1.0f; 0x3F800000 | (bits >> 9) - 1 is how jax.random
  // makes a uniform float.
  Buffer bits =
      bufferOf(DType::I32, {3}, {0x3F800000, 0x3FC00000, -1082130432});
  checkEqual(runOne(OpCode::BitcastConvert, {}, {&bits}, DType::F32, {3}),
             {1.0, 1.5, -1.0});
  Buffer half = bufferOf(DType::I16, {1}, {0x3C00});
  checkEqual(runOne(OpCode::BitcastConvert, {}, {&half}, DType::F16, {1}),
             {1.0});
  // Element sizes must agree.
  Buffer wide = bufferOf(DType::I64, {1}, {0});
  std::vector<Buffer> narrow{Buffer(DType::F32, {1})};
  CHECK_FALSE(runOp(OpCode::BitcastConvert, {}, {&wide}, narrow, "").ok());
}

TEST_CASE("logical ops on bool", "[kernels]") {
  Buffer x = bufferOf(DType::Bool, {4}, {0, 0, 1, 1});
  Buffer y = bufferOf(DType::Bool, {4}, {0, 1, 0, 1});
  checkEqual(runOne(OpCode::And, {}, {&x, &y}, DType::Bool, {4}), {0, 0, 0, 1});
  checkEqual(runOne(OpCode::Or, {}, {&x, &y}, DType::Bool, {4}), {0, 1, 1, 1});
  checkEqual(runOne(OpCode::Xor, {}, {&x, &y}, DType::Bool, {4}), {0, 1, 1, 0});
  checkEqual(runOne(OpCode::Max, {}, {&x, &y}, DType::Bool, {4}), {0, 1, 1, 1});
  checkEqual(runOne(OpCode::Min, {}, {&x, &y}, DType::Bool, {4}), {0, 0, 0, 1});
}

//===----------------------------------------------------------------------===//
// compare, select
//===----------------------------------------------------------------------===//

TEST_CASE("compare in every direction; NaN compares false except ne",
          "[kernels]") {
  std::vector<std::function<bool(double, double)>> references = {
      [](double a, double b) { return a == b; },
      [](double a, double b) { return a != b; },
      [](double a, double b) { return a < b; },
      [](double a, double b) { return a <= b; },
      [](double a, double b) { return a > b; },
      [](double a, double b) { return a >= b; }};
  std::mt19937 rng(5);
  for (DType dtype :
       {DType::F32, DType::BF16, DType::F64, DType::I32, DType::Bool})
    for (const auto &shape : elementwiseShapes) {
      // Small integers so that ties occur; NaN sprinkled into floats.
      Buffer x = randomBuffer(DType::I32, shape, rng, -2, 2);
      Buffer y = randomBuffer(DType::I32, shape, rng, -2, 2);
      Buffer xs(dtype, shape), ys(dtype, shape);
      for (int64_t i = 0; i < x.size(); ++i) {
        bool poison = isFloatType(dtype) && i % 5 == 3;
        xs.set(i, poison ? NaN : x.get(i));
        ys.set(i, i % 7 == 6 && isFloatType(dtype) ? NaN : y.get(i));
      }
      for (int direction = 0; direction < 6; ++direction) {
        std::vector<double> expected;
        for (int64_t i = 0; i < x.size(); ++i)
          expected.push_back(references[direction](xs.get(i), ys.get(i)));
        checkEqual(runOne(OpCode::Compare, {direction}, {&xs, &ys}, DType::Bool,
                          shape),
                   expected, "compare " + std::to_string(direction));
      }
    }
}

TEST_CASE("select picks per element", "[kernels]") {
  std::mt19937 rng(6);
  for (DType dtype : {DType::F32, DType::BF16, DType::F64, DType::I64,
                      DType::I8, DType::Bool})
    for (const auto &shape : elementwiseShapes) {
      Buffer pred = randomBuffer(DType::Bool, shape, rng);
      Buffer a = randomBuffer(dtype, shape, rng, -5, 5);
      Buffer b = randomBuffer(dtype, shape, rng, -5, 5);
      std::vector<double> expected;
      for (int64_t i = 0; i < a.size(); ++i)
        expected.push_back(pred.get(i) ? a.get(i) : b.get(i));
      checkEqual(runOne(OpCode::Select, {}, {&pred, &a, &b}, dtype, shape),
                 expected);
    }
}

//===----------------------------------------------------------------------===//
// convert
//===----------------------------------------------------------------------===//

namespace {
/// The reference conversion of one widened value to `to`.
double referenceConvert(double value, DType to) {
  if (to == DType::Bool)
    return value != 0;
  if (isFloatType(to)) {
    Buffer one(to, {});
    one.set(0, value); // Rounds through float (checked above).
    return one.get(0);
  }
  if (std::isnan(value))
    return 0;
  double lo, hi;
  switch (to) {
  case DType::I64:
    lo = -9223372036854775808.0;
    hi = 9223372036854775807.0;
    break;
  case DType::I32:
    lo = -2147483648.0;
    hi = 2147483647.0;
    break;
  case DType::I16:
    lo = -32768;
    hi = 32767;
    break;
  case DType::I8:
    lo = -128;
    hi = 127;
    break;
  default:
    lo = 0;
    hi = 255;
    break;
  }
  return std::min(std::max(std::trunc(value), lo), hi);
}
} // namespace

TEST_CASE("convert between all element types", "[kernels]") {
  std::mt19937 rng(7);
  std::vector<DType> all = {DType::F64, DType::F32, DType::F16, DType::BF16,
                            DType::I64, DType::I32, DType::I16, DType::I8,
                            DType::U8,  DType::Bool};
  for (DType from : all)
    for (DType to : all) {
      Buffer x = isFloatType(from) ? randomBuffer(from, {3, 7}, rng, -300, 300)
                                   : randomBuffer(from, {3, 7}, rng, 0, 100);
      std::vector<double> expected;
      for (int64_t i = 0; i < x.size(); ++i)
        expected.push_back(referenceConvert(x.get(i), to));
      // Through-f32 rounding of f64 may differ from the direct rounding in
      // the reference by one ulp of the narrow type in rare double-rounding
      // cases; the kernel rounds correctly, the reference may not.
      double relative =
          from == DType::F64 && (to == DType::BF16 || to == DType::F16)
              ? 1.0 / 128
              : 0;
      checkClose(runOne(OpCode::Convert, {}, {&x}, to, {3, 7}), expected, 0,
                 relative, std::string(dtypeName(from)) + "->" + dtypeName(to));
    }
}

TEST_CASE("convert: truncation, saturation, NaN, rounding", "[kernels]") {
  Buffer x =
      bufferOf(DType::F32, {8}, {1e10, -1e10, -2.7, 2.7, NaN, inf, -inf, 0.5});
  double maxI32 = std::numeric_limits<int32_t>::max();
  double minI32 = std::numeric_limits<int32_t>::min();
  checkEqual(runOne(OpCode::Convert, {}, {&x}, DType::I32, {8}),
             {maxI32, minI32, -2, 2, 0, maxI32, minI32, 0});
  checkEqual(runOne(OpCode::Convert, {}, {&x}, DType::I8, {8}),
             {127, -128, -2, 2, 0, 127, -128, 0});
  checkEqual(runOne(OpCode::Convert, {}, {&x}, DType::U8, {8}),
             {255, 0, 0, 2, 0, 255, 0, 0});
  checkEqual(runOne(OpCode::Convert, {}, {&x}, DType::Bool, {8}),
             {1, 1, 1, 1, 1, 1, 1, 1});
  // f64 -> bf16 must not double-round through f32: 1 + 2^-8 + 2^-30 is just
  // above the tie between 1 and 1 + 2^-7.
  Buffer precise =
      bufferOf(DType::F64, {1}, {1.0 + 1.0 / 256 + std::ldexp(1.0, -30)});
  CHECK(runOne(OpCode::Convert, {}, {&precise}, DType::BF16, {1}).get(0) ==
        1.0 + 1.0 / 128);
  // Integers round to nearest even.
  Buffer ints = bufferOf(DType::I32, {3}, {257, 259, 16777217});
  checkEqual(runOne(OpCode::Convert, {}, {&ints}, DType::BF16, {3}),
             {256, 260, 16777216});
  checkEqual(runOne(OpCode::Convert, {}, {&ints}, DType::F32, {3}),
             {257, 259, 16777216});
  Buffer zeros = bufferOf(DType::F32, {2}, {-0.0, 0.0});
  checkEqual(runOne(OpCode::Convert, {}, {&zeros}, DType::Bool, {2}), {0, 0});
}

//===----------------------------------------------------------------------===//
// iota, constant, reshape, optimization_barrier
//===----------------------------------------------------------------------===//

TEST_CASE("iota along each dimension", "[kernels]") {
  std::vector<int64_t> shape = {2, 3, 4};
  for (DType dtype : {DType::F32, DType::BF16, DType::I32, DType::I64})
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<double> expected;
      for (int64_t i = 0; i < countOf(shape); ++i)
        expected.push_back(double(unflatten(i, shape)[dim]));
      checkEqual(runOne(OpCode::Iota, {dim}, {}, dtype, shape), expected);
    }
  checkEqual(runOne(OpCode::Iota, {0}, {}, DType::I32, {1}), {0});
}

TEST_CASE("constant copies from the pool", "[kernels]") {
  std::vector<HostArray> pool = {
      HostArray::fromValues<float>(DType::F32, {2}, {1.5f, -2.0f})};
  std::vector<Buffer> results{Buffer(DType::F32, {2})};
  REQUIRE(runOp(OpCode::Constant, {0}, {}, results, "", &pool).ok());
  checkEqual(results[0], {1.5, -2.0});
  Status outOfRange = runOp(OpCode::Constant, {1}, {}, results, "", &pool);
  CHECK(outOfRange.message().find("constant: constant pool index 1") == 0);
  std::vector<Buffer> wrong{Buffer(DType::F32, {3})};
  CHECK(!runOp(OpCode::Constant, {0}, {}, wrong, "", &pool).ok());
}

TEST_CASE("a splat constant writes its one element everywhere",
          "[kernels]") {
  std::vector<HostArray> pool = {
      HostArray::fromValues<float>(DType::F32, {}, {-1e9f}),
      HostArray::fromValues<float>(DType::F32, {2}, {1.0f, 2.0f})};
  std::vector<Buffer> results{Buffer(DType::F32, {2, 3})};
  REQUIRE(runOp(OpCode::Constant, {0, 1}, {}, results, "", &pool).ok());
  checkEqual(results[0], std::vector<double>(6, -1e9));
  // The pool entry must be one element of the result's type.
  Status many = runOp(OpCode::Constant, {1, 1}, {}, results, "", &pool);
  CHECK(many.message().find("splat constant 1 is f32[2], not one element") !=
        std::string::npos);
  std::vector<Buffer> ints{Buffer(DType::I32, {4})};
  CHECK(!runOp(OpCode::Constant, {0, 1}, {}, ints, "", &pool).ok());
  CHECK(!runOp(OpCode::Constant, {0, 2}, {}, results, "", &pool).ok());
  // Every element width: 8, 2 and 1 bytes.
  std::vector<HostArray> widths = {
      HostArray::fromValues<int64_t>(DType::I64, {}, {-7}),
      HostArray::fromValues<int16_t>(DType::I16, {}, {300}),
      HostArray::fromValues<int8_t>(DType::I8, {}, {-5})};
  std::vector<Buffer> wide{Buffer(DType::I64, {5})};
  REQUIRE(runOp(OpCode::Constant, {0, 1}, {}, wide, "", &widths).ok());
  checkEqual(wide[0], std::vector<double>(5, -7));
  std::vector<Buffer> half{Buffer(DType::I16, {3, 3})};
  REQUIRE(runOp(OpCode::Constant, {1, 1}, {}, half, "", &widths).ok());
  checkEqual(half[0], std::vector<double>(9, 300));
  std::vector<Buffer> bytes{Buffer(DType::I8, {7})};
  REQUIRE(runOp(OpCode::Constant, {2, 1}, {}, bytes, "", &widths).ok());
  checkEqual(bytes[0], std::vector<double>(7, -5));
}

TEST_CASE("reshape and optimization_barrier copy bytes", "[kernels]") {
  std::mt19937 rng(8);
  Buffer x = randomBuffer(DType::BF16, {2, 3}, rng);
  Buffer r = runOne(OpCode::Reshape, {}, {&x}, DType::BF16, {3, 1, 2});
  CHECK(r.bytes == x.bytes);
  Buffer s = randomBuffer(DType::I32, {}, rng, 0, 9);
  std::vector<Buffer> results{Buffer(DType::BF16, {2, 3}),
                              Buffer(DType::I32, {})};
  REQUIRE(runOp(OpCode::OptimizationBarrier, {}, {&x, &s}, results).ok());
  CHECK(results[0].bytes == x.bytes);
  CHECK(results[1].bytes == s.bytes);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {
/// Runs and requires a failure whose message starts with `prefix`.
void expectError(OpCode op, const std::vector<int64_t> &ints,
                 const std::vector<const Buffer *> &operands,
                 std::vector<Buffer> results, const std::string &prefix,
                 const std::string &text = "") {
  Status status = runOp(op, ints, operands, results, text);
  INFO("message: " << status.message());
  REQUIRE(!status.ok());
  CHECK(status.message().rfind(prefix, 0) == 0);
}
} // namespace

TEST_CASE("bad inputs fail with the op's name", "[kernels]") {
  Buffer f = bufferOf(DType::F32, {2}, {1, 2});
  Buffer f3 = bufferOf(DType::F32, {3}, {1, 2, 3});
  Buffer i = bufferOf(DType::I32, {2}, {1, 2});
  Buffer b = bufferOf(DType::Bool, {2}, {1, 0});
  Buffer m = bufferOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectError(OpCode::Exp, {}, {&i}, {Buffer(DType::I32, {2})},
              "exp: unsupported element type i32");
  expectError(OpCode::Not, {}, {&f}, {Buffer(DType::F32, {2})},
              "not: unsupported element type f32");
  expectError(OpCode::Add, {}, {&b, &b}, {Buffer(DType::Bool, {2})},
              "add: unsupported element type bool");
  expectError(OpCode::Add, {}, {&f, &f3}, {Buffer(DType::F32, {2})},
              "add: operands have different types");
  expectError(OpCode::Add, {}, {&f}, {Buffer(DType::F32, {2})},
              "add: expects 2 operand(s)");
  expectError(OpCode::Compare, {0}, {&f, &f}, {Buffer(DType::F32, {2})},
              "compare: result must be bool");
  expectError(OpCode::Compare, {9}, {&f, &f}, {Buffer(DType::Bool, {2})},
              "compare: expects ints = {direction}");
  expectError(OpCode::Select, {}, {&f, &f, &f}, {Buffer(DType::F32, {2})},
              "select: predicate must be bool");
  expectError(OpCode::Transpose, {0, 0}, {&m}, {Buffer(DType::F32, {3, 2})},
              "transpose: perm");
  expectError(OpCode::Slice, {0, 3, 0, 3}, {&f}, {Buffer(DType::F32, {3})},
              "slice: expects ints");
  expectError(OpCode::Slice, {0, 3, 1}, {&f}, {Buffer(DType::F32, {3})},
              "slice: dimension 0");
  expectError(OpCode::Einsum, {}, {&m}, {Buffer(DType::F32, {3, 2})},
              "einsum: spec 'ij' needs exactly one explicit '->'", "ij");
  expectError(OpCode::Einsum, {}, {&m, &m}, {Buffer(DType::F32, {2, 2})},
              "einsum: label 'j' has different sizes", "ij,jk->ik");
  expectError(OpCode::Einsum, {}, {&m}, {Buffer(DType::F32, {2})},
              "einsum: term 'ii' must be distinct letters", "ii->i");
  expectError(OpCode::Einsum, {}, {&m}, {Buffer(DType::F32, {2})},
              "einsum: output term 'k'", "ij->k");
  expectError(OpCode::Einsum, {}, {&m}, {Buffer(DType::BF16, {2, 3})},
              "einsum: result element type bf16", "ij->ij");
  expectError(OpCode::Reduce, {0, 0}, {&b}, {Buffer(DType::Bool, {})},
              "reduce: reduction kind 0 is not defined on bool");
  expectError(OpCode::Reduce, {0, 1}, {&f}, {Buffer(DType::F32, {})},
              "reduce: dims must be distinct");
  expectError(OpCode::Reduce, {3, 0}, {&f}, {Buffer(DType::F32, {})},
              "reduce: reduction kind 3 is not defined on f32");
  expectError(OpCode::TopK, {0, 3}, {&f},
              {Buffer(DType::F32, {3}), Buffer(DType::I32, {3})},
              "top_k: k = 3 must be in [1, 2]");
  expectError(OpCode::Argmax, {0}, {&f}, {Buffer(DType::F32, {})},
              "argmax: index result must be i32 or i64");
  expectError(OpCode::Gather, {}, {&m, &f}, {Buffer(DType::F32, {2, 3})},
              "gather: indices must be i32 or i64");
  expectError(OpCode::DynamicSlice, {1}, {&f, &i}, {Buffer(DType::F32, {1})},
              "dynamic_slice: start index 0 must be a 0-d");
  expectError(OpCode::Broadcast, {0}, {&f3}, {Buffer(DType::F32, {2})},
              "broadcast: operand dimension 0");
  expectError(OpCode::Iota, {1}, {}, {Buffer(DType::F32, {2})},
              "iota: expects ints = {dim}");
  expectError(OpCode::Concatenate, {0}, {&f, &i}, {Buffer(DType::F32, {4})},
              "concatenate: operand 1");
  expectError(OpCode::Constant, {0}, {}, {Buffer(DType::F32, {2})},
              "constant: constant pool index 0 out of range");

  // Structural problems: unknown op code, missing buffers, bad shapes.
  std::vector<Buffer> out{Buffer(DType::F32, {2})};
  expectError(static_cast<OpCode>(999), {}, {&f}, out, "unknown op code 999");
  Instruction inst;
  inst.op = OpCode::Neg;
  std::vector<TensorType> types{TensorType{DType::F32, {2}}};
  std::vector<const void *> noData{nullptr};
  std::vector<void *> resultData{out[0].bytes.data()};
  Status missing = cpu::runKernel(inst, types, noData, types, resultData);
  CHECK(missing.message() == "neg: operand 0 has no buffer");
  std::vector<TensorType> negative{TensorType{DType::F32, {-1}}};
  CHECK(cpu::runKernel(inst, negative, noData, negative, resultData)
            .message()
            .rfind("neg: operand 0: ", 0) == 0);
}
