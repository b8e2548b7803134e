//===- AsyncCollectivesTest.cpp - Started, then finished ------------------===//
//
// Asynchronous collectives: the in-process communicator's start/finish
// (several in flight per device, in place, failures), the interpreter's
// waits, and the Executable loader's checks of them.

#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Program/ExecutableFile.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <numeric>

#include "CommunicatorTestSupport.h"

using namespace partita;
using namespace partita::test;

namespace {

CollectiveCall allReduceCall(int64_t device, std::vector<std::string> axes,
                             const float *input, float *output,
                             int64_t count) {
  CollectiveCall call;
  call.kind = CommunicatorOp::AllReduce;
  call.deviceId = device;
  call.axes = std::move(axes);
  call.input = {input, DType::F32, {count}};
  call.output = {output, DType::F32, {count}};
  return call;
}

} // namespace

TEST_CASE("asynchronous collectives: several in flight per device, finished "
          "in any order, beside synchronous ones",
          "[runtime][communicator][async]") {
  Mesh mesh = *Mesh::create({{"data", 2}, {"model", 4}}, {3, 1, 2, 0, 7, 5, 6, 4});
  InProcessCommunicator comm(mesh, std::chrono::seconds(20));
  // One job per collective, or jobs per group position and step that
  // workers and finishing devices share.
  comm.setSingleThreadedBytes(GENERATE(int64_t(1) << 20, int64_t(0)));
  constexpr int rounds = 20;
  constexpr int64_t count = 3000; // Above and below a tile, several slices.
  const std::vector<std::string> axesSets[] = {
      {"data"}, {"model"}, {"model", "data"}};
  // inputs[device][round][which], outputs likewise; in place for which == 2.
  std::vector<std::vector<std::vector<std::vector<float>>>> inputs(
      8), outputs(8);
  std::vector<std::vector<float>> gathered(8);
  std::vector<Status> statuses = runOnDevices(8, [&](int64_t device) {
    inputs[device].assign(rounds, std::vector<std::vector<float>>(3));
    outputs[device].assign(rounds, std::vector<std::vector<float>>(3));
    for (int r = 0; r < rounds; ++r) {
      std::vector<PendingCollective> pending;
      for (int which = 0; which < 3; ++which) {
        std::vector<float> &in = inputs[device][r][which];
        in.resize(count);
        for (int64_t i = 0; i < count; ++i)
          in[i] = static_cast<float>(device * 7 + r * 3 + which + i % 5);
        std::vector<float> &out = outputs[device][r][which];
        out.assign(count, -1.0f);
        float *target = which == 2 ? in.data() : out.data();
        pending.push_back(comm.startCollective(allReduceCall(
            device, axesSets[which], in.data(), target, count)));
        if (!pending.back().status)
          return pending.back().status;
      }
      // A synchronous all_gather while three are in flight.
      float mine = static_cast<float>(device + r);
      gathered[device].assign(8, 0.0f);
      if (Status status = comm.allGather(
              device, {"data", "model"}, 0, {&mine, DType::F32, {1}},
              {gathered[device].data(), DType::F32, {8}});
          !status)
        return status;
      std::vector<int64_t> order =
          referenceGroup(mesh, device, {"data", "model"}).members;
      for (int64_t p = 0; p < 8; ++p)
        if (gathered[device][p] != static_cast<float>(order[p] + r))
          return Status::error("all_gather beside async collectives is wrong");
      for (int which : {2, 0, 1})
        if (Status status = comm.finishCollective(pending[which]); !status)
          return status;
      // Finishing twice returns the same status.
      if (!comm.finishCollective(pending[0]))
        return Status::error("a second finish failed");
      // Record the in-place result where the others are.
      outputs[device][r][2] = inputs[device][r][2];
    }
    return Status::success();
  });
  for (int64_t device = 0; device < 8; ++device)
    REQUIRE(statuses[device].message() == "");
  for (int64_t device = 0; device < 8; ++device)
    for (int r = 0; r < rounds; ++r)
      for (int which = 0; which < 3; ++which) {
        std::vector<int64_t> members =
            referenceGroup(mesh, device, axesSets[which]).members;
        for (int64_t i : {int64_t(0), int64_t(1), count / 2, count - 1}) {
          float expected = 0;
          for (int64_t member : members)
            expected += static_cast<float>(member * 7 + r * 3 + which + i % 5);
          CHECK(outputs[device][r][which][i] == expected);
        }
      }
}

TEST_CASE("an asynchronous start returns before the group arrives; finishing "
          "times out naming the devices that never came",
          "[runtime][communicator][async]") {
  InProcessCommunicator comm(*Mesh::create({{"x", 4}}),
                             std::chrono::milliseconds(100));
  float value = 1, result = 0;
  auto started = std::chrono::steady_clock::now();
  PendingCollective pending =
      comm.startCollective(allReduceCall(2, {"x"}, &value, &result, 1));
  REQUIRE(pending.status.ok());
  CHECK(pending.state != nullptr);
  CHECK(std::chrono::steady_clock::now() - started <
        std::chrono::milliseconds(100));
  Status finished = comm.finishCollective(pending);
  CHECK(finished.message() ==
        "all_reduce sum over mesh axes [x] on f32[1]: group [0, 1, 2, 3] "
        "(call #0 on this group) made no progress for 100 ms; arrived: "
        "devices [2]; did not arrive: devices [0, 1, 3]");
  CHECK(comm.finishCollective(pending).message() == finished.message());
}

TEST_CASE("abort releases a device finishing an incomplete collective",
          "[runtime][communicator][async]") {
  InProcessCommunicator comm(*Mesh::create({{"x", 2}}));
  float value = 1, result = 0;
  PendingCollective pending =
      comm.startCollective(allReduceCall(0, {"x"}, &value, &result, 1));
  REQUIRE(pending.status.ok());
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    comm.abort(Status::error("device 1: kernel failed"));
  });
  Status finished = comm.finishCollective(pending);
  aborter.join();
  CHECK(finished.message().find("the communicator was aborted: device 1: "
                                "kernel failed") != std::string::npos);
}

TEST_CASE("devices that start a collective differently fail the group",
          "[runtime][communicator][async]") {
  InProcessCommunicator comm(*Mesh::create({{"x", 2}}),
                             std::chrono::seconds(20));
  std::vector<Status> statuses = runOnDevices(2, [&](int64_t device) {
    float value = 1, result = 0;
    CollectiveCall call = allReduceCall(device, {"x"}, &value, &result, 1);
    if (device == 0) {
      PendingCollective pending = comm.startCollective(call);
      if (!pending.status)
        return pending.status;
      return comm.finishCollective(pending);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return dispatchCollective(comm, call);
  });
  for (const Status &status : statuses)
    CHECK(status.message().find("devices disagree on call #0 of group [0, 1]: "
                                "device 0 called all_reduce sum over mesh "
                                "axes [x] on f32[1] (asynchronously) but "
                                "device 1 called") != std::string::npos);
}

namespace {

/// y = all_reduce(x) over `x`, waited for after an unrelated negation;
/// `inPlace`: the all_reduce writes x's slot.
Executable asyncProgram(bool inPlace) {
  Executable program;
  Mesh mesh = *Mesh::create({{"x", 4}});
  program.mesh = mesh;
  program.slots = {{DType::F32, {8}}, {DType::F32, {8}}, {DType::F32, {8}},
                   {DType::F32, {8}}};
  Sharding partial = Sharding::replicated(1);
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"x"};
  program.inputs = {{0, {8}, partial, "x"}, {1, {8}, Sharding::replicated(1), "z"}};
  int32_t reduced = inPlace ? 0 : 2;
  program.outputs = {{reduced, {8}, Sharding::replicated(1), "y"},
                     {3, {8}, Sharding::replicated(1), "nz"}};
  Instruction wait{OpCode::Wait, {reduced}, {}, {2}, ""};
  if (!inPlace)
    wait.operands.push_back(0);
  program.instructions = {{OpCode::AllReduce, {0}, {reduced}, {0}, "x"},
                          {OpCode::Neg, {1}, {3}, {}, ""},
                          wait};
  return program;
}

} // namespace

TEST_CASE("the interpreter starts a waited-for collective and finishes it at "
          "its wait",
          "[runtime][async]") {
  HostArray x = HostArray::fromValues<float>(
      DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostArray z = HostArray::fromValues<float>(
      DType::F32, {8}, {1, -1, 2, -2, 3, -3, 4, -4});
  for (bool inPlace : {false, true}) {
    Executable program = asyncProgram(inPlace);
    Executable synchronous = program;
    synchronous.instructions.pop_back();
    Expected<std::vector<HostArray>> async = runOnCpuDevices(program, {x, z});
    Expected<std::vector<HostArray>> sync =
        runOnCpuDevices(synchronous, {x, z});
    REQUIRE(async.ok());
    REQUIRE(sync.ok());
    CHECK((*async)[0].bytes == (*sync)[0].bytes);
    CHECK((*async)[1].bytes == (*sync)[1].bytes);
    // Repeated runs (an in-place program sees its own update).
    RunStatistics statistics;
    statistics.repeats = 3;
    REQUIRE(runOnCpuDevices(program, {x, z}, &statistics).ok());
    REQUIRE(statistics.stepTimes.size() == 3);
    for (const StepTimes &times : statistics.stepTimes) {
      CHECK(times.communicating >= 0);
      CHECK(times.exposed >= 0);
    }
    // The loader accepts it.
    Expected<Executable> back =
        deserializeExecutable(serializeExecutable(program), "mem");
    CHECK(back.status().message() == "");
  }
}

TEST_CASE("the interpreter refuses a wait with no started collective",
          "[runtime][async]") {
  Executable program = asyncProgram(false);
  // The wait names the negation, which starts nothing.
  program.instructions[2].ints = {1};
  HostArray x = HostArray::zeros(DType::F32, {8});
  Expected<std::vector<HostArray>> result = runOnCpuDevices(program, {x, x});
  CHECK(result.status().message().find(
            "wait: its collective (instruction 1) was not started") !=
        std::string::npos);
}

TEST_CASE("the loader checks every wait", "[runtime][async]") {
  auto refused = [](Executable program) {
    Expected<Executable> back =
        deserializeExecutable(serializeExecutable(program), "mem");
    REQUIRE_FALSE(back.ok());
    return back.status().message();
  };
  Executable base = asyncProgram(false);
  Executable notCollective = base;
  notCollective.instructions[2].ints = {1};
  CHECK(refused(notCollective).find("names instruction 1, neg, not a "
                                    "collective that moves data") !=
        std::string::npos);
  Executable outOfRange = base;
  outOfRange.instructions[2].ints = {7};
  CHECK(refused(outOfRange).find("does not name an earlier instruction") !=
        std::string::npos);
  Executable twice = base;
  twice.instructions.push_back(twice.instructions[2]);
  twice.instructions.back().ints = {3};
  CHECK(refused(twice).find("is waited for twice") != std::string::npos);
  Executable missingOperand = base;
  missingOperand.instructions[2].operands = {2};
  CHECK(refused(missingOperand).find("must list its collective's result") !=
        std::string::npos);
  // A wait inside a loop body for a collective outside it.
  Executable acrossLoop = base;
  acrossLoop.slots.push_back({DType::I32, {}});
  int32_t counter = static_cast<int32_t>(acrossLoop.slots.size()) - 1;
  Instruction loop{OpCode::Loop, {}, {}, {1, 1, counter}, ""};
  acrossLoop.instructions = {base.instructions[0], base.instructions[1], loop,
                             base.instructions[2]};
  acrossLoop.instructions[3].ints = {3};
  CHECK(refused(acrossLoop).find("are not in the same loop body") !=
        std::string::npos);
}
