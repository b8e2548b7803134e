//===- RuntimeJsonTest.cpp - The runtime's minimal JSON -------------------===//
//
// Parsing, printing and the error messages (with line and column) of the
// JSON the runtime's index files use.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/Json.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

std::string parseFailure(const std::string &text) {
  Expected<JsonValue> parsed = parseJson(text);
  REQUIRE_FALSE(parsed.ok());
  return parsed.status().message();
}

} // namespace

TEST_CASE("JSON values parse with their kinds", "[json]") {
  Expected<JsonValue> parsed = parseJson(
      R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"},
          "big": 9223372036854775807, "huge": 9223372036854775808} )");
  REQUIRE(parsed.ok());
  const JsonValue &a = *parsed->find("a");
  REQUIRE(a.kind() == JsonValue::Kind::Array);
  REQUIRE(a.items().size() == 7);
  CHECK(a.items()[0].kind() == JsonValue::Kind::Integer);
  CHECK(a.items()[1].asInteger() == -2);
  CHECK(a.items()[2].kind() == JsonValue::Kind::Double);
  CHECK(a.items()[2].asDouble() == 3.5);
  CHECK(a.items()[3].kind() == JsonValue::Kind::Double);
  CHECK(a.items()[3].asDouble() == 1000);
  CHECK(a.items()[4].asBool());
  CHECK(a.items()[6].kind() == JsonValue::Kind::Null);
  CHECK(parsed->find("b")->find("c")->asString() == "d");
  CHECK(parsed->find("big")->asInteger() == INT64_MAX);
  CHECK(parsed->find("huge")->kind() == JsonValue::Kind::Double);
  CHECK(parsed->find("missing") == nullptr);
}

TEST_CASE("JSON strings unescape, including surrogate pairs", "[json]") {
  Expected<JsonValue> parsed =
      parseJson(R"(["a\"b\\c\/d\n\t", "\u00e9\ud83d\ude00"])");
  REQUIRE(parsed.ok());
  CHECK(parsed->items()[0].asString() == "a\"b\\c/d\n\t");
  CHECK(parsed->items()[1].asString() == "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST_CASE("printJson keeps short containers on one line", "[json]") {
  JsonValue root = JsonValue::object();
  root.set("name", JsonValue::string("x\"y"));
  root.set("shape", JsonValue::integers({2, 3}));
  root.set("scale", JsonValue::number(0.5));
  root.set("flags", JsonValue::array());
  JsonValue list = JsonValue::array();
  for (int i = 0; i < 30; ++i)
    list.push(JsonValue::integers({i, i + 1}));
  root.set("long", list);
  std::string text = printJson(root);
  CHECK(text.rfind("{\n  \"name\": \"x\\\"y\",\n  \"shape\": [2, 3],\n"
                   "  \"scale\": 0.5,\n  \"flags\": [],\n  \"long\": [\n"
                   "    [0, 1],\n",
                   0) == 0);
  CHECK_THAT(text, Catch::EndsWith("    [29, 30]\n  ]\n}\n"));
  Expected<JsonValue> back = parseJson(text);
  REQUIRE(back.ok());
  CHECK(printJson(*back) == text);
  CHECK(printJsonCompact(root.members()[1].second) == "[2, 3]");
}

TEST_CASE("set replaces a member in place", "[json]") {
  JsonValue object = JsonValue::object();
  object.set("a", JsonValue::integer(1));
  object.set("b", JsonValue::integer(2));
  object.set("a", JsonValue::integer(3));
  CHECK(printJsonCompact(object) == R"({"a": 3, "b": 2})");
}

TEST_CASE("JSON errors say where", "[json][errors]") {
  CHECK(parseFailure("") ==
        "line 1, column 1: unexpected end of input, expected a value");
  CHECK(parseFailure("{\n  \"a\": 1,\n  \"b\" 2}") ==
        "line 3, column 7: expected ':' after member name \"b\"");
  CHECK(parseFailure("[1, 2") == "line 1, column 6: expected ',' or ']' in "
                                 "an array");
  CHECK(parseFailure("{\"a\": 1, \"a\": 2}") ==
        "line 1, column 10: duplicate member \"a\"");
  CHECK(parseFailure("[01]") ==
        "line 1, column 3: expected ',' or ']' in an array");
  CHECK(parseFailure("[1.]") ==
        "line 1, column 4: malformed number: digits expected after '.'");
  CHECK(parseFailure("\"abc") == "line 1, column 5: unterminated string");
  CHECK(parseFailure("\"\\q\"") == "line 1, column 4: unknown escape '\\q'");
  CHECK(parseFailure("\"\\ud800x\"") ==
        "line 1, column 8: unpaired surrogate in \\u escape");
  CHECK(parseFailure("{} x") ==
        "line 1, column 4: unexpected text after the JSON value");
  CHECK(parseFailure("{'a': 1}") ==
        "line 1, column 2: expected a member name in double quotes");
  CHECK(parseFailure("tru") == "line 1, column 1: unexpected character 't'");
  CHECK(parseFailure(std::string(300, '[') + std::string(300, ']')) ==
        "line 1, column 258: nesting too deep");
}
