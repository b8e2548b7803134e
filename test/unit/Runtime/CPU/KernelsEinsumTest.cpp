//===- KernelsEinsumTest.cpp - CPU kernels: einsum ------------------------===//
//
// einsum against a naive reference that enumerates every assignment of the
// spec's labels and sums products in double. Specs cover plain, batched and
// transposed matmuls, contraction over two labels, outer products, labels
// summed out of a single operand, batch labels in odd positions, permuted
// outputs and one-operand permute/reduce; each runs through OpenBLAS (when
// built with it) and through the built-in blocked GEMM, including sizes that
// cross its blocks. Tolerances: f32 1e-5 relative + 1e-5 * K absolute; bf16
// operands accumulate in f32, so the f32 result is held to the same bound,
// and a bf16 result to one bf16 ulp.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <map>

using namespace partita;
using namespace partita::kernel_test;

namespace {

/// Naive einsum over every assignment of the labels.
std::vector<double> referenceEinsum(const std::string &spec,
                                    const std::vector<const Buffer *> &ins,
                                    std::map<char, int64_t> sizes) {
  size_t arrow = spec.find("->");
  std::string output = spec.substr(arrow + 2);
  std::vector<std::string> terms;
  std::string lhs = spec.substr(0, arrow);
  size_t comma = lhs.find(',');
  terms.push_back(lhs.substr(0, comma));
  if (comma != std::string::npos)
    terms.push_back(lhs.substr(comma + 1));
  std::string labels = output;
  for (const std::string &term : terms)
    for (char c : term)
      if (labels.find(c) == std::string::npos)
        labels += c;
  std::vector<int64_t> allShape, outShape;
  for (char c : labels)
    allShape.push_back(sizes[c]);
  for (char c : output)
    outShape.push_back(sizes[c]);
  std::vector<double> out(countOf(outShape), 0.0);
  // Per term: the position of each of its labels in `labels`, and its shape.
  std::vector<std::string> allTerms = terms;
  allTerms.push_back(output);
  std::vector<std::vector<size_t>> positions;
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string &term : allTerms) {
    positions.emplace_back();
    shapes.emplace_back();
    for (char c : term) {
      positions.back().push_back(labels.find(c));
      shapes.back().push_back(sizes[c]);
    }
  }
  std::vector<int64_t> index;
  for (int64_t flat = 0; flat < countOf(allShape); ++flat) {
    std::vector<int64_t> assignment = unflatten(flat, allShape);
    auto indexFor = [&](size_t t) {
      index.clear();
      for (size_t position : positions[t])
        index.push_back(assignment[position]);
      return flatten(index, shapes[t]);
    };
    double product = 1;
    for (size_t t = 0; t < terms.size(); ++t)
      product *= ins[t]->get(indexFor(t));
    out[indexFor(terms.size())] += product;
  }
  return out;
}

std::vector<int64_t> shapeOf(const std::string &term,
                             std::map<char, int64_t> &sizes) {
  std::vector<int64_t> shape;
  for (char c : term)
    shape.push_back(sizes[c]);
  return shape;
}

struct EinsumCase {
  std::string spec;
  std::map<char, int64_t> sizes;
};

const std::vector<EinsumCase> einsumCases = {
    {"mk,kn->mn", {{'m', 5}, {'k', 7}, {'n', 3}}},
    {"mk,kn->mn", {{'m', 1}, {'k', 1}, {'n', 1}}},
    {"bmk,bkn->bmn", {{'b', 3}, {'m', 4}, {'k', 6}, {'n', 5}}},
    {"km,kn->mn", {{'m', 4}, {'k', 6}, {'n', 5}}}, // Transposed lhs.
    {"mk,nk->mn", {{'m', 4}, {'k', 6}, {'n', 5}}}, // Transposed rhs.
    {"km,nk->nm", {{'m', 4}, {'k', 6}, {'n', 5}}}, // Both, output swapped.
    {"mkl,kln->mn", {{'m', 3}, {'k', 4}, {'l', 2}, {'n', 5}}},
    {"mlk,kln->nm", {{'m', 3}, {'k', 4}, {'l', 2}, {'n', 5}}},
    {"i,j->ij", {{'i', 4}, {'j', 6}}},                        // Outer product.
    {"i,i->", {{'i', 9}}},                                    // Dot product.
    {"ijk,kl->il", {{'i', 3}, {'j', 4}, {'k', 5}, {'l', 2}}}, // j summed.
    {"mbk,bkn->bmn", {{'b', 2}, {'m', 3}, {'k', 4}, {'n', 5}}},
    {"bsd,dh->bsh", {{'b', 2}, {'s', 3}, {'d', 8}, {'h', 4}}},
    {"bhqd,bhkd->bhqk", {{'b', 2}, {'h', 2}, {'q', 3}, {'k', 4}, {'d', 5}}},
    {"ab,ab->ab", {{'a', 3}, {'b', 4}}},         // Pure batch.
    {"ij->ji", {{'i', 3}, {'j', 5}}},            // Single-operand permute.
    {"ijk->ik", {{'i', 3}, {'j', 4}, {'k', 2}}}, // Single-operand reduce.
    {"ij->", {{'i', 3}, {'j', 4}}},
    {"->", {}},                                        // Scalar copy.
    {"mk,kn->mn", {{'m', 9}, {'k', 150}, {'n', 270}}}, // Crosses blocks.
    {"mk,kn->mn", {{'m', 2}, {'k', 0}, {'n', 3}}},     // Empty contraction.
    // The right operand's labels first: computed with the operands swapped.
    {"bsd,bsf->fd", {{'b', 2}, {'s', 3}, {'d', 4}, {'f', 5}}},
    {"bsnk,bsd->dnk", {{'b', 2}, {'s', 3}, {'n', 2}, {'k', 3}, {'d', 4}}},
    {"bmk,bkn->bnm", {{'b', 2}, {'m', 3}, {'k', 4}, {'n', 5}}},
    {"mk,kn->nm", {{'m', 9}, {'k', 150}, {'n', 270}}},
    // Batch labels between the others (attention): operands read in place
    // as strided batches of matrices, not copied batch-first.
    {"bshk,bthk->bhst",
     {{'b', 2}, {'s', 3}, {'h', 2}, {'k', 4}, {'t', 5}}},
    {"bhst,bthk->bshk",
     {{'b', 2}, {'s', 3}, {'h', 2}, {'k', 4}, {'t', 5}}},
    {"bshk,bsd->dhk", {{'b', 2}, {'s', 3}, {'h', 2}, {'k', 4}, {'d', 5}}},
    {"hmk,knh->hmn", {{'h', 3}, {'m', 4}, {'k', 5}, {'n', 2}}},
};

} // namespace

TEST_CASE("einsum reference on hand-computed cases", "[kernels]") {
  Buffer a = bufferOf(DType::F32, {2, 2}, {1, 2, 3, 4});
  Buffer b = bufferOf(DType::F32, {2, 2}, {5, 6, 7, 8});
  std::map<char, int64_t> sizes = {{'i', 2}, {'j', 2}, {'k', 2}};
  CHECK(referenceEinsum("ij,jk->ik", {&a, &b}, sizes) ==
        std::vector<double>{19, 22, 43, 50});
  CHECK(referenceEinsum("ij->j", {&a}, sizes) == std::vector<double>{4, 6});
}

TEST_CASE("einsum matches the reference on many specs", "[kernels]") {
  std::mt19937 rng(21);
  std::vector<cpu::GemmImplementation> implementations = {
      cpu::GemmImplementation::Default, cpu::GemmImplementation::Builtin};
  for (cpu::GemmImplementation implementation : implementations) {
    cpu::setGemmImplementation(implementation);
    for (EinsumCase c : einsumCases)
      for (DType dtype : {DType::F32, DType::BF16, DType::F64, DType::I32}) {
        size_t arrow = c.spec.find("->");
        std::string lhs = c.spec.substr(0, arrow);
        size_t comma = lhs.find(',');
        std::vector<Buffer> inputs;
        inputs.push_back(
            randomBuffer(dtype, shapeOf(lhs.substr(0, comma), c.sizes), rng));
        if (comma != std::string::npos)
          inputs.push_back(randomBuffer(
              dtype, shapeOf(lhs.substr(comma + 1), c.sizes), rng));
        std::vector<const Buffer *> operands;
        for (Buffer &input : inputs)
          operands.push_back(&input);
        std::vector<int64_t> outShape =
            shapeOf(c.spec.substr(arrow + 2), c.sizes);
        std::vector<double> expected =
            referenceEinsum(c.spec, operands, c.sizes);
        int64_t contracted = 1;
        for (auto &[label, size] : c.sizes)
          if (c.spec.substr(arrow + 2).find(label) == std::string::npos)
            contracted *= size;
        std::string what =
            c.spec + " " + dtypeName(dtype) +
            (implementation == cpu::GemmImplementation::Builtin ? " builtin"
                                                                : " default");
        std::vector<DType> resultTypes = {dtype};
        if (dtype == DType::BF16)
          resultTypes.push_back(DType::F32);
        for (DType resultType : resultTypes) {
          Buffer out = runOne(OpCode::Einsum, {}, operands, resultType,
                              outShape, c.spec);
          Tolerance tol = toleranceFor(resultType);
          double absolute =
              resultType == DType::F32 || resultType == DType::BF16
                  ? 1e-5 * double(contracted) + tol.absolute
                  : tol.absolute;
          // Sums with cancellation: bf16 rounding is relative to the terms.
          if (resultType == DType::BF16)
            absolute = 0.02 * double(contracted);
          checkClose(out, expected, absolute, tol.relative,
                     what + "->" + dtypeName(resultType));
        }
      }
  }
  cpu::setGemmImplementation(cpu::GemmImplementation::Default);
}

TEST_CASE("gemm entry points agree across implementations", "[kernels]") {
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> dist(-1, 1);
  int64_t m = 33, n = 300, k = 129;
  std::vector<float> a(m * k), b(k * n), viaDefault(m * n), viaBuiltin(m * n);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  cpu::gemmF32(false, false, m, n, k, a.data(), k, b.data(), n,
               viaDefault.data(), n);
  cpu::setGemmImplementation(cpu::GemmImplementation::Builtin);
  CHECK(cpu::gemmImplementation() == cpu::GemmImplementation::Builtin);
  cpu::gemmF32(false, false, m, n, k, a.data(), k, b.data(), n,
               viaBuiltin.data(), n);
  cpu::setGemmImplementation(cpu::GemmImplementation::Default);
  for (int64_t i = 0; i < m * n; ++i) {
    double exact = 0;
    for (int64_t p = 0; p < k; ++p)
      exact += double(a[i / n * k + p]) * b[p * n + i % n];
    REQUIRE(std::fabs(viaDefault[i] - exact) < 1e-4);
    REQUIRE(std::fabs(viaBuiltin[i] - exact) < 1e-4);
  }
  INFO("OpenBLAS available: " << cpu::haveOpenBlas());
  SUCCEED();
}

TEST_CASE("a GEMM of one row or one column is a matrix-vector product",
          "[kernels]") {
  // gemmF32 hands m == 1 and n == 1 to sgemv: every transpose and a
  // leading dimension wider than the matrix, against the plain sum.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1, 1);
  for (cpu::GemmImplementation implementation :
       {cpu::GemmImplementation::Default, cpu::GemmImplementation::Builtin})
    for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 37}, {29, 1}, {1, 1}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          cpu::setGemmImplementation(implementation);
          int64_t k = 19, pad = 3;
          int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad,
                  ldc = n + pad;
          std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb),
              c(m * ldc, 7.0f);
          for (float &x : a)
            x = value(rng);
          for (float &x : b)
            x = value(rng);
          cpu::gemmF32(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(),
                       ldc);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0;
              for (int64_t p = 0; p < k; ++p)
                sum += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                       double(tb ? b[j * ldb + p] : b[p * ldb + j]);
              INFO("m " << m << " n " << n << " ta " << ta << " tb " << tb);
              CHECK(std::fabs(c[i * ldc + j] - sum) < 1e-5);
            }
        }
  cpu::setGemmImplementation(cpu::GemmImplementation::Default);
}
