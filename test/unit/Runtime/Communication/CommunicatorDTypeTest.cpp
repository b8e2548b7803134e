//===- CommunicatorDTypeTest.cpp - Reductions and failures ----------------===//
//
// The element types of all_reduce (f64, bf16 and f16 rounding, wrapping
// integer sums, and/or on integers and bools) and the failure paths of the
// in-process communicator: timeouts, abort, devices that disagree, bad
// buffers.
//
//===----------------------------------------------------------------------===//
#include "CommunicatorTestSupport.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>

using namespace partita;
using namespace partita::test;

namespace {

Mesh lineMesh(int64_t n) { return *Mesh::create({{"x", n}}); }

/// all_reduce of one array per device over a 1-D mesh, once on one thread
/// and once on all; returns device 0's output after checking that every
/// device in both runs got the same bytes.
HostArray allReduceOnLine(ReductionCode kind,
                          const std::vector<HostArray> &inputs) {
  auto n = static_cast<int64_t>(inputs.size());
  std::vector<HostArray> firstRun;
  for (int64_t singleThreadedBytes : {int64_t(1) << 20, int64_t(0)}) {
    InProcessCommunicator comm(lineMesh(n), std::chrono::seconds(20));
    comm.setSingleThreadedBytes(singleThreadedBytes);
    std::vector<HostArray> outputs;
    for (const HostArray &input : inputs)
      outputs.push_back(HostArray::zeros(input.dtype, input.shape));
    std::vector<Status> statuses = runOnDevices(n, [&](int64_t device) {
      return comm.allReduce(device, {"x"}, kind, inputRef(inputs[device]),
                            outputRef(outputs[device]));
    });
    for (int64_t device = 0; device < n; ++device) {
      REQUIRE(statuses[device].message() == "");
      CHECK(outputs[device] == outputs[0]);
    }
    if (firstRun.empty())
      firstRun = outputs;
    else
      CHECK(outputs[0] == firstRun[0]);
  }
  return firstRun[0];
}

/// The bf16 nearest to `value`, ties to even, found by comparing the two
/// candidates around it (not by the bit trick the library uses).
uint16_t nearestBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  auto low = static_cast<uint16_t>(bits >> 16);
  auto high = static_cast<uint16_t>(low + 1);
  double below = std::fabs(static_cast<double>(bfloat16ToFloat(low)) - value);
  double above = std::fabs(static_cast<double>(bfloat16ToFloat(high)) - value);
  if (below < above)
    return low;
  if (above < below)
    return high;
  return (low & 1) ? high : low;
}

uint16_t bf16Of(float value) { return nearestBf16(value); }

} // namespace

TEST_CASE("bf16 all_reduce accumulates in f32 and rounds once to nearest "
          "even",
          "[runtime][communicator]") {
  // 1 + 3 * 2^-8 lies halfway between two bf16 values (ulp 2^-7 at 1): the
  // tie goes to the even 1 + 2^-6. Adding one device at a time in bf16
  // would have given 1.0. 1 + 3 * 2^-9 rounds up to 1 + 2^-7.
  std::vector<float> first = {1.0f, 1.0f, 1.0f, -2.5f};
  std::vector<float> rest = {std::ldexp(1.0f, -8), std::ldexp(1.0f, -9),
                             std::ldexp(1.0f, -12), 0.375f};
  std::vector<HostArray> inputs;
  for (int device = 0; device < 4; ++device) {
    std::vector<uint16_t> values;
    for (size_t k = 0; k < first.size(); ++k)
      values.push_back(bf16Of(device == 0 ? first[k] : rest[k]));
    inputs.push_back(HostArray::fromValues(DType::BF16, {4}, values));
  }
  HostArray result = allReduceOnLine(ReductionCode::Sum, inputs);
  CHECK(bfloat16ToFloat(result.element<uint16_t>(0)) ==
        1.0f + std::ldexp(1.0f, -6));
  CHECK(bfloat16ToFloat(result.element<uint16_t>(1)) ==
        1.0f + std::ldexp(1.0f, -7));
  CHECK(bfloat16ToFloat(result.element<uint16_t>(2)) == 1.0f);
  CHECK(bfloat16ToFloat(result.element<uint16_t>(3)) == -1.375f);

  // Many random-ish values: the f32 sum in group order, rounded once.
  std::vector<HostArray> noisy;
  for (int device = 0; device < 8; ++device) {
    std::vector<uint16_t> values;
    for (int k = 0; k < 257; ++k)
      values.push_back(bf16Of(std::sin(device * 7.0f + k * 0.37f) * 3.0f));
    noisy.push_back(HostArray::fromValues(DType::BF16, {257}, values));
  }
  HostArray sum = allReduceOnLine(ReductionCode::Sum, noisy);
  for (int64_t k = 0; k < 257; ++k) {
    float accumulator = 0.0f;
    for (int device = 0; device < 8; ++device)
      accumulator += bfloat16ToFloat(noisy[device].element<uint16_t>(k));
    CHECK(sum.element<uint16_t>(k) == nearestBf16(accumulator));
  }
}

TEST_CASE("f16 and f64 all_reduce", "[runtime][communicator]") {
  // f16: ulp at 1 is 2^-10; 1 + 3 * 2^-11 ties to the even 1 + 2^-9.
  const uint16_t one = 0x3c00, eighth = 0x3000, tiny = 0x1000; // 2^-11
  std::vector<HostArray> halves;
  for (int device = 0; device < 4; ++device)
    halves.push_back(HostArray::fromValues(
        DType::F16, {2},
        std::vector<uint16_t>{device == 0 ? one : tiny, eighth}));
  HostArray half = allReduceOnLine(ReductionCode::Sum, halves);
  CHECK(halfToFloat(half.element<uint16_t>(0)) == 1.0f + std::ldexp(1.0f, -9));
  CHECK(halfToFloat(half.element<uint16_t>(1)) == 0.5f);
  HostArray halfMax = allReduceOnLine(ReductionCode::Max, halves);
  CHECK(halfMax.element<uint16_t>(0) == one);

  std::vector<HostArray> doubles;
  for (int device = 0; device < 3; ++device)
    doubles.push_back(HostArray::fromValues(
        DType::F64, {2}, std::vector<double>{1e-17 * device, -1.0 * device}));
  HostArray sum = allReduceOnLine(ReductionCode::Sum, doubles);
  CHECK(sum.element<double>(0) == (0.0 + 1e-17) + 2e-17);
  CHECK(sum.element<double>(1) == -3.0);
  CHECK(allReduceOnLine(ReductionCode::Min, doubles).element<double>(1) ==
        -2.0);
}

TEST_CASE("integer and bool reductions", "[runtime][communicator]") {
  std::vector<HostArray> words, bytes, longs, bools;
  const int32_t patterns[] = {0x0f0f, 0x00ff, 0x0ff0, -1};
  for (int device = 0; device < 4; ++device) {
    words.push_back(HostArray::fromValues(
        DType::I32, {2}, std::vector<int32_t>{patterns[device], device - 2}));
    bytes.push_back(HostArray::fromValues(
        DType::I8, {1}, std::vector<int8_t>{int8_t(device == 0 ? 127 : 1)}));
    longs.push_back(HostArray::fromValues(
        DType::I64, {1}, std::vector<int64_t>{int64_t(1) << (40 + device)}));
    bools.push_back(HostArray::fromValues(
        DType::Bool, {3},
        std::vector<uint8_t>{1, uint8_t(device == 2), uint8_t(device != 2)}));
  }
  HostArray andWords = allReduceOnLine(ReductionCode::And, words);
  CHECK(andWords.element<int32_t>(0) == (0x0f0f & 0x00ff & 0x0ff0));
  HostArray orWords = allReduceOnLine(ReductionCode::Or, words);
  CHECK(orWords.element<int32_t>(0) == -1);
  CHECK(orWords.element<int32_t>(1) == (-2 | -1 | 0 | 1));
  CHECK(allReduceOnLine(ReductionCode::Sum, words).element<int32_t>(1) == -2);
  CHECK(allReduceOnLine(ReductionCode::Max, words).element<int32_t>(1) == 1);
  CHECK(allReduceOnLine(ReductionCode::Min, words).element<int32_t>(0) == -1);
  // 127 + 1 + 1 + 1 wraps around to -126.
  CHECK(allReduceOnLine(ReductionCode::Sum, bytes).element<int8_t>(0) == -126);
  CHECK(allReduceOnLine(ReductionCode::Sum, longs).element<int64_t>(0) ==
        (int64_t(15) << 40));
  HostArray boolAnd = allReduceOnLine(ReductionCode::And, bools);
  HostArray boolOr = allReduceOnLine(ReductionCode::Or, bools);
  HostArray boolSum = allReduceOnLine(ReductionCode::Sum, bools);
  CHECK(boolAnd.bytes == std::vector<uint8_t>{1, 0, 0});
  CHECK(boolOr.bytes == std::vector<uint8_t>{1, 1, 1});
  CHECK(boolSum.bytes == boolOr.bytes);
}

TEST_CASE("and/or on floating point is an error for the whole group",
          "[runtime][communicator]") {
  InProcessCommunicator comm(lineMesh(2), std::chrono::seconds(20));
  std::vector<HostArray> inputs(2, HostArray::zeros(DType::F32, {3}));
  std::vector<HostArray> outputs = inputs;
  std::vector<Status> statuses = runOnDevices(2, [&](int64_t device) {
    return comm.allReduce(device, {"x"}, ReductionCode::And,
                          inputRef(inputs[device]), outputRef(outputs[device]));
  });
  for (const Status &status : statuses)
    CHECK(status.message().find("reduction 'and' needs integer or bool "
                                "elements") != std::string::npos);
}

TEST_CASE("a rendezvous without progress times out naming the missing "
          "devices",
          "[runtime][communicator]") {
  Mesh mesh = *Mesh::create({{"data", 2}, {"model", 2}}, {3, 2, 1, 0});
  InProcessCommunicator comm(mesh, std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> statuses = runOnDevices(4, [&](int64_t device) {
    if (device == 1)
      return Status::success(); // Never calls.
    float value = 1.0f, result = 0.0f;
    return comm.allReduce(device, {"model", "data"}, ReductionCode::Sum,
                          {&value, DType::F32, {1}},
                          {&result, DType::F32, {1}});
  });
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds(5));
  const std::string expected =
      "all_reduce sum over mesh axes [model, data] on f32[1]: group "
      "[3, 1, 2, 0] (call #0 on this group) made no progress for 100 ms; "
      "arrived: devices [3, 2, 0]; did not arrive: devices [1]";
  for (int64_t device : {0, 2, 3})
    CHECK(statuses[device].message() == expected);

  // The latecomer finds the failed rendezvous instead of waiting again.
  float value = 1.0f, result = 0.0f;
  Status late =
      comm.allReduce(1, {"model", "data"}, ReductionCode::Sum,
                     {&value, DType::F32, {1}}, {&result, DType::F32, {1}});
  CHECK(late.message() == expected);
}

TEST_CASE("abort releases every waiting device and fails later calls",
          "[runtime][communicator]") {
  InProcessCommunicator comm(lineMesh(4)); // Default 60 s timeout.
  CHECK(comm.timeout() == std::chrono::seconds(60));
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> statuses = runOnDevices(4, [&](int64_t device) {
    if (device == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort(Status::error("device 3: kernel failed"));
      return Status::success();
    }
    std::vector<int32_t> block(2, 1), gathered(8);
    return comm.allGather(device, {"x"}, 0, {block.data(), DType::I32, {2}},
                          {gathered.data(), DType::I32, {8}});
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  for (int64_t device = 0; device < 3; ++device)
    CHECK(statuses[device].message() ==
          "all_gather over mesh axes [x] dim 0 on i32[2] on device " +
              std::to_string(device) +
              ": the communicator was aborted: device 3: kernel failed");
  CHECK(comm.aborted());
  int32_t value = 0, result = 0;
  Status later =
      comm.allReduce(0, {"x"}, ReductionCode::Max, {&value, DType::I32, {}},
                     {&result, DType::I32, {}});
  CHECK(later.message().find("aborted: device 3: kernel failed") !=
        std::string::npos);
}

TEST_CASE("devices that disagree or pass bad buffers fail the whole group "
          "at once",
          "[runtime][communicator]") {
  InProcessCommunicator comm(lineMesh(2)); // No test may wait 60 s.
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> statuses = runOnDevices(2, [&](int64_t device) {
    std::vector<float> in(4, 1.0f), out(8);
    if (device == 0)
      return comm.allGather(device, {"x"}, 0, {in.data(), DType::F32, {4}},
                            {out.data(), DType::F32, {8}});
    return comm.allReduce(device, {"x"}, ReductionCode::Sum,
                          {in.data(), DType::F32, {4}},
                          {out.data(), DType::F32, {4}});
  });
  // Whoever arrives second reports the disagreement, for both.
  const std::string &disagreement = statuses[0].message();
  CHECK(statuses[1].message() == disagreement);
  CHECK(disagreement.rfind("devices disagree on call #0 of group [0, 1]: ",
                           0) == 0);
  CHECK(disagreement.find("device 1 called all_reduce sum over mesh axes [x] "
                          "on f32[4]") != std::string::npos);
  CHECK(disagreement.find("device 0 called all_gather over mesh axes [x] "
                          "dim 0 on f32[4]") != std::string::npos);

  statuses = runOnDevices(2, [&](int64_t device) {
    std::vector<float> in(4, 1.0f), out(8);
    int64_t outputRows = device == 1 ? 1 : 2; // Device 1 is wrong.
    return comm.reduceScatter(device, {"x"}, ReductionCode::Sum, 0,
                              {in.data(), DType::F32, {4}},
                              {out.data(), DType::F32, {outputRows}});
  });
  const std::string badShape =
      "reduce_scatter sum over mesh axes [x] dim 0 on f32[4] on device 1: "
      "the output shape is [1] but the input shape [4] in a group of 2 "
      "gives [2]; failing group [0, 1] (call #1 on this group)";
  CHECK(statuses[1].message() == badShape);
  CHECK(statuses[0].message() == badShape);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

  float value = 0.0f;
  Status unknownAxis =
      comm.allReduce(0, {"y"}, ReductionCode::Sum, {&value, DType::F32, {}},
                     {&value, DType::F32, {}});
  CHECK(unknownAxis.message() ==
        "all_reduce sum over mesh axes [y] on f32[] on device 0: unknown "
        "mesh axis 'y' on mesh x=2");
  std::vector<float> big(4);
  Status overlapping =
      comm.allGather(0, {"x"}, 0, {big.data(), DType::F32, {2}},
                     {big.data(), DType::F32, {4}});
  CHECK(overlapping.message().find("overlap") != std::string::npos);
}

TEST_CASE("collective_permute rejects repeated positions",
          "[runtime][communicator]") {
  InProcessCommunicator comm(lineMesh(3));
  std::vector<Status> statuses = runOnDevices(3, [&](int64_t device) {
    int32_t value = 0, result = 0;
    return comm.collectivePermute(device, {"x"}, {{0, 1}, {2, 1}},
                                  {&value, DType::I32, {}},
                                  {&result, DType::I32, {}});
  });
  for (const Status &status : statuses)
    CHECK(status.message().find("position 1 appears twice as a target") !=
          std::string::npos);
}
