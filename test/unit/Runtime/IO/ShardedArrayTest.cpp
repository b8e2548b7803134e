//===- ShardedArrayTest.cpp - Slicing and assembling blocks ---------------===//
//
// Slicing a global array into padded device blocks and assembling it back:
// hand-checked blocks, round trips over many layouts (uneven, empty trailing
// shards, multi-axis dimensions, explicit device ids, every dtype), and the
// replica check.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/ShardedArray.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

Mesh makeMesh(const char *spec, std::vector<int64_t> ids = {}) {
  Expected<Mesh> parsed = parseMeshSpec(spec);
  REQUIRE(parsed.ok());
  Expected<Mesh> mesh = Mesh::create(parsed->axes(), std::move(ids));
  REQUIRE(mesh.ok());
  return *mesh;
}

Sharding spec(const char *text, int rank) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  INFO(text);
  REQUIRE(sharding.ok());
  return *sharding;
}

/// An i32 array whose element k is k + 1 (so zero means padding).
HostArray countingArray(std::vector<int64_t> shape) {
  HostArray array = HostArray::zeros(DType::I32, std::move(shape));
  for (int64_t k = 0; k < array.numElements(); ++k) {
    int32_t value = static_cast<int32_t>(k + 1);
    std::memcpy(array.bytes.data() + 4 * k, &value, 4);
  }
  return array;
}

std::vector<int32_t> valuesOf(const HostArray &array) {
  std::vector<int32_t> values;
  for (int64_t k = 0; k < array.numElements(); ++k)
    values.push_back(array.element<int32_t>(k));
  return values;
}

} // namespace

TEST_CASE("device blocks of an uneven 2-D array, by hand", "[sharded]") {
  // 5x7 over data=2 (rows, chunk 3) and model=4 (columns, chunk 2).
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding sharding = spec("P(\"data\", \"model\")", 2);
  HostArray global = countingArray({5, 7});
  Expected<std::vector<HostArray>> blocks =
      sliceAllDeviceBlocks(global, mesh, sharding);
  REQUIRE(blocks.ok());
  REQUIRE(blocks->size() == 8);
  for (const HostArray &block : *blocks)
    CHECK(block.shape == std::vector<int64_t>{3, 2});
  // Device 0: rows 0-2, columns 0-1.
  CHECK(valuesOf((*blocks)[0]) == std::vector<int32_t>{1, 2, 8, 9, 15, 16});
  // Device 3: rows 0-2, column 6 only; the second column is padding.
  CHECK(valuesOf((*blocks)[3]) == std::vector<int32_t>{7, 0, 14, 0, 21, 0});
  // Device 7: rows 3-4 (third row padding), column 6.
  CHECK(valuesOf((*blocks)[7]) == std::vector<int32_t>{28, 0, 35, 0, 0, 0});
  Expected<HostArray> one = sliceDeviceBlock(global, mesh, sharding, 7);
  REQUIRE(one.ok());
  CHECK(*one == (*blocks)[7]);
}

TEST_CASE("explicit device ids move the blocks", "[sharded]") {
  Mesh mesh = makeMesh("x=4", {3, 2, 1, 0});
  HostArray global = countingArray({4});
  Expected<std::vector<HostArray>> blocks =
      sliceAllDeviceBlocks(global, mesh, spec("P(\"x\")", 1));
  REQUIRE(blocks.ok());
  // Device 3 sits at position 0, so it holds the first element.
  CHECK(valuesOf((*blocks)[3]) == std::vector<int32_t>{1});
  CHECK(valuesOf((*blocks)[0]) == std::vector<int32_t>{4});
}

TEST_CASE("slice then assemble gives back the array", "[sharded]") {
  struct Case {
    const char *mesh;
    std::vector<int64_t> ids;
    const char *spec;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases = {
      {"data=2,model=4", {}, "P(\"data\", None)", {8, 6}},
      {"data=2,model=4", {}, "P(\"data\", \"model\")", {5, 7}},
      {"data=2,model=4", {}, "P(\"model\", \"data\")", {3, 1}},
      {"data=2,model=4", {}, "P((\"data\", \"model\"),)", {10, 3}},
      {"data=2,model=4", {}, "P((\"model\", \"data\"), None)", {9, 2}},
      {"data=2,model=4",
       {7, 6, 5, 4, 3, 2, 1, 0},
       "P(\"data\", \"model\")",
       {5, 7}},
      {"data=2,model=4",
       {1, 3, 5, 7, 0, 2, 4, 6},
       "P(None, \"model\")",
       {2, 5}},
      {"a=2,b=3,c=2", {}, "P(\"c\", (\"b\", \"a\"), None)", {3, 7, 2}},
      {"x=3", {}, "P(\"x\")", {2}},
      {"x=3", {}, "P(\"x\", None)", {0, 4}},
      {"x=3", {}, "P()", {}},
      {"x=2", {}, "P()", {4, 4}},
  };
  for (const Case &c : cases) {
    INFO(c.mesh << " " << c.spec << " " << formatShape(c.shape));
    Mesh mesh = makeMesh(c.mesh, c.ids);
    Sharding sharding = spec(c.spec, static_cast<int>(c.shape.size()));
    HostArray global = countingArray(c.shape);
    Expected<std::vector<HostArray>> blocks =
        sliceAllDeviceBlocks(global, mesh, sharding);
    REQUIRE(blocks.ok());
    Expected<HostArray> back =
        assembleDeviceBlocks(mesh, sharding, c.shape, *blocks);
    INFO(back.status().message());
    REQUIRE(back.ok());
    CHECK(*back == global);
  }
}

TEST_CASE("every dtype slices and assembles", "[sharded]") {
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding sharding = spec("P(\"model\", None)", 2);
  for (DType dtype : allDTypes()) {
    HostArray global = HostArray::zeros(dtype, {3, 5});
    for (size_t i = 0; i < global.bytes.size(); ++i)
      global.bytes[i] =
          static_cast<uint8_t>(dtype == DType::Bool ? i % 2 : i * 13);
    Expected<std::vector<HostArray>> blocks =
        sliceAllDeviceBlocks(global, mesh, sharding);
    REQUIRE(blocks.ok());
    CHECK((*blocks)[0].dtype == dtype);
    Expected<HostArray> back =
        assembleDeviceBlocks(mesh, sharding, {3, 5}, *blocks);
    REQUIRE(back.ok());
    CHECK(*back == global);
  }
}

TEST_CASE("replicas that disagree are reported at the first mismatch",
          "[sharded][errors]") {
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding sharding = spec("P(\"data\", None)", 2);
  HostArray global = countingArray({3, 4});
  std::vector<HostArray> blocks = *sliceAllDeviceBlocks(global, mesh, sharding);
  // Devices 2 and 3 both hold rows 2 (and one padded row).
  auto setElement = [](HostArray &block, int64_t k, int32_t value) {
    std::memcpy(block.bytes.data() + 4 * k, &value, 4);
  };
  setElement(blocks[3], 6, -9); // Padding row: ignored.
  CHECK(assembleDeviceBlocks(mesh, sharding, {3, 4}, blocks).ok());
  setElement(blocks[3], 3, -1); // Global [2, 3].
  setElement(blocks[3], 1, -2); // Global [2, 1]: first in C order.
  Expected<HostArray> assembled =
      assembleDeviceBlocks(mesh, sharding, {3, 4}, blocks);
  REQUIRE_FALSE(assembled.ok());
  CHECK(assembled.status().message() ==
        "replicas disagree at global index [2, 1]: device 3 holds -2 but "
        "device 2 holds 10 (both hold shard [1, 0], global block [2:3, 0:4])");
}

TEST_CASE("bad blocks and layouts are rejected", "[sharded][errors]") {
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding sharding = spec("P(\"data\", None)", 2);
  HostArray global = countingArray({4, 2});
  std::vector<HostArray> blocks = *sliceAllDeviceBlocks(global, mesh, sharding);

  std::vector<HostArray> tooFew(blocks.begin(), blocks.begin() + 3);
  CHECK(
      assembleDeviceBlocks(mesh, sharding, {4, 2}, tooFew).status().message() ==
      "expected one block per device (4) but got 3");
  std::vector<HostArray> wrongShape = blocks;
  wrongShape[1] = countingArray({2, 3});
  CHECK(assembleDeviceBlocks(mesh, sharding, {4, 2}, wrongShape)
            .status()
            .message() == "the block of device 1 has shape [2, 3] but the "
                          "local shape is [2, 2]");
  std::vector<HostArray> wrongType = blocks;
  wrongType[2] = HostArray::zeros(DType::F32, {2, 2});
  CHECK(assembleDeviceBlocks(mesh, sharding, {4, 2}, wrongType)
            .status()
            .message() == "the block of device 2 is f32 but device 0's is i32");

  Expected<HostArray> rankMismatch =
      sliceDeviceBlock(countingArray({4}), mesh, sharding, 0);
  CHECK_FALSE(rankMismatch.ok());
  Expected<HostArray> badDevice = sliceDeviceBlock(global, mesh, sharding, 4);
  CHECK(badDevice.status().message() ==
        "device 4 is not on the mesh data=2,model=2 (ids 0-3)");
  Sharding unknownAxis = spec("P(\"pipe\")", 2);
  CHECK_FALSE(sliceDeviceBlock(global, mesh, unknownAxis, 0).ok());

  Sharding partial = sharding;
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"model"};
  Expected<HostArray> partialSlice = sliceDeviceBlock(global, mesh, partial, 0);
  REQUIRE_FALSE(partialSlice.ok());
  CHECK_THAT(partialSlice.status().message(),
             Catch::Contains("is partial, so devices hold addends"));
  CHECK_FALSE(assembleDeviceBlocks(mesh, partial, {4, 2}, blocks).ok());
}

TEST_CASE("formatRanges uses slice notation", "[sharded]") {
  CHECK(formatRanges({{0, 4}, {2, 3}}) == "[0:4, 2:3]");
  CHECK(formatRanges({}) == "[]");
}
