//===- BlockwiseRunTest.cpp - Runs that never hold a whole array ----------===//
//
// The blockwise path must give exactly what the whole-array path gives:
// each device's input block drawn alone equals the block cut from the
// whole random value (uneven shapes, multi-axis dimensions, partial sums,
// every dtype); outputs taken block by block rebuild what assembleOutputs
// returns (replicas checked, partial sums added); .npy regions read and
// written alone equal the whole file's; a run on CPU threads with blocks
// written straight into the buffers equals runOnCpuDevices.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Execution/BlockwiseRun.h"
#include "partita/Runtime/IO/ShardedArray.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

using namespace partita;

namespace {

Mesh makeMesh(const char *spec) {
  Expected<Mesh> parsed = parseMeshSpec(spec);
  REQUIRE(parsed.ok());
  return *parsed;
}

Sharding spec(const char *text, int rank) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  INFO(text);
  REQUIRE(sharding.ok());
  return *sharding;
}

/// A program with one input per (dtype, shape, sharding) and, as its
/// outputs, the inputs themselves (an identity: outputs alias nothing, the
/// instructions copy).
Executable identityProgram(
    const Mesh &mesh,
    const std::vector<std::tuple<DType, std::vector<int64_t>, Sharding>>
        &values) {
  Executable program;
  program.mesh = mesh;
  for (const auto &[dtype, shape, sharding] : values) {
    Sharding whole = sharding;
    whole.partialKind = PartialKind::None;
    whole.partialAxes.clear();
    std::vector<int64_t> local = localShape(mesh, whole, shape);
    auto in = static_cast<int32_t>(program.slots.size());
    program.slots.push_back({dtype, local});
    program.slots.push_back({dtype, local});
    std::string name = "v" + std::to_string(program.inputs.size());
    program.inputs.push_back({in, shape, sharding, name});
    program.outputs.push_back({in + 1, shape, sharding, name + "_out"});
    program.instructions.push_back({OpCode::Reshape, {in}, {in + 1}, {}, ""});
  }
  return program;
}

std::string temporaryDirectory(const char *name) {
  std::string directory = std::filesystem::temp_directory_path().string() +
                          "/partita-blockwise-" + name + "-" +
                          std::to_string(::getpid());
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

} // namespace

TEST_CASE("a device's random input block drawn alone is the whole value's",
          "[blockwise]") {
  Mesh mesh = makeMesh("data=2,model=3");
  Sharding rows = spec("P(\"data\", None)", 2);
  Sharding both = spec("P((\"data\", \"model\"), None)", 2);
  Sharding partial = spec("P(None, \"data\")", 2);
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"model"};
  Executable program = identityProgram(
      mesh, {{DType::F32, {7, 5}, rows},
             {DType::BF16, {13, 3}, both},
             {DType::F32, {4, 9}, partial},
             {DType::I32, {5, 4}, spec("P(None, \"model\")", 2)},
             {DType::Bool, {6}, spec("P(\"model\")", 1)},
             {DType::F16, {}, Sharding::replicated(0)}});
  program.inputs[0].role = "param";
  InputRegion region = randomInputRegions(program, 11);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    HostArray global = randomInput(program, i, 11, i);
    Expected<std::vector<HostArray>> cut =
        inputBlocksByDevice(program, i, global);
    REQUIRE(cut.ok());
    for (int64_t d = 0; d < mesh.numDevices(); ++d) {
      INFO("input " << i << " device " << d);
      Expected<HostArray> alone = deviceInputBlock(program, i, d, region);
      REQUIRE(alone.ok());
      CHECK(alone->shape == (*cut)[d].shape);
      CHECK(alone->bytes == (*cut)[d].bytes);
    }
  }
  // A different seed gives a different value.
  CHECK(randomInput(program, 0, 12, 0).bytes !=
        randomInput(program, 0, 11, 0).bytes);
}

TEST_CASE("outputs taken block by block rebuild the assembled outputs",
          "[blockwise]") {
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding partial = spec("P(\"data\", None)", 2);
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"model"};
  Executable program = identityProgram(
      mesh, {{DType::F32, {5, 3}, partial},
             {DType::I32, {3, 6}, spec("P(None, \"model\")", 2)}});
  std::vector<HostArray> globals = {randomInput(program, 0, 3, 0),
                                    randomInput(program, 1, 3, 1)};
  Expected<std::vector<std::vector<HostArray>>> blocks =
      deviceInputBlocks(program, globals);
  REQUIRE(blocks.ok());
  // The identity's outputs are its inputs' blocks.
  Expected<std::vector<HostArray>> assembled =
      assembleOutputs(program, *blocks);
  REQUIRE(assembled.ok());
  std::vector<HostArray> rebuilt;
  for (const HostArray &global : *assembled)
    rebuilt.push_back(HostArray::zeros(global.dtype, global.shape));
  int64_t taken = 0;
  REQUIRE(
      forEachOutputBlock(program, *blocks,
                         [&](size_t o, const std::vector<IndexRange> &ranges,
                             const HostArray &block) {
                           placeBlock(rebuilt[o], block, ranges);
                           ++taken;
                           return Status::success();
                         })
          .ok());
  // Output 0: 2 row blocks (the partial group summed); output 1: 2 column
  // blocks (each held by 2 replicas).
  CHECK(taken == 4);
  for (size_t o = 0; o < rebuilt.size(); ++o)
    CHECK(rebuilt[o].bytes == (*assembled)[o].bytes);
  // The identity returns its inputs: the column blocks exactly, the
  // partial sum's addends added back up to rounding.
  CHECK(rebuilt[1].bytes == globals[1].bytes);
  for (int64_t e = 0; e < globals[0].numElements(); ++e)
    CHECK(std::fabs(elementAsDouble(rebuilt[0], e) -
                    elementAsDouble(globals[0], e)) <= 1e-5);

  // A replica that disagrees is named, as assembleOutputs names it.
  (*blocks)[3][1].bytes[0] ^= 1;
  Status broken =
      forEachOutputBlock(program, *blocks,
                         [](size_t, const std::vector<IndexRange> &,
                            const HostArray &) { return Status::success(); });
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.message().find("replicas disagree") != std::string::npos);
  CHECK(broken.message().find("device 3") != std::string::npos);
}

TEST_CASE(".npy regions read and written alone", "[blockwise][npy]") {
  std::string directory = temporaryDirectory("npy");
  HostArray global = HostArray::zeros(DType::I32, {6, 5});
  for (int64_t e = 0; e < global.numElements(); ++e)
    setElementFromDouble(global, e, static_cast<double>(e * 7 % 23));
  std::string whole = directory + "/whole.npy";
  REQUIRE(writeNpy(whole, global).ok());
  Expected<NpyLayout> layout = readNpyLayout(whole);
  REQUIRE(layout.ok());
  CHECK(layout->dtype == DType::I32);
  CHECK(layout->shape == std::vector<int64_t>{6, 5});
  std::vector<IndexRange> ranges = {{2, 5}, {1, 4}};
  Expected<HostArray> region = readNpyRegion(whole, *layout, ranges, {4, 3});
  REQUIRE(region.ok());
  CHECK(region->bytes == extractBlock(global, ranges, {4, 3}).bytes);
  // Out of the array: an error naming the file, not a read past it.
  Expected<HostArray> outside =
      readNpyRegion(whole, *layout, {{4, 7}, {0, 5}}, {3, 5});
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.status().message().find(whole) == 0);

  // Written in four blocks, the file is the one writeNpy writes.
  std::string pieces = directory + "/pieces.npy";
  {
    Expected<std::unique_ptr<NpyRegionWriter>> writer =
        NpyRegionWriter::create(pieces, DType::I32, {6, 5});
    REQUIRE(writer.ok());
    for (std::vector<IndexRange> box :
         {std::vector<IndexRange>{{0, 3}, {0, 2}},
          std::vector<IndexRange>{{0, 3}, {2, 5}},
          std::vector<IndexRange>{{3, 6}, {0, 2}},
          std::vector<IndexRange>{{3, 6}, {2, 5}}})
      REQUIRE((*writer)->write(box, extractBlock(global, box, {3, 3})).ok());
    REQUIRE((*writer)->finish().ok());
  }
  Expected<std::string> a = readWholeFile(whole), b = readWholeFile(pieces);
  REQUIRE((a.ok() && b.ok()));
  CHECK(*a == *b);
  // A writer dropped before finish() leaves no file behind.
  {
    Expected<std::unique_ptr<NpyRegionWriter>> writer =
        NpyRegionWriter::create(directory + "/dropped.npy", DType::F32, {2});
    REQUIRE(writer.ok());
  }
  CHECK_FALSE(std::filesystem::exists(directory + "/dropped.npy"));
  CHECK_FALSE(std::filesystem::exists(directory + "/dropped.npy.partial"));
  std::filesystem::remove_all(directory);
}

TEST_CASE("a blockwise run on CPU threads equals the whole-array run",
          "[blockwise]") {
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding partial = spec("P(None, \"model\")", 2);
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"data"};
  Executable program = identityProgram(
      mesh, {{DType::F32, {9, 6}, spec("P(\"data\", \"model\")", 2)},
             {DType::F32, {3, 4}, partial},
             {DType::I32, {5}, Sharding::replicated(1)}});
  Expected<std::vector<HostArray>> inputs = randomInputs(program, 5);
  REQUIRE(inputs.ok());
  Expected<std::vector<HostArray>> expected = runOnCpuDevices(program, *inputs);
  REQUIRE(expected.ok());

  std::string directory = temporaryDirectory("run");
  Expected<std::unique_ptr<BlockwiseOutputs>> outputs =
      BlockwiseOutputs::create(program, directory + "/out", "");
  REQUIRE(outputs.ok());
  REQUIRE(runOnCpuDevicesBlockwise(program, randomInputRegions(program, 5),
                                   (*outputs)->sink())
              .ok());
  REQUIRE((*outputs)->finishWriting().ok());
  std::vector<std::string> lines = (*outputs)->summaryLines();
  REQUIRE(lines.size() == expected->size());
  for (size_t o = 0; o < expected->size(); ++o) {
    Expected<HostArray> written =
        readNpy(directory + "/out/result_" + std::to_string(o) + ".npy");
    REQUIRE(written.ok());
    CHECK(written->bytes == (*expected)[o].bytes);
  }
  // Integers sum exactly in any order: the line is summarizeArray's.
  CHECK(lines[2] == summarizeArray((*expected)[2]));

  // Compared with the files just written: exact. With a changed file: the
  // comparison fails, as expectOutputs() fails.
  std::string report;
  Expected<std::unique_ptr<BlockwiseOutputs>> again =
      BlockwiseOutputs::create(program, "", directory + "/out");
  REQUIRE(again.ok());
  REQUIRE(runOnCpuDevicesBlockwise(program, randomInputRegions(program, 5),
                                   (*again)->sink())
              .ok());
  CHECK((*again)->finishExpecting(report).ok());
  CHECK(report.find("max abs error 0,") != std::string::npos);
  Expected<std::unique_ptr<BlockwiseOutputs>> other =
      BlockwiseOutputs::create(program, "", directory + "/out");
  REQUIRE(other.ok());
  REQUIRE(runOnCpuDevicesBlockwise(program, randomInputRegions(program, 6),
                                   (*other)->sink())
              .ok());
  report.clear();
  CHECK_FALSE((*other)->finishExpecting(report).ok());
  CHECK(report.find("MISMATCH") != std::string::npos);
  std::filesystem::remove_all(directory);
}
