//===- KernelsDataTest.cpp - CPU kernels: reductions, data movement -------===//
//
// reduce, argmax, top_k, cumsum, broadcast, transpose, slice, dynamic_slice,
// dynamic_update_slice, concatenate, pad, gather and scatter_add against
// naive references that walk the global index space one multi-index at a
// time; each reference is first checked on a hand-computed case. Clamping
// of run-time indices (dynamic slices, gather, scatter_add), NaN ordering
// (max/min/argmax/top_k) and ties (argmax, top_k) have their own cases.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace partita;
using namespace partita::kernel_test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

/// Naive reduce over `dims` of a buffer read through double.
std::vector<double> referenceReduce(const Buffer &in,
                                    const std::vector<int64_t> &dims,
                                    ReductionCode kind,
                                    std::vector<int64_t> &outShape) {
  const std::vector<int64_t> &shape = in.type.shape;
  outShape.clear();
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
      outShape.push_back(shape[d]);
  double identity = 0;
  if (kind == ReductionCode::Max)
    identity = -std::numeric_limits<double>::infinity();
  if (kind == ReductionCode::Min)
    identity = std::numeric_limits<double>::infinity();
  if (kind == ReductionCode::And)
    identity = -1; // All bits set.
  if (in.type.dtype == DType::I32 && kind == ReductionCode::Max)
    identity = std::numeric_limits<int32_t>::lowest();
  if (in.type.dtype == DType::I32 && kind == ReductionCode::Min)
    identity = std::numeric_limits<int32_t>::max();
  std::vector<double> out(countOf(outShape), identity);
  for (int64_t i = 0; i < in.size(); ++i) {
    std::vector<int64_t> index = unflatten(i, shape), outIndex;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
        outIndex.push_back(index[d]);
    double &acc = out[flatten(outIndex, outShape)];
    double v = in.get(i);
    switch (kind) {
    case ReductionCode::Sum:
      acc += v;
      break;
    case ReductionCode::Max:
      acc = (std::isnan(acc) || std::isnan(v)) ? NaN : std::max(acc, v);
      break;
    case ReductionCode::Min:
      acc = (std::isnan(acc) || std::isnan(v)) ? NaN : std::min(acc, v);
      break;
    case ReductionCode::And:
      acc = double(int64_t(acc) & int64_t(v));
      break;
    case ReductionCode::Or:
      acc = double(int64_t(acc) | int64_t(v));
      break;
    }
  }
  return out;
}

} // namespace

TEST_CASE("reduce reference on a hand-computed case", "[kernels]") {
  Buffer x = bufferOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<int64_t> shape;
  CHECK(referenceReduce(x, {1}, ReductionCode::Sum, shape) ==
        std::vector<double>{6, 15});
  CHECK(shape == std::vector<int64_t>{2});
  CHECK(referenceReduce(x, {0}, ReductionCode::Max, shape) ==
        std::vector<double>{4, 5, 6});
}

TEST_CASE("reduce: every kind, several dims, f32/bf16/f64/int/bool",
          "[kernels]") {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{}, {}},         {{5}, {0}},
      {{2, 3, 4}, {1}}, {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {}},  {{2, 3, 4}, {2, 0, 1}},
      {{1, 5, 1}, {2}}, {{3, 17}, {0}},
      {{3, 17}, {1}},   {{4, 0, 2}, {1}}};
  std::mt19937 rng(11);
  for (auto &[shape, dims] : cases) {
    std::vector<int64_t> ints;
    for (DType dtype : {DType::F32, DType::BF16, DType::F64, DType::I32}) {
      // Positive values keep sums away from cancellation (relative checks).
      Buffer x = randomBuffer(dtype, shape, rng, 0, 9);
      for (ReductionCode kind :
           {ReductionCode::Sum, ReductionCode::Max, ReductionCode::Min}) {
        std::vector<int64_t> outShape;
        std::vector<double> expected = referenceReduce(x, dims, kind, outShape);
        ints = {int64_t(kind)};
        ints.insert(ints.end(), dims.begin(), dims.end());
        Tolerance tol = toleranceFor(dtype);
        checkClose(runOne(OpCode::Reduce, ints, {&x}, dtype, outShape),
                   expected, tol.absolute, tol.relative,
                   std::string("reduce ") + dtypeName(dtype));
      }
    }
    for (DType dtype : {DType::I32, DType::Bool})
      for (ReductionCode kind : {ReductionCode::And, ReductionCode::Or}) {
        Buffer x = randomBuffer(dtype, shape, rng, 0, 15);
        std::vector<int64_t> outShape;
        std::vector<double> expected = referenceReduce(x, dims, kind, outShape);
        if (dtype == DType::Bool)
          for (double &v : expected)
            v = v != 0;
        ints = {int64_t(kind)};
        ints.insert(ints.end(), dims.begin(), dims.end());
        checkEqual(runOne(OpCode::Reduce, ints, {&x}, dtype, outShape),
                   expected);
      }
  }
  Buffer withNaN = bufferOf(DType::F32, {2, 2}, {1, NaN, 3, 4});
  checkEqual(runOne(OpCode::Reduce, {int64_t(ReductionCode::Max), 1},
                    {&withNaN}, DType::F32, {2}),
             {NaN, 4});
  checkEqual(runOne(OpCode::Reduce, {int64_t(ReductionCode::Min), 1},
                    {&withNaN}, DType::F32, {2}),
             {NaN, 3});
}

TEST_CASE("reduce max/min over the last dimension: element order's bits",
          "[kernels]") {
  // The rows run in vectorized lanes; the bits must be those of combining
  // in element order: the first NaN (payload kept), else the extreme, a
  // tie going to the later element (a zero's sign is the last zero's).
  uint32_t payloads[] = {0x7fc00001u, 0xffc00002u, 0x7fa00003u};
  auto nanWith = [](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  };
  auto bitsOf = [](float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return bits;
  };
  std::mt19937 rng(21);
  for (bool isMax : {true, false})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{5, 37}, {3, 16}, {2, 3, 50}, {4, 1}, {2, 0}})
      for (int trial = 0; trial < 40; ++trial) {
        Buffer in(DType::F32, shape);
        std::vector<float> values(in.size());
        for (float &v : values) {
          int pick = static_cast<int>(rng() % 16);
          v = pick == 0   ? nanWith(payloads[rng() % 3])
              : pick < 5  ? 0.0f
              : pick < 9  ? -0.0f
              : pick < 11 ? -std::numeric_limits<float>::infinity()
                          : float(int(rng() % 5) - 4);
        }
        if (!values.empty())
          std::memcpy(in.bytes.data(), values.data(), 4 * values.size());
        // Reduce the last dimension, and (rank 3) the last two: rows of
        // one output follow each other.
        std::vector<int64_t> dims = {int64_t(shape.size()) - 1};
        if (shape.size() == 3)
          dims = {1, 2};
        std::vector<int64_t> outShape(shape.begin(),
                                      shape.end() - int64_t(dims.size()));
        int64_t outCount = countOf(outShape);
        int64_t span = outCount ? in.size() / outCount : 0;
        std::vector<float> expected(
            outCount, isMax ? -std::numeric_limits<float>::infinity()
                            : std::numeric_limits<float>::infinity());
        for (int64_t o = 0; o < outCount; ++o)
          for (int64_t j = 0; j < span; ++j) {
            float a = expected[o], b = values[o * span + j];
            expected[o] = (a != a || b != b)
                              ? (a != a ? a : b)
                              : ((isMax ? a > b : a < b) ? a : b);
          }
        std::vector<int64_t> ints = {
            int64_t(isMax ? ReductionCode::Max : ReductionCode::Min)};
        ints.insert(ints.end(), dims.begin(), dims.end());
        Buffer got = runOne(OpCode::Reduce, ints, {&in}, DType::F32, outShape);
        for (int64_t o = 0; o < outCount; ++o) {
          float value;
          std::memcpy(&value, got.bytes.data() + 4 * o, 4);
          INFO((isMax ? "max" : "min")
               << " shape " << formatShape(shape) << " output " << o);
          CHECK(bitsOf(value) == bitsOf(expected[o]));
        }
      }
}

TEST_CASE("argmax: first index on ties, NaN is the largest", "[kernels]") {
  Buffer x = bufferOf(DType::F32, {2, 4}, {1, 3, 3, 0, 2, NaN, 5, NaN});
  checkEqual(runOne(OpCode::Argmax, {1}, {&x}, DType::I32, {2}), {1, 1});
  checkEqual(runOne(OpCode::Argmax, {0}, {&x}, DType::I64, {4}), {1, 1, 1, 1});
  std::mt19937 rng(12);
  for (DType dtype : {DType::F32, DType::BF16, DType::I32})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{7}, {3, 1, 5}, {2, 6, 3}})
      for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
        Buffer in = randomBuffer(dtype, shape, rng, 0, 3); // Many ties.
        std::vector<int64_t> outShape = shape;
        outShape.erase(outShape.begin() + dim);
        std::vector<double> expected(countOf(outShape), -1);
        std::vector<double> best(countOf(outShape));
        for (int64_t i = 0; i < in.size(); ++i) {
          std::vector<int64_t> index = unflatten(i, shape);
          int64_t position = index[dim];
          index.erase(index.begin() + dim);
          int64_t o = flatten(index, outShape);
          if (expected[o] < 0 || in.get(i) > best[o] ||
              (in.get(i) == best[o] && position < expected[o])) {
            expected[o] = double(position);
            best[o] = in.get(i);
          }
        }
        checkEqual(runOne(OpCode::Argmax, {dim}, {&in}, DType::I32, outShape),
                   expected);
      }
}

TEST_CASE("top_k: descending, ties by lower index, NaN first", "[kernels]") {
  Buffer x = bufferOf(DType::F32, {5}, {3, 1, 3, NaN, 2});
  std::vector<Buffer> results{Buffer(DType::F32, {3}), Buffer(DType::I32, {3})};
  REQUIRE(runOp(OpCode::TopK, {0, 3}, {&x}, results).ok());
  checkEqual(results[0], {NaN, 3, 3});
  checkEqual(results[1], {3, 0, 2});
  std::mt19937 rng(13);
  for (DType dtype : {DType::F32, DType::BF16, DType::I64})
    for (int64_t dim : {0, 1}) {
      std::vector<int64_t> shape = {4, 6};
      int64_t k = dim == 0 ? 2 : 4;
      Buffer in = randomBuffer(dtype, shape, rng, 0, 4);
      std::vector<int64_t> outShape = shape;
      outShape[dim] = k;
      std::vector<double> values(countOf(outShape)), indices(countOf(outShape));
      for (int64_t line = 0; line < shape[1 - dim]; ++line) {
        std::vector<int64_t> order(shape[dim]);
        std::iota(order.begin(), order.end(), 0);
        auto at = [&](int64_t j) {
          return in.get(dim == 0 ? j * shape[1] + line : line * shape[1] + j);
        };
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return at(a) > at(b); });
        for (int64_t j = 0; j < k; ++j) {
          int64_t o = dim == 0 ? j * outShape[1] + line : line * k + j;
          values[o] = at(order[j]);
          indices[o] = double(order[j]);
        }
      }
      std::vector<Buffer> out{Buffer(dtype, outShape),
                              Buffer(DType::I64, outShape)};
      REQUIRE(runOp(OpCode::TopK, {dim, k}, {&in}, out).ok());
      checkEqual(out[0], values);
      checkEqual(out[1], indices);
    }
}

TEST_CASE("cumsum forward and reverse", "[kernels]") {
  Buffer hand = bufferOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  checkEqual(runOne(OpCode::Cumsum, {1, 0}, {&hand}, DType::F32, {2, 3}),
             {1, 3, 6, 4, 9, 15});
  checkEqual(runOne(OpCode::Cumsum, {1, 1}, {&hand}, DType::F32, {2, 3}),
             {6, 5, 3, 15, 11, 6});
  std::mt19937 rng(14);
  for (DType dtype : {DType::F32, DType::BF16, DType::I32})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{9}, {3, 1, 5}, {4, 6}})
      for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim)
        for (int64_t reverse : {0, 1}) {
          Buffer in = randomBuffer(dtype, shape, rng, 0, 5);
          std::vector<double> expected(in.size(), 0);
          for (int64_t i = 0; i < in.size(); ++i) {
            std::vector<int64_t> index = unflatten(i, shape);
            for (int64_t j = 0; j < shape[dim]; ++j) {
              std::vector<int64_t> source = index;
              source[dim] = j;
              if (reverse ? j >= index[dim] : j <= index[dim])
                expected[i] += in.get(flatten(source, shape));
            }
          }
          Tolerance tol = toleranceFor(dtype);
          checkClose(
              runOne(OpCode::Cumsum, {dim, reverse}, {&in}, dtype, shape),
              expected, tol.absolute, tol.relative);
        }
}

TEST_CASE("broadcast, including size-1 expansion and scalars", "[kernels]") {
  struct Case {
    std::vector<int64_t> in, dims, out;
  };
  std::vector<Case> cases = {{{3}, {1}, {2, 3}},
                             {{3, 1}, {0, 1}, {3, 4}},
                             {{}, {}, {2, 2}},
                             {{2}, {0}, {2, 3, 1}},
                             {{1, 4}, {0, 2}, {3, 5, 4}}};
  std::mt19937 rng(15);
  Buffer hand = bufferOf(DType::F32, {2}, {7, 8});
  checkEqual(runOne(OpCode::Broadcast, {1}, {&hand}, DType::F32, {2, 2}),
             {7, 8, 7, 8});
  for (const Case &c : cases)
    for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::F64}) {
      Buffer in = randomBuffer(dtype, c.in, rng, -5, 5);
      std::vector<double> expected;
      for (int64_t i = 0; i < countOf(c.out); ++i) {
        std::vector<int64_t> outIndex = unflatten(i, c.out), inIndex;
        for (size_t d = 0; d < c.in.size(); ++d)
          inIndex.push_back(c.in[d] == 1 ? 0 : outIndex[c.dims[d]]);
        expected.push_back(in.get(flatten(inIndex, c.in)));
      }
      checkEqual(runOne(OpCode::Broadcast, c.dims, {&in}, dtype, c.out),
                 expected);
    }
}

TEST_CASE("transpose", "[kernels]") {
  Buffer hand = bufferOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  checkEqual(runOne(OpCode::Transpose, {1, 0}, {&hand}, DType::F32, {3, 2}),
             {1, 4, 2, 5, 3, 6});
  std::mt19937 rng(16);
  std::vector<int64_t> shape = {2, 3, 1, 4};
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    std::vector<int64_t> outShape;
    for (int64_t p : perm)
      outShape.push_back(shape[p]);
    Buffer in = randomBuffer(DType::BF16, shape, rng);
    std::vector<double> expected;
    for (int64_t i = 0; i < countOf(outShape); ++i) {
      std::vector<int64_t> outIndex = unflatten(i, outShape), inIndex(4);
      for (size_t d = 0; d < 4; ++d)
        inIndex[perm[d]] = outIndex[d];
      expected.push_back(in.get(flatten(inIndex, shape)));
    }
    checkEqual(runOne(OpCode::Transpose, perm, {&in}, DType::BF16, outShape),
               expected);
  } while (std::next_permutation(perm.begin(), perm.end()));
  Buffer scalar = bufferOf(DType::I64, {}, {42});
  checkEqual(runOne(OpCode::Transpose, {}, {&scalar}, DType::I64, {}), {42});
}

TEST_CASE("slice with strides", "[kernels]") {
  std::mt19937 rng(17);
  std::vector<int64_t> shape = {4, 8, 3};
  Buffer in = randomBuffer(DType::F32, shape, rng);
  std::vector<int64_t> start = {1, 2, 0}, limit = {4, 8, 3}, stride = {2, 3, 1};
  std::vector<int64_t> outShape = {2, 2, 3};
  std::vector<double> expected;
  for (int64_t i = 0; i < countOf(outShape); ++i) {
    std::vector<int64_t> index = unflatten(i, outShape);
    for (size_t d = 0; d < 3; ++d)
      index[d] = start[d] + index[d] * stride[d];
    expected.push_back(in.get(flatten(index, shape)));
  }
  std::vector<int64_t> ints = start;
  ints.insert(ints.end(), limit.begin(), limit.end());
  ints.insert(ints.end(), stride.begin(), stride.end());
  checkEqual(runOne(OpCode::Slice, ints, {&in}, DType::F32, outShape),
             expected);
  Buffer hand = bufferOf(DType::I32, {5}, {0, 1, 2, 3, 4});
  checkEqual(runOne(OpCode::Slice, {1, 5, 2}, {&hand}, DType::I32, {2}),
             {1, 3});
  checkEqual(runOne(OpCode::Slice, {2, 2, 1}, {&hand}, DType::I32, {0}), {});
}

TEST_CASE("dynamic_slice and dynamic_update_slice clamp start indices",
          "[kernels]") {
  Buffer in = bufferOf(DType::F32, {3, 4},
                       {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  auto scalar = [](DType dtype, int64_t value) {
    Buffer b(dtype, {});
    b.setInt(0, value);
    return b;
  };
  struct Case {
    int64_t row, col, clampedRow, clampedCol;
  };
  for (DType indexType : {DType::I32, DType::I64})
    for (Case c : {Case{1, 1, 1, 1}, Case{-5, 1, 0, 1}, Case{2, 9, 1, 2},
                   Case{100, -100, 1, 0}}) {
      Buffer r = scalar(indexType, c.row), k = scalar(indexType, c.col);
      std::vector<double> expected;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          expected.push_back(in.get((c.clampedRow + i) * 4 + c.clampedCol + j));
      checkEqual(runOne(OpCode::DynamicSlice, {2, 2}, {&in, &r, &k}, DType::F32,
                        {2, 2}),
                 expected);
      Buffer update = bufferOf(DType::F32, {2, 2}, {-1, -2, -3, -4});
      std::vector<double> updated;
      for (int64_t i = 0; i < in.size(); ++i) {
        int64_t row = i / 4 - c.clampedRow, col = i % 4 - c.clampedCol;
        bool inside = row >= 0 && row < 2 && col >= 0 && col < 2;
        updated.push_back(inside ? update.get(row * 2 + col) : in.get(i));
      }
      checkEqual(runOne(OpCode::DynamicUpdateSlice, {}, {&in, &update, &r, &k},
                        DType::F32, {3, 4}),
                 updated);
    }
  Buffer scalarIn = bufferOf(DType::BF16, {}, {2.5});
  checkEqual(runOne(OpCode::DynamicSlice, {}, {&scalarIn}, DType::BF16, {}),
             {2.5});
}

TEST_CASE("concatenate along each dimension", "[kernels]") {
  std::mt19937 rng(18);
  for (int64_t dim = 0; dim < 3; ++dim) {
    std::vector<std::vector<int64_t>> shapes(3, {2, 3, 2});
    shapes[0][dim] = 1;
    shapes[1][dim] = 0; // An empty operand contributes nothing.
    shapes[2][dim] = 3;
    std::vector<Buffer> inputs;
    for (auto &shape : shapes)
      inputs.push_back(randomBuffer(DType::F32, shape, rng));
    std::vector<int64_t> outShape = {2, 3, 2};
    outShape[dim] = 4;
    std::vector<double> expected;
    for (int64_t i = 0; i < countOf(outShape); ++i) {
      std::vector<int64_t> index = unflatten(i, outShape);
      size_t which = 0;
      while (index[dim] >= shapes[which][dim]) {
        index[dim] -= shapes[which][dim];
        ++which;
      }
      expected.push_back(inputs[which].get(flatten(index, shapes[which])));
    }
    checkEqual(runOne(OpCode::Concatenate, {dim},
                      {&inputs[0], &inputs[1], &inputs[2]}, DType::F32,
                      outShape),
               expected);
  }
}

TEST_CASE("pad with a value", "[kernels]") {
  Buffer hand = bufferOf(DType::I32, {2}, {1, 2});
  Buffer zero = bufferOf(DType::I32, {}, {9});
  checkEqual(runOne(OpCode::Pad, {1, 2}, {&hand, &zero}, DType::I32, {5}),
             {9, 1, 2, 9, 9});
  std::mt19937 rng(19);
  std::vector<int64_t> shape = {2, 3}, low = {1, 0}, high = {2, 1};
  std::vector<int64_t> outShape = {5, 4};
  Buffer in = randomBuffer(DType::BF16, shape, rng);
  Buffer value = bufferOf(DType::BF16, {}, {-0.5});
  std::vector<double> expected;
  for (int64_t i = 0; i < countOf(outShape); ++i) {
    std::vector<int64_t> index = unflatten(i, outShape);
    bool inside = true;
    for (size_t d = 0; d < 2; ++d) {
      index[d] -= low[d];
      inside = inside && index[d] >= 0 && index[d] < shape[d];
    }
    expected.push_back(inside ? in.get(flatten(index, shape)) : -0.5);
  }
  checkEqual(
      runOne(OpCode::Pad, {1, 0, 2, 1}, {&in, &value}, DType::BF16, outShape),
      expected);
}

TEST_CASE("gather and scatter_add clamp indices; repeats accumulate",
          "[kernels]") {
  Buffer table = bufferOf(DType::F32, {3, 2}, {0, 1, 10, 11, 20, 21});
  for (DType indexType : {DType::I32, DType::I64}) {
    Buffer indices(indexType, {2, 2});
    std::vector<int64_t> raw = {2, -7, 1, 99};
    for (int64_t i = 0; i < 4; ++i)
      indices.setInt(i, raw[i]);
    checkEqual(
        runOne(OpCode::Gather, {}, {&table, &indices}, DType::F32, {2, 2, 2}),
        {20, 21, 0, 1, 10, 11, 20, 21});
    Buffer updates = bufferOf(DType::F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    // Rows 2 and 99->2 both add to row 2; -7 -> row 0.
    checkEqual(runOne(OpCode::ScatterAdd, {}, {&table, &indices, &updates},
                      DType::F32, {3, 2}),
               {3, 5, 15, 17, 28, 31});
  }
  std::mt19937 rng(20);
  for (DType dtype : {DType::F32, DType::BF16, DType::I32, DType::F64}) {
    Buffer t = randomBuffer(dtype, {5, 3}, rng, -4, 4);
    Buffer idx = randomBuffer(DType::I32, {4, 2}, rng, -2, 7);
    Buffer upd = randomBuffer(dtype, {4, 2, 3}, rng, -4, 4);
    std::vector<double> gathered, scattered;
    for (int64_t i = 0; i < t.size(); ++i)
      scattered.push_back(t.get(i));
    for (int64_t p = 0; p < idx.size(); ++p) {
      int64_t row = std::min<int64_t>(std::max<int64_t>(idx.getInt(p), 0), 4);
      for (int64_t j = 0; j < 3; ++j) {
        gathered.push_back(t.get(row * 3 + j));
        scattered[row * 3 + j] += upd.get(p * 3 + j);
      }
    }
    checkEqual(runOne(OpCode::Gather, {}, {&t, &idx}, dtype, {4, 2, 3}),
               gathered);
    // bf16 rounds after every addition: one ulp per accumulated update.
    Tolerance tol = toleranceFor(dtype);
    checkClose(runOne(OpCode::ScatterAdd, {}, {&t, &idx, &upd}, dtype, {5, 3}),
               scattered, dtype == DType::BF16 ? 0.1 : tol.absolute,
               tol.relative);
  }
}
