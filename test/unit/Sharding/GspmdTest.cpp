//===- GspmdTest.cpp - GSPMD sharding strings -----------------------------===//
//
// parseGspmdSharding: the strings JAX writes with Shardy off (replicated,
// listed and iota tile assignments, transposed iotas, a replicated last
// tile dimension), the spacing it tolerates, and every error.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Gspmd.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace partita;

namespace {

using Ids = std::vector<int64_t>;

GspmdSharding parseOk(std::string_view text) {
  Expected<GspmdSharding> sharding = parseGspmdSharding(text);
  INFO("sharding: " << text << " error: " << sharding.status().message());
  REQUIRE(sharding.ok());
  return *sharding;
}

std::string parseError(std::string_view text) {
  Expected<GspmdSharding> sharding = parseGspmdSharding(text);
  INFO("sharding: " << text);
  REQUIRE_FALSE(sharding.ok());
  return sharding.status().message();
}

} // namespace

TEST_CASE("parseGspmdSharding: replicated", "[gspmd][parse]") {
  GspmdSharding sharding = parseOk("{replicated}");
  CHECK(sharding.replicated);
  CHECK(sharding.tile.empty());
  CHECK_FALSE(sharding.lastTileReplicates);
  CHECK(sharding.devices.empty());
  CHECK(parseOk("  { replicated }\n").replicated);
}

TEST_CASE("parseGspmdSharding: listed devices", "[gspmd][parse]") {
  GspmdSharding sharding = parseOk("{devices=[2,4]0,1,2,3,4,5,6,7}");
  CHECK_FALSE(sharding.replicated);
  CHECK(sharding.tile == Ids{2, 4});
  CHECK_FALSE(sharding.lastTileReplicates);
  CHECK(sharding.devices == Ids{0, 1, 2, 3, 4, 5, 6, 7});

  // Any order; the ids are not checked against a device count.
  CHECK(parseOk("{devices=[4,1]3,2,1,0}").devices == Ids{3, 2, 1, 0});
  CHECK(parseOk("{devices=[3,1]0,1,2}").devices == Ids{0, 1, 2});
  // Spaces around entries and the contents; empty entries are skipped.
  GspmdSharding spaced = parseOk("{ devices=[ 2 , 2 ] 0, 2 ,1,3, }");
  CHECK(spaced.tile == Ids{2, 2});
  CHECK(spaced.devices == Ids{0, 2, 1, 3});
  CHECK(parseOk("{devices=[2,,2]0,1,,2,3}").tile == Ids{2, 2});
}

TEST_CASE("parseGspmdSharding: iota devices", "[gspmd][parse]") {
  GspmdSharding sharding = parseOk("{devices=[4,2]<=[8]}");
  CHECK(sharding.tile == Ids{4, 2});
  CHECK(sharding.devices == Ids{0, 1, 2, 3, 4, 5, 6, 7});
  // A reshape without a transpose lists the devices in order too.
  CHECK(parseOk("{devices=[8]<=[2,4]}").devices == Ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(parseOk("{devices=[1]<=[1]}").devices == Ids{0});
}

TEST_CASE("parseGspmdSharding: transposed iota devices", "[gspmd][parse]") {
  // iota(2x4) = [[0,1,2,3],[4,5,6,7]], transposed: [[0,4],[1,5],[2,6],[3,7]].
  GspmdSharding sharding = parseOk("{devices=[4,2]<=[2,4]T(1,0)}");
  CHECK(sharding.tile == Ids{4, 2});
  CHECK(sharding.devices == Ids{0, 4, 1, 5, 2, 6, 3, 7});
  // The identity permutation changes nothing.
  CHECK(parseOk("{devices=[2,4]<=[2,4]T(0,1)}").devices ==
        Ids{0, 1, 2, 3, 4, 5, 6, 7});
  // Three dimensions: iota(2x2x2) with dimensions (2, 0, 1); device
  // (a, b, c) = 4a + 2b + c sits at (c, a, b).
  CHECK(parseOk("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}").devices ==
        Ids{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(parseOk("{devices=[4,2]<=[2,4] T( 1 , 0 ) }").devices ==
        Ids{0, 4, 1, 5, 2, 6, 3, 7});
}

TEST_CASE("parseGspmdSharding: last_tile_dim_replicate", "[gspmd][parse]") {
  // What JAX writes for P("data", None) on a (2, 4) mesh.
  GspmdSharding data =
      parseOk("{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  CHECK(data.tile == Ids{2, 1, 4});
  CHECK(data.lastTileReplicates);
  CHECK(data.devices == Ids{0, 1, 2, 3, 4, 5, 6, 7});
  // ... and for P(None, "model").
  GspmdSharding model =
      parseOk("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  CHECK(model.tile == Ids{1, 4, 2});
  CHECK(model.lastTileReplicates);
  CHECK(model.devices == Ids{0, 4, 1, 5, 2, 6, 3, 7});
  GspmdSharding listed =
      parseOk("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}");
  CHECK(listed.lastTileReplicates);
  CHECK(listed.devices == Ids{0, 2, 1, 3});
}

TEST_CASE("parseGspmdSharding: errors", "[gspmd][parse][errors]") {
  // Not a sharding in braces.
  CHECK(parseError("replicated") ==
        "a GSPMD sharding is enclosed in braces, got 'replicated'");
  CHECK(parseError("{devices=[2]0,1") ==
        "a GSPMD sharding is enclosed in braces, got '{devices=[2]0,1'");
  CHECK(parseError("") == "a GSPMD sharding is enclosed in braces, got ''");
  // Shardings other than replicated and tiled.
  CHECK(parseError("{maximal device=0}") ==
        "unsupported GSPMD sharding '{maximal device=0}': only {replicated} "
        "and {devices=[...]...} are read");
  CHECK(parseError("{manual}") ==
        "unsupported GSPMD sharding '{manual}': only {replicated} and "
        "{devices=[...]...} are read");
  CHECK(parseError("{{replicated}, {replicated}}") ==
        "unsupported GSPMD sharding '{{replicated}, {replicated}}': only "
        "{replicated} and {devices=[...]...} are read");
  CHECK(parseError("{devices = [2]0,1}") ==
        "unsupported GSPMD sharding '{devices = [2]0,1}': only {replicated} "
        "and {devices=[...]...} are read");

  // The tile shape.
  CHECK(parseError("{devices=[2,2 0,1,2,3}") ==
        "'devices=[' without its closing ']'");
  CHECK(parseError("{devices=[2,x]0,1}") ==
        "expected an integer in the tile shape, got 'x'");
  CHECK(parseError("{devices=[2, ,2]0,1,2,3}") ==
        "expected an integer in the tile shape, got ' '");
  CHECK(parseError("{devices=[2,0]}") ==
        "the tile shape [2,0] has size 0 in dimension 1; sizes are positive");
  CHECK(parseError("{devices=[-2,-2]0,1,2,3}") ==
        "the tile shape [-2,-2] has size -2 in dimension 0; sizes are "
        "positive");
  CHECK(parseError("{devices=[65536,65536]<=[4294967296]}") ==
        "the tile shape [65536,65536] has more than 16777216 positions");
  CHECK(parseError("{devices=[]0 last_tile_dim_replicate}") ==
        "last_tile_dim_replicate with an empty tile shape");

  // Listed devices.
  CHECK(parseError("{devices=[2,2]0,1,2}") ==
        "the device list has 3 devices but the tile shape [2,2] has 4 "
        "positions");
  CHECK(parseError("{devices=[2]}") ==
        "the device list has 0 devices but the tile shape [2] has 2 "
        "positions");
  CHECK(parseError("{devices=[2]0 1}") ==
        "expected an integer in the device list, got '0 1'");
  CHECK(parseError("{devices=[2]0,+1}") ==
        "expected an integer in the device list, got '+1'");
  CHECK(parseError("{devices=[2]0,1 last_tile_dim_replicated}") ==
        "expected an integer in the device list, got '1 "
        "last_tile_dim_replicated'");

  // Iota devices.
  CHECK(parseError("{devices=[2,4]<=[8}") == "'<=[' without its closing ']'");
  CHECK(parseError("{devices=[2,4]<=[8,a]}") ==
        "expected an integer in the iota shape, got 'a'");
  CHECK(parseError("{devices=[2,4]<=[4]}") ==
        "the iota shape [4] has 4 devices but the tile has 8 positions");
  CHECK(parseError("{devices=[2,4]<=[16]}") ==
        "the iota shape [16] has 16 devices but the tile has 8 positions");
  CHECK(parseError("{devices=[2]<=[0,2]}") ==
        "the iota shape [0,2] has size 0 in dimension 0; sizes are positive");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(1,0}") ==
        "'T(' without its closing ')'");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(1)}") ==
        "the transpose T(1) has 1 entries for the 2 dimensions of the iota "
        "shape");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(0,0)}") ==
        "the transpose T(0,0) is not a permutation of the iota shape's 2 "
        "dimensions");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(2,0)}") ==
        "the transpose T(2,0) is not a permutation of the iota shape's 2 "
        "dimensions");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(1,-1)}") ==
        "the transpose T(1,-1) is not a permutation of the iota shape's 2 "
        "dimensions");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(a,0)}") ==
        "expected an integer in the transpose permutation, got 'a'");
  CHECK(parseError("{devices=[4,2]<=[8] 0,1}") ==
        "unexpected '0,1' after the iota tile assignment");
  CHECK(parseError("{devices=[4,2]<=[2,4]T(1,0) T(0,1)}") ==
        "unexpected 'T(0,1)' after the iota tile assignment");
}
