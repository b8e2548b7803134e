//===- BackendTest.cpp - The CPU backend ----------------------------------===//

#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Program/Backend.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

using namespace partita;

TEST_CASE("the CPU backend allocates, copies and runs kernels", "[backend]") {
  std::unique_ptr<Backend> backend = createCpuBackend();
  CHECK(std::string(backend->name()) == "cpu");
  std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40}, c(4, 0);
  Expected<void *> da = backend->allocate(16), db = backend->allocate(16),
                   dc = backend->allocate(16);
  REQUIRE((da.ok() && db.ok() && dc.ok()));
  REQUIRE(backend->copyToDevice(*da, a.data(), 16).ok());
  REQUIRE(backend->copyToDevice(*db, b.data(), 16).ok());
  TensorType type{DType::F32, {4}};
  Instruction add{OpCode::Add, {0, 1}, {2}, {}, ""};
  REQUIRE(backend->run(add, {type, type}, {*da, *db}, {type}, {*dc}, {}).ok());
  REQUIRE(backend->synchronize().ok());
  REQUIRE(backend->copyToHost(c.data(), *dc, 16).ok());
  CHECK(c == std::vector<float>{11, 22, 33, 44});
  // Overlapping copies within the device behave like memmove.
  REQUIRE(backend->copyOnDevice(static_cast<uint8_t *>(*dc) + 4, *dc, 12).ok());
  REQUIRE(backend->copyToHost(c.data(), *dc, 16).ok());
  CHECK(c == std::vector<float>{11, 11, 22, 33});
  // Errors come back as Status.
  CHECK_FALSE(backend->allocate(-1).ok());
  Instruction bad{OpCode::Einsum, {0, 1}, {2}, {}, "not a spec"};
  CHECK_FALSE(
      backend->run(bad, {type, type}, {*da, *db}, {type}, {*dc}, {}).ok());
  for (void *memory : {*da, *db, *dc})
    backend->release(memory);
}

TEST_CASE("runOnDevice takes an explicit backend", "[backend]") {
  Executable program;
  program.slots = {{DType::F32, {2}}, {DType::F32, {2}}};
  program.inputs = {{0, {2}, Sharding::replicated(1), "x"}};
  program.outputs = {{1, {2}, Sharding::replicated(1), "y"}};
  program.instructions = {{OpCode::Neg, {0}, {1}, {}, ""}};
  std::unique_ptr<Backend> backend = createCpuBackend();
  std::vector<HostArray> outputs;
  HostArray x = HostArray::fromValues<float>(DType::F32, {2}, {1.5f, -2});
  REQUIRE(runOnDevice(program, 0, nullptr, {x}, outputs, backend.get()).ok());
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].element<float>(0) == -1.5f);
  CHECK(outputs[0].element<float>(1) == 2.0f);
}

TEST_CASE("a CPU backend's released block goes to the next one",
          "[backend]") {
  // A size no other test allocates, so the cached block is this one.
  constexpr int64_t bytes = (3 << 20) + 72;
  void *first = nullptr;
  {
    std::unique_ptr<Backend> backend = createCpuBackend();
    Expected<void *> block = backend->allocate(bytes);
    REQUIRE(block.ok());
    first = *block;
    std::vector<uint8_t> ones(bytes, 0xff);
    REQUIRE(backend->copyToDevice(first, ones.data(), bytes).ok());
    backend->release(first);
    CHECK(backend->peakBytes() == bytes);
  }
  std::unique_ptr<Backend> backend = createCpuBackend();
  Expected<void *> again = backend->allocate(bytes);
  REQUIRE(again.ok());
  // The cache hands the same block back (no fresh pages), as it was left.
  CHECK(*again == first);
  std::vector<uint8_t> read(bytes, 1);
  REQUIRE(backend->copyToHost(read.data(), *again, bytes).ok());
  CHECK(std::all_of(read.begin(), read.end(),
                    [](uint8_t byte) { return byte == 0xff; }));
  CHECK(backend->peakBytes() == bytes);
  backend->release(*again);
}

TEST_CASE("a stepwise run keeps values on the devices between steps",
          "[backend]") {
  // y = -x, carried into x: the value flips sign every step; a scalar
  // input s added to the step's other output comes from the host each step.
  Executable program;
  Expected<Mesh> mesh = Mesh::create({{"data", 2}});
  REQUIRE(mesh.ok());
  program.mesh = *mesh;
  program.slots = {{DType::F32, {2}}, {DType::F32, {2}}, {DType::F32, {2}},
                   {DType::F32, {2}}};
  Sharding split;
  split.dims = {DimSharding{{"data"}, false}};
  program.inputs = {{0, {4}, split, "x"}, {2, {4}, split, "s"}};
  program.outputs = {{1, {4}, split, "y"}, {3, {4}, split, "z"}};
  program.instructions = {{OpCode::Neg, {0}, {1}, {}, ""},
                          {OpCode::Add, {1, 2}, {3}, {}, ""}};
  std::vector<HostArray> global = {
      HostArray::fromValues<float>(DType::F32, {4}, {1, 2, 3, 4}),
      HostArray::fromValues<float>(DType::F32, {4}, {0, 0, 0, 0})};
  Expected<std::vector<std::vector<HostArray>>> blocks =
      deviceInputBlocks(program, global);
  REQUIRE(blocks.ok());
  StepwiseRun run;
  run.steps = 3;
  run.carried = {{0, 0}};
  run.readEachStep = {1};
  run.readAtEnd = {0};
  std::vector<float> seen;
  run.before = [&](int64_t step, auto &uploads) {
    for (int64_t d = 0; d < 2; ++d)
      uploads[d].emplace_back(
          1, HostArray::fromValues<float>(DType::F32, {2},
                                          {float(10 * step), float(10 * step)}));
    return Status::success();
  };
  run.after = [&](int64_t step, std::vector<std::vector<HostArray>> &outputs) {
    seen.push_back(outputs[1][0].element<float>(1)); // z[3] on device 1
    return Status::success();
  };
  std::vector<std::vector<HostArray>> again = *blocks;
  REQUIRE(runDevicesStepwise(program, std::move(*blocks), run).ok());
  // Each device's blocks are let go once uploaded.
  for (const std::vector<HostArray> &device : *blocks)
    CHECK(device.empty());
  // x: 4 -> -4 -> 4 -> -4; z = y + 10 * step.
  CHECK(seen == std::vector<float>{-4, 14, 16});
  REQUIRE(run.finalInputs.size() == 2);
  CHECK(run.finalInputs[1][0].element<float>(1) == -4);

  // A callback's failure stops the run and is its result; the devices'
  // values are still downloaded.
  int64_t stepsRun = 0;
  run.after = [&](int64_t step, std::vector<std::vector<HostArray>> &) {
    ++stepsRun;
    return step == 1 ? Status::error("stop here") : Status::success();
  };
  Status stopped = runDevicesStepwise(program, std::move(again), run);
  CHECK(!stopped.ok());
  CHECK(stopped.message() == "stop here");
  CHECK(stepsRun == 2);
  CHECK(run.finalInputs[0][0].element<float>(0) == 1);
}

TEST_CASE("a repeated run says where each step went", "[backend]") {
  // y = all_reduce(-x) over two devices, three runs.
  Executable program;
  Expected<Mesh> mesh = Mesh::create({{"data", 2}});
  REQUIRE(mesh.ok());
  program.mesh = *mesh;
  program.slots = {{DType::F32, {64}}, {DType::F32, {64}}, {DType::F32, {64}}};
  program.inputs = {{0, {64}, Sharding::replicated(1), "x"}};
  program.outputs = {{2, {64}, Sharding::replicated(1), "y"}};
  program.instructions = {{OpCode::Neg, {0}, {1}, {}, ""},
                          {OpCode::AllReduce, {1}, {2}, {0}, "data"}};
  std::vector<std::vector<HostArray>> inputs(
      2, {HostArray::zeros(DType::F32, {64})});
  std::vector<std::vector<HostArray>> outputs;
  InProcessCommunicator communicator(program.mesh);
  RunStatistics statistics;
  statistics.repeats = 3;
  REQUIRE(runDevicesAsThreads(program, {0, 1}, &communicator, inputs, outputs,
                              &statistics)
              .ok());
  REQUIRE(statistics.stepTimes.size() == 3);
  REQUIRE(statistics.stepSeconds.size() == 3);
  for (size_t s = 0; s < 3; ++s) {
    const StepTimes &times = statistics.stepTimes[s];
    CHECK(times.computing >= 0);
    CHECK(times.communicating > 0);
    CHECK(times.waiting >= 0);
    CHECK(times.waiting <= times.communicating + 1e-6);
    CHECK(times.computing + times.communicating <=
          statistics.stepSeconds[s] + 1e-6);
  }
}
