//===- FusedTest.cpp - The fused elementwise kernel -----------------------===//
//
// The CPU kernel of fused chains against the same chain computed element by
// element with the op-at-a-time math (bit for bit), across tile boundaries
// and with broadcast, scalar and constant references; a head einsum and
// reductions against the unfused kernels (bit for bit, across the head's
// blocks); and the checks that refuse malformed fused instructions.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Program/Fused.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

using namespace partita;

namespace {

FusedRef operand(int64_t index) { return {FusedRefKind::Operand, index}; }
FusedRef step(int64_t index) { return {FusedRefKind::Step, index}; }
FusedRef head() { return {FusedRefKind::Head, 0}; }
FusedRef constant(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return {FusedRefKind::Constant, static_cast<int64_t>(bits)};
}

TensorType f32(std::vector<int64_t> shape) { return {DType::F32, shape}; }

} // namespace

TEST_CASE("fused kernel: the chain's bits, element by element", "[fused]") {
  // x: [rows, cols, inner]; row: [cols] broadcast over the outer and inner
  // dimensions; s: a scalar. Sizes both within one tile and across many;
  // with inner 1 (a bias along the last dimension), a row shorter than a
  // tile (copied a pass at a time) and one longer (read in place).
  struct Shape {
    int64_t rows, cols, inner;
  };
  for (Shape shape : {Shape{1, 7, 5}, Shape{3, 1000, 2}, Shape{40, 100, 1},
                      Shape{2, 3000, 1}}) {
    int64_t rows = shape.rows, cols = shape.cols, inner = shape.inner;
    int64_t count = rows * cols * inner;
    std::mt19937 random(static_cast<unsigned>(count));
    std::uniform_real_distribution<float> uniform(-2, 2);
    std::vector<float> x(count), row(cols), s{1.75f};
    for (float &v : x)
      v = uniform(random);
    for (float &v : row)
      v = uniform(random);

    FusedProgram program;
    program.operands = {{1, count}, {inner, cols}, {1, 1}};
    program.steps = {
        {OpCode::Mul, operand(0), operand(1)},       // 0: x * row
        {OpCode::Add, step(0), constant(0.5f)},      // 1: + 0.5
        {OpCode::Tanh, step(1), step(1)},            // 2: tanh
        {OpCode::Pow, operand(2), constant(2.0f)},   // 3: s^2 (uniform)
        {OpCode::Mul, step(2), step(3)},             // 4: * s^2
        {OpCode::Max, step(4), operand(0)},          // 5: max(., x)
        {OpCode::Div, step(5), operand(2)},          // 6: / s
    };
    program.results = {6, 2};
    Instruction inst;
    inst.op = OpCode::Fused;
    inst.ints = encodeFused(program);
    std::vector<float> out(count), second(count);
    std::vector<TensorType> operandTypes = {f32({rows, cols, inner}),
                                            f32({cols}), f32({})};
    std::vector<TensorType> resultTypes = {f32({rows, cols, inner}),
                                           f32({rows, cols, inner})};
    Status status = cpu::runKernel(
        inst, operandTypes, {x.data(), row.data(), s.data()}, resultTypes,
        {out.data(), second.data()}, nullptr);
    INFO(status.message());
    REQUIRE(status.ok());
    for (int64_t i = 0; i < count; ++i) {
      float b = row[(i / inner) % cols];
      float t2 = std::tanh(x[i] * b + 0.5f);
      float t4 = t2 * std::pow(s[0], 2.0f);
      float t5 = t4 > x[i] ? t4 : x[i];
      // The runtime's tanh is its own (within a few ulps of std::tanh,
      // RuntimeKernelsTest); the chain around it is exact.
      CHECK(out[i] == Approx(t5 / s[0]).epsilon(1e-6).margin(1e-30));
      CHECK(second[i] == Approx(t2).epsilon(1e-6).margin(1e-30));
    }
  }
}

TEST_CASE("fused kernel: a result in place of its operand", "[fused]") {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<float> expected;
  for (float v : x)
    expected.push_back(std::exp(v) - v);
  FusedProgram program;
  program.operands = {{1, 6}};
  program.steps = {{OpCode::Exp, operand(0), operand(0)},
                   {OpCode::Sub, step(0), operand(0)}};
  program.results = {1};
  Instruction inst;
  inst.op = OpCode::Fused;
  inst.ints = encodeFused(program);
  REQUIRE(cpu::runKernel(inst, {f32({6})}, {x.data()}, {f32({6})},
                         {x.data()}, nullptr)
              .ok());
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(x[i] == Approx(expected[i]).epsilon(1e-6));
}

TEST_CASE("fused kernel: malformed programs are errors", "[fused]") {
  std::vector<float> x(8, 1.0f), out(8);
  auto run = [&](std::vector<int64_t> ints, std::vector<TensorType> operands,
                 std::vector<TensorType> results) {
    Instruction inst;
    inst.op = OpCode::Fused;
    inst.ints = std::move(ints);
    std::vector<const void *> in(operands.size(), x.data());
    std::vector<void *> res(results.size(), out.data());
    return cpu::runKernel(inst, operands, in, results, res, nullptr);
  };
  auto good = [] {
    FusedProgram program;
    program.operands = {{1, 8}};
    program.steps = {{OpCode::Neg, operand(0), operand(0)}};
    program.results = {0};
    return encodeFused(program);
  };
  REQUIRE(run(good(), {f32({8})}, {f32({8})}).ok());
  auto fails = [&](std::vector<int64_t> ints, const std::string &why,
                   std::vector<TensorType> operands = {f32({8})},
                   std::vector<TensorType> results = {f32({8})}) {
    Status status = run(std::move(ints), operands, results);
    INFO(status.message());
    CHECK(!status.ok());
    CHECK(status.message().find(why) != std::string::npos);
  };
  std::vector<int64_t> ints = good();
  fails(std::vector<int64_t>(ints.begin(), ints.begin() + 6), "truncated");
  fails({}, "operand count");
  ints = good();
  ints.push_back(0);
  fails(ints, "trailing");
  ints.back() = 1; // one reduction, but nothing after
  fails(ints, "without an element count");
  ints = good();
  ints[4] = static_cast<int64_t>(OpCode::Einsum); // the step's op
  fails(ints, "not a fusible op");
  ints = good();
  ints[5] = static_cast<int64_t>(FusedRefKind::Step); // reads step 0 itself
  fails(ints, "not before it");
  ints = good();
  ints[5] = 7; // an unknown reference kind
  fails(ints, "unknown reference kind");
  ints = good();
  ints[6] = 3; // operand 3 of 1
  fails(ints, "missing operand");
  fails(good(), "does not fit", {f32({4})});
  fails(good(), "f32", {f32({8})}, {{DType::F64, {8}}});
  ints = good();
  ints[ints.size() - 1] = 4; // result names step 4 of 1
  fails(ints, "names no step");
}

namespace {

/// Runs one unfused instruction, requiring success.
void runOne(OpCode op, std::vector<int64_t> ints, std::string text,
            std::vector<TensorType> operandTypes,
            std::vector<const void *> operands,
            std::vector<TensorType> resultTypes, std::vector<void *> results) {
  Instruction inst;
  inst.op = op;
  inst.ints = std::move(ints);
  inst.text = std::move(text);
  Status status = cpu::runKernel(inst, operandTypes, operands, resultTypes,
                                 results, nullptr);
  INFO(status.message());
  REQUIRE(status.ok());
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("fused kernel: a head einsum and reductions, bit for bit",
          "[fused]") {
  // tanh(x @ w + bias) with its row sums and column maxima. 600 rows of
  // 500: the head's product comes in blocks of 525 and 75 rows (Einsum.cpp).
  int64_t m = 600, k = 64, n = 500;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(m * k), w(k * n), bias(n);
  for (std::vector<float> *values : {&x, &w, &bias})
    for (float &v : *values)
      v = uniform(random);
  for (auto gemm : {cpu::GemmImplementation::Default,
                    cpu::GemmImplementation::Builtin}) {
    cpu::setGemmImplementation(gemm);
    // Unfused: einsum, broadcast, add, tanh, reduce sum [1], reduce max [0].
    std::vector<float> product(m * n), wide(m * n), sum(m * n), act(m * n),
        rowSums(m), colMax(n);
    runOne(OpCode::Einsum, {}, "mk,kn->mn", {f32({m, k}), f32({k, n})},
           {x.data(), w.data()}, {f32({m, n})}, {product.data()});
    runOne(OpCode::Broadcast, {1}, "", {f32({n})}, {bias.data()},
           {f32({m, n})}, {wide.data()});
    runOne(OpCode::Add, {}, "", {f32({m, n}), f32({m, n})},
           {product.data(), wide.data()}, {f32({m, n})}, {sum.data()});
    runOne(OpCode::Tanh, {}, "", {f32({m, n})}, {sum.data()}, {f32({m, n})},
           {act.data()});
    runOne(OpCode::Reduce, {static_cast<int64_t>(ReductionCode::Sum), 1}, "",
           {f32({m, n})}, {act.data()}, {f32({m})}, {rowSums.data()});
    runOne(OpCode::Reduce, {static_cast<int64_t>(ReductionCode::Max), 0}, "",
           {f32({m, n})}, {sum.data()}, {f32({n})}, {colMax.data()});

    FusedProgram program;
    program.count = m * n;
    program.head = true;
    program.operands = {{1, n}};
    program.steps = {{OpCode::Add, head(), operand(0)},
                     {OpCode::Tanh, step(0), step(0)}};
    program.results = {1};
    program.reductions = {{ReductionCode::Sum, 1, n, m},
                          {ReductionCode::Max, 0, 1, n}};
    Instruction inst;
    inst.op = OpCode::Fused;
    inst.text = "mk,kn->mn";
    inst.ints = encodeFused(program);
    std::vector<float> fusedProduct(m * n), fusedAct(m * n), fusedSums(m),
        fusedMax(n);
    runOne(OpCode::Fused, inst.ints, inst.text,
           {f32({m, k}), f32({k, n}), f32({n})},
           {x.data(), w.data(), bias.data()},
           {f32({m, n}), f32({m, n}), f32({m}), f32({n})},
           {fusedProduct.data(), fusedAct.data(), fusedSums.data(),
            fusedMax.data()});
    CHECK(sameBits(fusedProduct, product));
    CHECK(sameBits(fusedAct, act));
    CHECK(sameBits(fusedSums, rowSums));
    CHECK(sameBits(fusedMax, colMax));

    // The chain's result in place of the head's product.
    std::vector<float> shared(m * n), sharedSums(m), sharedMax(n);
    runOne(OpCode::Fused, inst.ints, inst.text,
           {f32({m, k}), f32({k, n}), f32({n})},
           {x.data(), w.data(), bias.data()},
           {f32({m, n}), f32({m, n}), f32({m}), f32({n})},
           {shared.data(), shared.data(), sharedSums.data(),
            sharedMax.data()});
    CHECK(sameBits(shared, act));
    CHECK(sameBits(sharedSums, rowSums));
  }
  cpu::setGemmImplementation(cpu::GemmImplementation::Default);
}

TEST_CASE("fused kernel: a reduction's result over the bytes it reads",
          "[fused]") {
  // sum(exp(x)) over everything, written where x was: reductions are
  // written after every read.
  std::vector<float> x = {0.5f, -1, 2, 0.25f, 3, -2};
  float expected = 0;
  for (float v : x)
    expected += std::exp(v);
  FusedProgram program;
  program.count = 6;
  program.operands = {{1, 6}};
  program.steps = {{OpCode::Exp, operand(0), operand(0)}};
  program.reductions = {{ReductionCode::Sum, 0, 6, 1}};
  Instruction inst;
  inst.op = OpCode::Fused;
  inst.ints = encodeFused(program);
  runOne(OpCode::Fused, inst.ints, "", {f32({6})}, {x.data()}, {f32({})},
         {x.data()});
  CHECK(x[0] == Approx(expected).epsilon(1e-6));
}

TEST_CASE("fused kernel: malformed heads and reductions are errors",
          "[fused]") {
  std::vector<float> buffer(64, 1.0f), out(64);
  auto run = [&](const FusedProgram &program, const std::string &text,
                 std::vector<TensorType> operands,
                 std::vector<TensorType> results) {
    Instruction inst;
    inst.op = OpCode::Fused;
    inst.text = text;
    inst.ints = encodeFused(program);
    std::vector<const void *> in(operands.size(), buffer.data());
    std::vector<void *> res(results.size(), out.data());
    return cpu::runKernel(inst, operands, in, results, res, nullptr);
  };
  auto fails = [&](const FusedProgram &program, const std::string &text,
                   std::vector<TensorType> operands,
                   std::vector<TensorType> results, const std::string &why) {
    Status status = run(program, text, operands, results);
    INFO(status.message());
    CHECK(!status.ok());
    CHECK(status.message().find(why) != std::string::npos);
  };
  FusedProgram reading;
  reading.operands = {{1, 8}};
  reading.steps = {{OpCode::Add, head(), operand(0)}};
  reading.results = {0};
  // The head's product without a head.
  fails(reading, "", {f32({8})}, {f32({8})}, "missing head");
  // A head: two operands, a product, f32 operands.
  REQUIRE(run(reading, "ik,k->i", {f32({8, 2}), f32({2}), f32({8})},
              {f32({8}), f32({8})})
              .ok());
  fails(reading, "ik,k->i", {f32({8, 2})}, {f32({8}), f32({8})},
        "needs two operands");
  fails(reading, "ik,k->i", {{DType::F64, {8, 2}}, f32({2}), f32({8})},
        {f32({8}), f32({8})}, "head's operands must be f32");
  // The head's spec against its operands and product.
  fails(reading, "ik,k", {f32({8, 2}), f32({2}), f32({8})},
        {f32({8}), f32({8})}, "the head's");
  fails(reading, "ijk,k->i", {f32({8, 2}), f32({2}), f32({8})},
        {f32({8}), f32({8})}, "the head's");
  fails(reading, "ik,k->ik", {f32({8, 2}), f32({2}), f32({8})},
        {f32({8}), f32({8})}, "spec's shape");
  FusedProgram reducing;
  reducing.count = 8;
  reducing.operands = {{1, 8}};
  reducing.steps = {{OpCode::Neg, operand(0), operand(0)}};
  reducing.reductions = {{ReductionCode::Sum, 0, 4, 2}};
  REQUIRE(run(reducing, "", {f32({8})}, {f32({2})}).ok());
  fails(reducing, "", {f32({8})}, {f32({3})}, "does not fit");
  fails(reducing, "", {f32({8})}, {f32({2}), f32({2})}, "result count");
  reducing.reductions[0].kind = ReductionCode::And;
  fails(reducing, "", {f32({8})}, {f32({2})}, "not a sum, max or min");
  reducing.reductions[0] = {ReductionCode::Max, 3, 4, 2};
  fails(reducing, "", {f32({8})}, {f32({2})}, "names no step");
  reducing.reductions[0] = {ReductionCode::Max, 0, 3, 2};
  fails(reducing, "", {f32({8})}, {f32({2})}, "does not fit");
}
