//===- PartitionSpecTest.cpp - JAX PartitionSpec spelling -----------------===//
//
// parsePartitionSpec and toPartitionSpec: the spellings JAX prints and users
// type, every error message, round trips, and a garbage-input sweep.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Sharding.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

Sharding parseOk(std::string_view text, int rank = -1) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  INFO("spec: " << text << " error: " << sharding.status().message());
  REQUIRE(sharding.ok());
  return *sharding;
}

std::string parseError(std::string_view text, int rank = -1) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  INFO("spec: " << text);
  REQUIRE_FALSE(sharding.ok());
  return sharding.status().message();
}

Sharding closedDims(std::vector<std::vector<std::string>> axesPerDim) {
  Sharding sharding;
  for (auto &axes : axesPerDim)
    sharding.dims.push_back(DimSharding{std::move(axes), false});
  return sharding;
}

} // namespace

TEST_CASE("parsePartitionSpec: JAX spellings", "[partition-spec][parse]") {
  CHECK(parseOk("P(\"data\", None)") == closedDims({{"data"}, {}}));
  CHECK(parseOk("P(('data', 'fsdp'), 'model')") ==
        closedDims({{"data", "fsdp"}, {"model"}}));
  CHECK(parseOk("P()") == closedDims({}));
  CHECK(parseOk("PartitionSpec('x',)") == closedDims({{"x"}}));
  CHECK(parseOk("jax.sharding.PartitionSpec('x')") == closedDims({{"x"}}));
  CHECK(parseOk("  P ( ( 'a' , 'b' , ) , None , )  ") ==
        closedDims({{"a", "b"}, {}}));
  // Python's parentheses: ("x") is "x", () and None replicate.
  CHECK(parseOk("P((\"x\"), ())") == closedDims({{"x"}, {}}));
  CHECK(parseOk("P(('x',))") == closedDims({{"x"}}));

  Sharding open = parseOk("P(\"x\", P.UNCONSTRAINED)");
  REQUIRE(open.rank() == 2);
  CHECK(open.dims[0] == DimSharding{{"x"}, false});
  CHECK(open.dims[1] == DimSharding{{}, true});
  CHECK(parseOk("PartitionSpec(PartitionSpec.UNCONSTRAINED)").dims[0].open);
  CHECK(parseOk("P(jax.sharding.PartitionSpec.UNCONSTRAINED)").dims[0].open);

  Sharding plain = parseOk("P('a')");
  CHECK(plain.partialKind == PartialKind::None);
  CHECK_FALSE(plain.priority.has_value());
  // Escapes inside Python strings.
  CHECK(parseOk("P('it\\'s')") == closedDims({{"it's"}}));
}

TEST_CASE("parsePartitionSpec: rank pads with replicated dimensions",
          "[partition-spec][parse]") {
  CHECK(parseOk("P('data')", 3) == closedDims({{"data"}, {}, {}}));
  CHECK(parseOk("P()", 2) == closedDims({{}, {}}));
  CHECK(parseOk("P('a', 'b')", 2) == closedDims({{"a"}, {"b"}}));
  CHECK(parseOk("P()", 0) == closedDims({}));
  CHECK(parseError("P('a', None, None)", 2) ==
        "PartitionSpec has 3 entries but the tensor has rank 2");
  CHECK(parseError("P('a')", 0) ==
        "PartitionSpec has 1 entries but the tensor has rank 0");
}

TEST_CASE("parsePartitionSpec error messages",
          "[partition-spec][parse][errors]") {
  CHECK(parseError("") == "invalid PartitionSpec at position 0: expected "
                          "'P(' or 'PartitionSpec(', got end of input");
  CHECK(parseError("Q('a')") == "invalid PartitionSpec at position 0: "
                                "expected 'P(' or 'PartitionSpec(', got "
                                "'Q('a')'");
  CHECK(parseError("P") == "invalid PartitionSpec at position 1: expected "
                           "'(' after 'P', got end of input");
  CHECK(parseError("P(") ==
        "invalid PartitionSpec at position 2: expected a quoted axis name, a "
        "tuple of axis names, None or P.UNCONSTRAINED, got end of input");
  CHECK(parseError("P(data)") ==
        "invalid PartitionSpec at position 2: expected a quoted axis name, a "
        "tuple of axis names, None or P.UNCONSTRAINED, got 'data)'");
  CHECK(parseError("P('data'") == "invalid PartitionSpec at position 8: "
                                  "expected ',' or ')' after dimension 0, "
                                  "got end of input");
  CHECK(parseError("P('a', 'b' 'c')") ==
        "invalid PartitionSpec at position 11: expected ',' or ')' after "
        "dimension 1, got ''c')'");
  CHECK(parseError("P('data)") == "invalid PartitionSpec at position 2: "
                                  "unterminated string starting ''data)'");
  CHECK(parseError("P('')") == "invalid PartitionSpec at position 2: "
                               "expected a non-empty mesh axis name, got "
                               "''')'");
  CHECK(parseError("P('a') x") == "invalid PartitionSpec at position 7: "
                                  "unexpected text after the closing ')', "
                                  "got 'x'");
  CHECK(parseError("P(('a', None))") ==
        "invalid PartitionSpec at position 8: expected a quoted axis name "
        "inside the tuple, got 'None))'");
  CHECK(parseError("P(('a' 'b'))") == "invalid PartitionSpec at position 7: "
                                      "expected ',' or ')' inside the tuple, "
                                      "got ''b'))'");
  CHECK(parseError("P((('a',),))") ==
        "invalid PartitionSpec at position 3: expected a quoted axis name "
        "inside the tuple, got '('a',),))'");
  CHECK(parseError("P(,)") ==
        "invalid PartitionSpec at position 2: expected a quoted axis name, a "
        "tuple of axis names, None or P.UNCONSTRAINED, got ',)'");
  CHECK(parseError("P(P.CONSTRAINED)") ==
        "invalid PartitionSpec at position 2: expected a quoted axis name, a "
        "tuple of axis names, None or P.UNCONSTRAINED, got 'P.CONSTRAINE...'");
  CHECK_THAT(parseError("P('a', 'a-very-long-axis-name-here' 'x')"),
             Catch::EndsWith("got ''x')'"));
  CHECK_THAT(parseError("P('a', None) ... and a long tail"),
             Catch::EndsWith("got '... and a lo...'"));
  // Structural errors come from validateStructure.
  CHECK(parseError("P('data', 'data')") ==
        "mesh axis 'data' is used twice (dimension 0 and dimension 1)");
  CHECK(parseError("P(('x', 'x'))") ==
        "mesh axis 'x' is used twice in dimension 0");
}

TEST_CASE("toPartitionSpec", "[partition-spec][print]") {
  CHECK(*toPartitionSpec(closedDims({{"data"}, {}})) == "P(\"data\", None)");
  CHECK(*toPartitionSpec(closedDims({{"data", "fsdp"}, {"model"}})) ==
        "P((\"data\", \"fsdp\"), \"model\")");
  CHECK(*toPartitionSpec(closedDims({})) == "P()");
  CHECK(*toPartitionSpec(Sharding::open(2)) ==
        "P(P.UNCONSTRAINED, P.UNCONSTRAINED)");
  Sharding mixed = closedDims({{"x"}, {}});
  mixed.dims[1].open = true;
  mixed.priority = 3; // Has no JAX spelling; dropped.
  CHECK(*toPartitionSpec(mixed) == "P(\"x\", P.UNCONSTRAINED)");
  CHECK(*toPartitionSpec(closedDims({{"q\"t"}})) == "P(\"q\\\"t\")");
}

TEST_CASE("toPartitionSpec error messages", "[partition-spec][errors]") {
  Sharding partial = closedDims({{"data"}});
  partial.partialKind = PartialKind::Sum;
  partial.partialAxes = {"model"};
  Expected<std::string> fromPartial = toPartitionSpec(partial);
  REQUIRE_FALSE(fromPartial.ok());
  CHECK(fromPartial.status().message() ==
        "a partial sharding ([{\"data\"}], partial = sum{\"model\"}) has no "
        "PartitionSpec spelling");

  Sharding openWithAxes = closedDims({{}, {"x"}});
  openWithAxes.dims[1].open = true;
  Expected<std::string> fromOpen = toPartitionSpec(openWithAxes);
  REQUIRE_FALSE(fromOpen.ok());
  CHECK(fromOpen.status().message() ==
        "dimension 1 {\"x\", ?} is open with axes and has no PartitionSpec "
        "spelling");
}

TEST_CASE("PartitionSpec round trips", "[partition-spec]") {
  for (const char *text :
       {"P()", "P(\"a\")", "P(None, \"b\")", "P((\"a\", \"b\"), None, \"c\")",
        "P(P.UNCONSTRAINED, (\"b\", \"a\"))"}) {
    Sharding sharding = parseOk(text);
    Expected<std::string> printed = toPartitionSpec(sharding);
    REQUIRE(printed.ok());
    CHECK(*printed == text);
    CHECK(parseOk(*printed) == sharding);
  }
}

TEST_CASE("parsePartitionSpec never crashes on garbage",
          "[partition-spec][parse][fuzz]") {
  uint64_t state = 987654321;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  const std::vector<std::string> pieces = {"P",
                                           "(",
                                           ")",
                                           ",",
                                           " ",
                                           "'a'",
                                           "\"b\"",
                                           "'",
                                           "\"",
                                           "None",
                                           ".",
                                           "UNCONSTRAINED",
                                           "PartitionSpec",
                                           "\\",
                                           "x",
                                           "()",
                                           "'a',",
                                           "\t"};
  const std::vector<std::string> seeds = {
      "P(('a', 'b'), None, P.UNCONSTRAINED)", "PartitionSpec('x',)",
      "P(\"data\", None)"};
  int parsed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text;
    if (trial % 2 == 0) {
      size_t count = next() % 10;
      for (size_t i = 0; i < count; ++i)
        text += pieces[next() % pieces.size()];
    } else {
      // Mutate a valid spec: delete, duplicate or replace one character.
      text = seeds[next() % seeds.size()];
      size_t at = next() % text.size();
      switch (next() % 3) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text.insert(at, 1, text[at]);
        break;
      default:
        text[at] = "()',\" .\\PN"[next() % 10];
      }
    }
    int rank = static_cast<int>(next() % 5) - 1;
    Expected<Sharding> sharding = parsePartitionSpec(text, rank);
    if (!sharding.ok()) {
      REQUIRE_FALSE(sharding.status().message().empty());
      continue;
    }
    ++parsed;
    REQUIRE(validateStructure(*sharding).ok());
    Expected<std::string> printed = toPartitionSpec(*sharding);
    REQUIRE(printed.ok());
    Expected<Sharding> again = parsePartitionSpec(*printed);
    REQUIRE(again.ok());
    REQUIRE(*again == *sharding);
  }
  CHECK(parsed > 100);
}
