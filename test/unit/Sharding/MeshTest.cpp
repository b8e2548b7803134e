//===- MeshTest.cpp - Tests of Mesh and parseMeshSpec ---------------------===//
//
// Every Mesh function and every message Mesh::validate and parseMeshSpec can
// produce, plus a garbage-input sweep of the parser.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Mesh.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

Mesh makeMesh(std::vector<MeshAxis> axes, std::vector<int64_t> ids = {}) {
  Expected<Mesh> mesh = Mesh::create(std::move(axes), std::move(ids));
  REQUIRE(mesh.ok());
  return *mesh;
}

std::string createError(std::vector<MeshAxis> axes,
                        std::vector<int64_t> ids = {}) {
  Expected<Mesh> mesh = Mesh::create(axes, ids);
  REQUIRE_FALSE(mesh.ok());
  // validate() must agree with create().
  Status status = Mesh::validate(axes, ids);
  REQUIRE_FALSE(status.ok());
  REQUIRE(status.message() == mesh.status().message());
  return mesh.status().message();
}

std::string parseError(std::string_view text) {
  Expected<Mesh> mesh = parseMeshSpec(text);
  REQUIRE_FALSE(mesh.ok());
  return mesh.status().message();
}

} // namespace

TEST_CASE("Mesh: default mesh has no axes and one device", "[mesh]") {
  Mesh mesh;
  CHECK(mesh.rank() == 0);
  CHECK(mesh.numDevices() == 1);
  CHECK(mesh.toString().empty());
  CHECK(mesh.deviceAt({}) == 0);
  CHECK(mesh.coordinates(0).empty());
  CHECK(Mesh::create({}).ok());
  CHECK(*Mesh::create({}) == mesh);
}

TEST_CASE("Mesh: accessors", "[mesh]") {
  Mesh mesh = makeMesh({{"data", 4}, {"model", 2}});
  CHECK(mesh.rank() == 2);
  CHECK(mesh.numDevices() == 8);
  CHECK(mesh.axes()[0] == MeshAxis{"data", 4});
  CHECK(mesh.axes()[1] == MeshAxis{"model", 2});
  CHECK(mesh.axisIndex("data") == 0);
  CHECK(mesh.axisIndex("model") == 1);
  CHECK(mesh.axisIndex("x") == -1);
  CHECK(mesh.axisIndex("") == -1);
  CHECK(mesh.axisSize("data") == 4);
  CHECK(mesh.axisSize("model") == 2);
  CHECK(mesh.axisSize("x") == 0);
  CHECK(mesh.deviceIds().empty());
  CHECK(mesh.toString() == "data=4,model=2");
}

TEST_CASE("Mesh: identity device ids are stored as none", "[mesh]") {
  Mesh implicit = makeMesh({{"a", 2}, {"b", 2}});
  Mesh spelled = makeMesh({{"a", 2}, {"b", 2}}, {0, 1, 2, 3});
  CHECK(spelled.deviceIds().empty());
  CHECK(implicit == spelled);
  Mesh permuted = makeMesh({{"a", 2}, {"b", 2}}, {3, 2, 1, 0});
  CHECK(permuted.deviceIds() == std::vector<int64_t>{3, 2, 1, 0});
  CHECK_FALSE(permuted == implicit);
  CHECK_FALSE(makeMesh({{"a", 4}}) == makeMesh({{"b", 4}}));
  CHECK_FALSE(makeMesh({{"a", 4}}) == makeMesh({{"a", 2}}));
}

TEST_CASE("Mesh: deviceAt and coordinates are row-major inverses", "[mesh]") {
  Mesh mesh = makeMesh({{"data", 2}, {"model", 4}});
  CHECK(mesh.deviceAt({0, 0}) == 0);
  CHECK(mesh.deviceAt({0, 3}) == 3);
  CHECK(mesh.deviceAt({1, 0}) == 4);
  CHECK(mesh.deviceAt({1, 2}) == 6);
  CHECK(mesh.coordinates(6) == std::vector<int64_t>{1, 2});
  CHECK(mesh.coordinates(3) == std::vector<int64_t>{0, 3});
  for (int64_t id = 0; id < mesh.numDevices(); ++id)
    CHECK(mesh.deviceAt(mesh.coordinates(id)) == id);
}

TEST_CASE("Mesh: explicit device ids are indexed by position", "[mesh]") {
  // Position (a, b) = a * 3 + b; the device there is ids[position].
  Mesh mesh = makeMesh({{"a", 2}, {"b", 3}}, {5, 3, 1, 4, 2, 0});
  CHECK(mesh.deviceAt({0, 0}) == 5);
  CHECK(mesh.deviceAt({0, 2}) == 1);
  CHECK(mesh.deviceAt({1, 0}) == 4);
  CHECK(mesh.deviceAt({1, 2}) == 0);
  CHECK(mesh.coordinates(5) == std::vector<int64_t>{0, 0});
  CHECK(mesh.coordinates(0) == std::vector<int64_t>{1, 2});
  CHECK(mesh.coordinates(2) == std::vector<int64_t>{1, 1});
  for (int64_t id = 0; id < mesh.numDevices(); ++id)
    CHECK(mesh.deviceAt(mesh.coordinates(id)) == id);
}

TEST_CASE("Mesh: out-of-range lookups do not crash", "[mesh]") {
  Mesh mesh = makeMesh({{"a", 2}, {"b", 3}}, {5, 3, 1, 4, 2, 0});
  CHECK(mesh.deviceAt({2, 0}) == -1);
  CHECK(mesh.deviceAt({0, -1}) == -1);
  CHECK(mesh.deviceAt({0}) == -1);
  CHECK(mesh.deviceAt({0, 0, 0}) == -1);
  CHECK(mesh.coordinates(6).empty());
  CHECK(mesh.coordinates(-1).empty());
}

TEST_CASE("Mesh: size-1 axes", "[mesh]") {
  Mesh mesh = makeMesh({{"a", 1}, {"b", 2}, {"c", 1}});
  CHECK(mesh.numDevices() == 2);
  CHECK(mesh.coordinates(1) == std::vector<int64_t>{0, 1, 0});
  CHECK(mesh.deviceAt({0, 1, 0}) == 1);
}

TEST_CASE("Mesh::create error messages", "[mesh][errors]") {
  CHECK(createError({{"data", 0}}) ==
        "mesh axis size must be positive, got 0 for axis 'data'");
  CHECK(createError({{"data", 2}, {"model", -3}}) ==
        "mesh axis size must be positive, got -3 for axis 'model'");
  CHECK(createError({{"data", 2}, {"", 2}}) == "mesh axis 1 has an empty name");
  CHECK(createError({{"data", 2}, {"model", 2}, {"data", 2}}) ==
        "mesh axis 'data' is declared twice (axes 0 and 2)");
  CHECK(createError({{"a", int64_t(1) << 40}, {"b", int64_t(1) << 40}}) ==
        "mesh is too large: the product of its axis sizes does not fit in a "
        "64-bit integer");
  CHECK(createError({{"a", 1024}, {"b", 2048}}) ==
        "mesh is too large: 2097152 devices, more than the 1048576 Partita "
        "supports");
  CHECK(Mesh::create({{"a", 1024}, {"b", 1024}}).ok());
  CHECK(createError({{"data", 2}, {"model", 4}}, {0, 1, 2, 3, 4, 5, 6, 3}) ==
        "device_ids must be a permutation of 0..7: id 3 appears twice");
  CHECK(createError({{"data", 2}, {"model", 4}}, {0, 1, 2, 3, 4, 5, 6, 8}) ==
        "device_ids must be a permutation of 0..7: id 8 is out of range");
  CHECK(createError({{"data", 2}, {"model", 4}}, {-1, 1, 2, 3, 4, 5, 6, 7}) ==
        "device_ids must be a permutation of 0..7: id -1 is out of range");
  CHECK(createError({{"data", 2}, {"model", 4}}, {0, 1, 2}) ==
        "device_ids must be a permutation of 0..7: got 3 ids for 8 devices");
  CHECK(Mesh::validate({{"data", 2}}, {1, 0}).ok());
}

TEST_CASE("parseMeshSpec: valid spellings", "[mesh][parse]") {
  Expected<Mesh> mesh = parseMeshSpec("data=2,model=4");
  REQUIRE(mesh.ok());
  CHECK(mesh->axes() == std::vector<MeshAxis>{{"data", 2}, {"model", 4}});
  CHECK(mesh->toString() == "data=2,model=4");

  Expected<Mesh> spaced = parseMeshSpec("  data = 2 ,\tmodel= 4  ");
  REQUIRE(spaced.ok());
  CHECK(*spaced == *mesh);

  Expected<Mesh> single = parseMeshSpec("x=8");
  REQUIRE(single.ok());
  CHECK(single->numDevices() == 8);

  Expected<Mesh> names = parseMeshSpec("_a=1,b.c=2,d-e=3,f9=1");
  REQUIRE(names.ok());
  CHECK(names->toString() == "_a=1,b.c=2,d-e=3,f9=1");
  CHECK(parseMeshSpec("x=+4").ok());
}

TEST_CASE("parseMeshSpec: round trip through toString", "[mesh][parse]") {
  for (const char *text : {"a=1", "data=4,model=2", "x=2,y=2,z=2"}) {
    Expected<Mesh> mesh = parseMeshSpec(text);
    REQUIRE(mesh.ok());
    CHECK(mesh->toString() == text);
  }
}

TEST_CASE("parseMeshSpec error messages", "[mesh][parse][errors]") {
  CHECK(parseError("") == "empty mesh spec; expected NAME=SIZE[,NAME=SIZE...] "
                          "such as 'data=2,model=4'");
  CHECK(parseError("   ") == parseError(""));
  CHECK(parseError("data=2,,model=4") ==
        "empty entry in mesh spec at position 7; expected NAME=SIZE");
  CHECK(parseError("data=2,") ==
        "empty entry in mesh spec at position 7; expected NAME=SIZE");
  CHECK(parseError("data") ==
        "mesh spec entry 'data' at position 0 has no '='; expected NAME=SIZE");
  CHECK(parseError("data=2, =4") == "mesh spec entry '=4' at position 7 has "
                                    "no axis name; expected NAME=SIZE");
  CHECK(parseError("data=2,9x=4") ==
        "invalid mesh axis name '9x' at position 7; a name starts with a "
        "letter or '_' and continues with letters, digits, '_', '-' or '.'");
  CHECK_THAT(parseError("da ta=2"),
             Catch::Contains("invalid mesh axis name 'da ta'"));
  CHECK(parseError("data=x") == "invalid size 'x' for mesh axis 'data' at "
                                "position 0; expected an integer");
  CHECK(parseError("data=") == "invalid size '' for mesh axis 'data' at "
                               "position 0; expected an integer");
  CHECK(parseError("data=2.5") == "invalid size '2.5' for mesh axis 'data' "
                                  "at position 0; expected an integer");
  CHECK(parseError("data=2=3") == "invalid size '2=3' for mesh axis 'data' "
                                  "at position 0; expected an integer");
  CHECK(parseError("data=99999999999999999999") ==
        "size '99999999999999999999' for mesh axis 'data' is too large");
  CHECK(parseError("data=0") ==
        "mesh axis size must be positive, got 0 for axis 'data'");
  CHECK(parseError("data=-2") ==
        "mesh axis size must be positive, got -2 for axis 'data'");
  CHECK(parseError("data=2,data=4") ==
        "mesh axis 'data' is declared twice (axes 0 and 1)");
  CHECK_THAT(parseError("a=4294967296,b=4294967296"),
             Catch::Contains("mesh is too large"));
}

TEST_CASE("parseMeshSpec never crashes on garbage", "[mesh][parse][fuzz]") {
  // Deterministic pseudo-random strings over the characters the grammar
  // cares about; each must parse or fail with a message.
  const std::string alphabet = "ab_=,0123456789 -+.\t\"'x";
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  int parsed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text;
    size_t length = next() % 16;
    for (size_t i = 0; i < length; ++i)
      text += alphabet[next() % alphabet.size()];
    Expected<Mesh> mesh = parseMeshSpec(text);
    if (mesh.ok()) {
      ++parsed;
      Expected<Mesh> again = parseMeshSpec(mesh->toString());
      REQUIRE(again.ok());
      REQUIRE(*again == *mesh);
    } else {
      REQUIRE_FALSE(mesh.status().message().empty());
    }
  }
  CHECK(parsed > 0);
}

TEST_CASE("Mesh: sub-axis names", "[mesh]") {
  CHECK(subAxisName("model", 1, 2) == "model:(1)2");
  CHECK(subAxisName("model", 2, 4) == "model:(2)4");
  CHECK(parentAxis("model:(2)4") == "model");
  CHECK(parentAxis("model") == "model");
  // Only the exact form names a part.
  CHECK(parentAxis("model:(x)2") == "model:(x)2");
  CHECK(parentAxis("model:(2)") == "model:(2)");
  CHECK(parentAxis(":(1)2") == ":(1)2");
  CHECK(parentAxis("a:(1)2:(2)2") == "a:(1)2");
}

TEST_CASE("Mesh: sub-axes list the devices of their axis in order", "[mesh]") {
  // model=4 as model:(1)2 x model:(2)2: every device keeps its place, and
  // a group over both parts is the group over the axis.
  Mesh whole = *Mesh::create({{"data", 2}, {"model", 4}});
  Mesh split =
      *Mesh::create({{"data", 2}, {"model:(1)2", 2}, {"model:(2)2", 2}});
  for (int64_t device = 0; device < 8; ++device) {
    Expected<CollectiveGroup> a = resolveGroup(whole, device, {"model"});
    Expected<CollectiveGroup> b =
        resolveGroup(split, device, {"model:(1)2", "model:(2)2"});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->members == b->members);
    CHECK(a->position == b->position);
  }
}
