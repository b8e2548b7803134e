//===- DeviceMathTest.cpp - Device index math vs the CPU kernels ----------===//
//
// The GPU kernels evaluate StridedViews built by the planners of
// DeviceMath.h; here the same views run on the host (stridedCopyOnHost) and
// must reproduce the CPU kernels — the reference — bit for bit on random
// shapes and attributes. The number conversions are checked exhaustively
// against the CPU backend's.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/Program/DeviceMath.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

using namespace partita;
using namespace partita::device;

namespace {

std::vector<float> iotaValues(int64_t count) {
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), 1.0f);
  return values;
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// The CPU kernel's result of `inst` on one f32 operand.
std::vector<float> cpuResult(const Instruction &inst,
                             const std::vector<int64_t> &operandShape,
                             const std::vector<int64_t> &resultShape) {
  std::vector<float> input = iotaValues(product(operandShape));
  std::vector<float> output(product(resultShape), -1.0f);
  std::vector<TensorType> operandTypes = {{DType::F32, operandShape}};
  std::vector<TensorType> resultTypes = {{DType::F32, resultShape}};
  std::vector<const void *> operands = {input.data()};
  std::vector<void *> results = {output.data()};
  REQUIRE(cpu::runKernel(inst, operandTypes, operands, resultTypes, results)
              .ok());
  return output;
}

std::vector<float> viewResult(const StridedView &view,
                              const std::vector<int64_t> &operandShape) {
  std::vector<float> input = iotaValues(product(operandShape));
  std::vector<float> output(viewElements(view), -1.0f);
  stridedCopyOnHost(input.data(), output.data(), view, sizeof(float));
  return output;
}

std::vector<int64_t> randomShape(std::mt19937 &random, int rank) {
  std::vector<int64_t> shape(rank);
  for (int64_t &s : shape)
    s = 1 + random() % 4;
  return shape;
}

} // namespace

TEST_CASE("device views reproduce broadcast, transpose and slice",
          "[devicemath]") {
  std::mt19937 random(7);
  int cases = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int rank = 1 + random() % 4;
    std::vector<int64_t> shape = randomShape(random, rank);

    // transpose: a random permutation.
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), random);
    std::vector<int64_t> transposed;
    for (int64_t p : perm)
      transposed.push_back(shape[p]);
    Instruction transpose{OpCode::Transpose, {0}, {1}, perm, ""};
    StridedView view;
    REQUIRE(transposeView(shape, perm, view));
    CHECK(viewResult(view, shape) == cpuResult(transpose, shape, transposed));

    // broadcast: insert new dims and expand some size-1 dims.
    std::vector<int64_t> resultShape, dims, operandShape = shape;
    for (int d = 0; d < rank; ++d) {
      if (random() % 2)
        resultShape.push_back(1 + random() % 3); // A new dimension.
      if (random() % 3 == 0)
        operandShape[d] = 1;
      dims.push_back(static_cast<int64_t>(resultShape.size()));
      resultShape.push_back(operandShape[d] == 1 ? 1 + random() % 3
                                                 : operandShape[d]);
    }
    if (resultShape.size() <= static_cast<size_t>(maxRank)) {
      Instruction broadcast{OpCode::Broadcast, {0}, {1}, dims, ""};
      REQUIRE(broadcastView(operandShape, resultShape, dims, view));
      CHECK(viewResult(view, operandShape) ==
            cpuResult(broadcast, operandShape, resultShape));
    }

    // slice: random start and stride per dim.
    std::vector<int64_t> start, limit, stride, sliced;
    for (int d = 0; d < rank; ++d) {
      int64_t s = random() % shape[d];
      int64_t step = 1 + random() % 2;
      int64_t count = (shape[d] - s + step - 1) / step;
      start.push_back(s);
      stride.push_back(step);
      limit.push_back(s + (count - 1) * step + 1);
      sliced.push_back(count);
    }
    std::vector<int64_t> attrs = start;
    attrs.insert(attrs.end(), limit.begin(), limit.end());
    attrs.insert(attrs.end(), stride.begin(), stride.end());
    Instruction slice{OpCode::Slice, {0}, {1}, attrs, ""};
    REQUIRE(sliceView(shape, start, stride, sliced, view));
    CHECK(viewResult(view, shape) == cpuResult(slice, shape, sliced));
    cases += 3;
  }
  CHECK(cases == 900);
}

TEST_CASE("placement and reduction views", "[devicemath]") {
  // A 2x3 block placed at (1, 2) of a 4x6 result.
  StridedView view;
  REQUIRE(placementView({4, 6}, {2, 3}, {1, 2}, view));
  std::vector<int64_t> expected = {8, 9, 10, 14, 15, 16};
  for (int64_t i = 0; i < 6; ++i)
    CHECK(sourceOffset(view, i) == expected[i]);
  CHECK_FALSE(placementView({4, 6}, {2, 3}, {3, 2}, view));

  // Reducing dims {0, 2} of 2x3x4: result element j (over dim 1) starts at
  // j*4; the reduced walk visits {0,1,2,3,12,13,14,15}.
  StridedView kept, reduced;
  REQUIRE(reductionViews({2, 3, 4}, {0, 2}, kept, reduced));
  CHECK(viewElements(kept) == 3);
  CHECK(sourceOffset(kept, 2) == 8);
  std::vector<int64_t> walk;
  for (int64_t i = 0; i < viewElements(reduced); ++i)
    walk.push_back(sourceOffset(reduced, i));
  CHECK(walk == std::vector<int64_t>{0, 1, 2, 3, 12, 13, 14, 15});
  CHECK_FALSE(reductionViews({2, 3}, {0, 0}, kept, reduced));
  CHECK_FALSE(reductionViews({2, 3}, {2}, kept, reduced));
}

TEST_CASE("box copies through two views equal copyTensorBox, and "
          "contiguous boxes are recognised",
          "[devicemath]") {
  // The device communicator's copies: random boxes between random tensors,
  // against the host communicators' copyTensorBox.
  std::mt19937 random(11);
  int contiguous = 0;
  for (int trial = 0; trial < 600; ++trial) {
    int rank = static_cast<int>(random() % 5);
    std::vector<int64_t> box = randomShape(random, rank);
    std::vector<int64_t> srcShape(rank), dstShape(rank), srcOffset(rank),
        dstOffset(rank);
    for (int d = 0; d < rank; ++d) {
      srcShape[d] = box[d] + random() % 3;
      dstShape[d] = box[d] + random() % 3;
      srcOffset[d] = random() % (srcShape[d] - box[d] + 1);
      dstOffset[d] = random() % (dstShape[d] - box[d] + 1);
    }
    std::vector<float> source = iotaValues(product(srcShape));
    std::vector<float> expected(product(dstShape), -1.0f);
    std::vector<float> actual = expected;
    copyTensorBox(source.data(), srcShape, srcOffset, expected.data(),
                  dstShape, dstOffset, box, sizeof(float));
    StridedView from, to;
    REQUIRE(boxCopyViews(srcShape, srcOffset, dstShape, dstOffset, box, from,
                         to));
    boxCopyOnHost(source.data(), from, actual.data(), to, sizeof(float));
    INFO("trial " << trial);
    CHECK(actual == expected);
    // Contiguous: consecutive box elements are consecutive in memory.
    for (const StridedView *view : {&from, &to}) {
      bool consecutive = true;
      for (int64_t i = 1; i < viewElements(*view); ++i)
        consecutive &= sourceOffset(*view, i) == sourceOffset(*view, i - 1) + 1;
      CHECK(isContiguous(*view) == consecutive);
      contiguous += consecutive;
    }
  }
  CHECK(contiguous > 100); // Both kinds were exercised.
  StridedView from, to;
  CHECK_FALSE(boxCopyViews({4}, {3}, {4}, {0}, {2}, from, to));
}

TEST_CASE("planners refuse attributes that do not fit", "[devicemath]") {
  StridedView view;
  CHECK_FALSE(transposeView({2, 3}, {0, 0}, view));
  CHECK_FALSE(transposeView({2, 3}, {0}, view));
  CHECK_FALSE(broadcastView({2}, {3, 4}, {1}, view)); // 2 cannot expand to 4.
  CHECK_FALSE(broadcastView({2}, {3, 2}, {2}, view)); // Dim out of range.
  CHECK_FALSE(sliceView({4}, {3}, {1}, {2}, view));   // Runs past the end.
  CHECK_FALSE(transposeView(std::vector<int64_t>(9, 1),
                            {0, 1, 2, 3, 4, 5, 6, 7, 8}, view));
}

TEST_CASE("device bf16 and f16 conversions match the CPU backend's",
          "[devicemath]") {
  // Every 16-bit pattern widens identically; floats narrow identically
  // (all bf16/f16 values, their neighbours and random floats).
  std::mt19937 random(3);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float wide = device::halfToFloat(h);
    float cpuWide = partita::halfToFloat(h);
    CHECK((std::memcmp(&wide, &cpuWide, 4) == 0 ||
           (wide != wide && cpuWide != cpuWide)));
    float b = device::bf16ToFloat(h);
    CHECK(device::floatToBf16(b) == floatToBFloat16(b));
    if (wide == wide)
      CHECK(device::floatToHalf(wide) == partita::floatToHalf(wide));
  }
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(random());
    float value;
    std::memcpy(&value, &bits, 4);
    CHECK(device::floatToBf16(value) == floatToBFloat16(value));
    if (value == value)
      CHECK(device::floatToHalf(value) == partita::floatToHalf(value));
  }
}
