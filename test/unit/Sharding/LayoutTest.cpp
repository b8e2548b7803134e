//===- LayoutTest.cpp - Hand-worked examples of Layout.h ------------------===//
//
// Small cases worked out by hand for every Layout function: even, uneven,
// short and empty dimensions, multi-axis dimensions in both axis orders,
// partial axes and explicit device ids. The exhaustive comparison against a
// brute-force oracle is in test/unit/Sharding/LayoutPropertyTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Layout.h"

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

Sharding spec(const char *text, int rank = -1) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  REQUIRE(sharding.ok());
  return *sharding;
}

using Block = std::vector<IndexRange>;
using Ids = std::vector<int64_t>;
using Shape = std::vector<int64_t>;

} // namespace

TEST_CASE("numShards and shardCounts", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  CHECK(numShards(mesh, DimSharding{}) == 1);
  CHECK(numShards(mesh, DimSharding{{"model"}, false}) == 4);
  CHECK(numShards(mesh, DimSharding{{"model", "data"}, true}) == 8);
  CHECK(shardCounts(mesh, spec("P('data', None, 'model')")) == Shape{2, 1, 4});
  CHECK(shardCounts(mesh, spec("P()")).empty());
}

TEST_CASE("isEvenlySharded", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding sharding = spec("P('data', 'model')");
  CHECK(isEvenlySharded(mesh, sharding, {4, 8}));
  CHECK(isEvenlySharded(mesh, sharding, {0, 0}));
  CHECK_FALSE(isEvenlySharded(mesh, sharding, {3, 8}));
  CHECK_FALSE(isEvenlySharded(mesh, sharding, {4, 6}));
  CHECK(isEvenlySharded(mesh, spec("P(None)"), {7}));
}

TEST_CASE("localShape pads to ceil(d / k)", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding sharding = spec("P('data', 'model', None)");
  CHECK(localShape(mesh, sharding, {8, 8, 3}) == Shape{4, 2, 3});
  CHECK(localShape(mesh, sharding, {5, 6, 3}) == Shape{3, 2, 3});
  CHECK(localShape(mesh, sharding, {1, 1, 1}) == Shape{1, 1, 1});
  CHECK(localShape(mesh, sharding, {0, 0, 0}) == Shape{0, 0, 0});
  CHECK(localShape(mesh, spec("P(('model', 'data'))"), {9}) == Shape{2});
}

TEST_CASE("shardIndices: mixed radix, major axis first", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  // Device 6 sits at (data=1, model=2).
  CHECK(shardIndices(mesh, spec("P('data', 'model')"), 6) == Shape{1, 2});
  CHECK(shardIndices(mesh, spec("P(('data', 'model'))"), 6) == Shape{6});
  CHECK(shardIndices(mesh, spec("P(('model', 'data'))"), 6) == Shape{5});
  CHECK(shardIndices(mesh, spec("P(None, 'model')"), 6) == Shape{0, 2});
  CHECK(shardIndices(mesh, spec("P()"), 6).empty());
}

TEST_CASE("deviceBlock: even dimensions", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding sharding = spec("P('data', 'model')");
  CHECK(deviceBlock(mesh, sharding, {4, 8}, 0) == Block{{0, 2}, {0, 2}});
  CHECK(deviceBlock(mesh, sharding, {4, 8}, 6) == Block{{2, 4}, {4, 6}});
  CHECK(deviceBlock(mesh, spec("P(None, 'data')"), {3, 4}, 5) ==
        Block{{0, 3}, {2, 4}});
}

TEST_CASE("deviceBlock: multi-axis dimensions in both orders", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  // Device 1 is (data=0, model=1); device 4 is (data=1, model=0).
  Sharding dataMajor = spec("P(('data', 'model'))");
  Sharding modelMajor = spec("P(('model', 'data'))");
  CHECK(deviceBlock(mesh, dataMajor, {16}, 1) == Block{{2, 4}});
  CHECK(deviceBlock(mesh, dataMajor, {16}, 4) == Block{{8, 10}});
  CHECK(deviceBlock(mesh, modelMajor, {16}, 1) == Block{{4, 6}});
  CHECK(deviceBlock(mesh, modelMajor, {16}, 4) == Block{{2, 4}});
}

TEST_CASE("deviceBlock: uneven, short and empty dimensions", "[layout]") {
  Mesh mesh = makeMesh("x=4");
  Sharding sharding = spec("P('x')");
  // d = 5, k = 4: c = 2, the last shard is empty.
  CHECK(deviceBlock(mesh, sharding, {5}, 0) == Block{{0, 2}});
  CHECK(deviceBlock(mesh, sharding, {5}, 2) == Block{{4, 5}});
  CHECK(deviceBlock(mesh, sharding, {5}, 3) == Block{{5, 5}});
  // d = 1 < k: one element, then three empty shards clamped to the end.
  CHECK(deviceBlock(mesh, sharding, {1}, 0) == Block{{0, 1}});
  CHECK(deviceBlock(mesh, sharding, {1}, 1) == Block{{1, 1}});
  CHECK(deviceBlock(mesh, sharding, {1}, 3) == Block{{1, 1}});
  // d = 0: every shard is empty.
  CHECK(deviceBlock(mesh, sharding, {0}, 2) == Block{{0, 0}});
  // d = 9, k = 4: c = 3 and the fourth shard is empty, not [9, 12).
  CHECK(deviceBlock(mesh, sharding, {9}, 3) == Block{{9, 9}});
  CHECK(deviceBlock(mesh, sharding, {9}, 2) == Block{{6, 9}});
  CHECK(deviceBlock(mesh, sharding, {9}, 3)[0].size() == 0);
}

TEST_CASE("deviceBlock: partial axes do not move blocks", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding plain = spec("P('data', None)");
  Sharding partial = plain;
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"model"};
  for (int64_t id = 0; id < 8; ++id)
    CHECK(deviceBlock(mesh, partial, {4, 3}, id) ==
          deviceBlock(mesh, plain, {4, 3}, id));
  CHECK(devicesHolding(mesh, partial, {4, 3}, {3, 0}) == Ids{4, 5, 6, 7});
}

TEST_CASE("Layout honours explicit device ids", "[layout]") {
  // Reversed ids: the device at position p is 7 - p.
  Mesh mesh = makeMesh("data=2,model=4", {7, 6, 5, 4, 3, 2, 1, 0});
  Sharding sharding = spec("P('data', 'model')");
  // Device 7 sits at position 0 = (0, 0); device 1 at position 6 = (1, 2).
  CHECK(shardIndices(mesh, sharding, 7) == Shape{0, 0});
  CHECK(shardIndices(mesh, sharding, 1) == Shape{1, 2});
  CHECK(deviceBlock(mesh, sharding, {4, 8}, 1) == Block{{2, 4}, {4, 6}});
  CHECK(devicesHolding(mesh, sharding, {4, 8}, {0, 0}) == Ids{7});
  CHECK(devicesHolding(mesh, spec("P('data')", 2), {4, 8}, {3, 7}) ==
        Ids{0, 1, 2, 3});
}

TEST_CASE("devicesHolding", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  CHECK(devicesHolding(mesh, spec("P('data', None)"), {4, 3}, {3, 1}) ==
        Ids{4, 5, 6, 7});
  CHECK(devicesHolding(mesh, spec("P(None, 'model')"), {4, 8}, {0, 5}) ==
        Ids{2, 6});
  CHECK(devicesHolding(mesh, spec("P(('model', 'data'))"), {16}, {3}) ==
        Ids{4});
  CHECK(devicesHolding(mesh, spec("P()", 1), {3}, {2}) ==
        Ids{0, 1, 2, 3, 4, 5, 6, 7});
  // Uneven: element 4 of 5 over 4 shards lies in shard 2.
  CHECK(devicesHolding(mesh, spec("P('model')"), {5}, {4}) == Ids{2, 6});
  // Out-of-range or ill-formed indices hold nothing.
  CHECK(devicesHolding(mesh, spec("P('model')"), {5}, {5}).empty());
  CHECK(devicesHolding(mesh, spec("P('model')"), {5}, {-1}).empty());
  CHECK(devicesHolding(mesh, spec("P('model')"), {5}, {1, 1}).empty());
  CHECK(devicesHolding(mesh, spec("P('model')"), {0}, {0}).empty());
}

TEST_CASE("bytesPerDevice counts the padded local shape", "[layout]") {
  Mesh mesh = makeMesh("data=2,model=4");
  Sharding sharding = spec("P('data', 'model')");
  CHECK(bytesPerDevice(mesh, sharding, {4, 8}, 4) == 2 * 2 * 4);
  CHECK(bytesPerDevice(mesh, sharding, {5, 6}, 2) == 3 * 2 * 2);
  CHECK(bytesPerDevice(mesh, sharding, {0, 8}, 4) == 0);
  CHECK(bytesPerDevice(mesh, spec("P()"), {}, 8) == 8);
}

TEST_CASE("Layout on the empty mesh", "[layout]") {
  Mesh mesh;
  Sharding sharding = Sharding::replicated(2);
  CHECK(localShape(mesh, sharding, {3, 4}) == Shape{3, 4});
  CHECK(deviceBlock(mesh, sharding, {3, 4}, 0) == Block{{0, 3}, {0, 4}});
  CHECK(devicesHolding(mesh, sharding, {3, 4}, {2, 3}) == Ids{0});
}
