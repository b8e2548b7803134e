//===- JsonTest.cpp - The runtime's JSON ----------------------------------===//
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
  Expected<Json> parsed = parseJson(text);
  REQUIRE_FALSE(parsed.ok());
  return parsed.status().message();
}

} // namespace

TEST_CASE("JSON values parse with their kinds", "[json]") {
  Expected<Json> parsed = parseJson(
      R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"},
          "big": 9223372036854775807, "huge": 9223372036854775808} )");
  REQUIRE(parsed.ok());
  const Json &a = (*parsed)["a"];
  REQUIRE(jsonKind(a) == JsonKind::Array);
  REQUIRE(a.size() == 7);
  CHECK(jsonKind(a[0]) == JsonKind::Integer);
  CHECK(a[1].get<int64_t>() == -2);
  CHECK(jsonKind(a[2]) == JsonKind::Number);
  CHECK(a[2].get<double>() == 3.5);
  CHECK(jsonKind(a[3]) == JsonKind::Number);
  CHECK(a[3].get<double>() == 1000);
  CHECK(a[4].get<bool>());
  CHECK(jsonKind(a[6]) == JsonKind::Null);
  CHECK((*parsed)["b"]["c"].get<std::string>() == "d");
  CHECK((*parsed)["big"].get<int64_t>() == INT64_MAX);
  CHECK(jsonKind((*parsed)["huge"]) == JsonKind::Number);
  CHECK_FALSE(parsed->contains("missing"));
}

TEST_CASE("JSON objects keep their members in file order", "[json]") {
  Expected<Json> parsed = parseJson(R"({"z": 1, "a": 2, "m": 3})");
  REQUIRE(parsed.ok());
  CHECK(printJsonCompact(*parsed) == R"({"z": 1, "a": 2, "m": 3})");
}

TEST_CASE("JSON strings unescape, including surrogate pairs", "[json]") {
  Expected<Json> parsed =
      parseJson(R"(["a\"b\\c\/d\n\t", "\u00e9\ud83d\ude00"])");
  REQUIRE(parsed.ok());
  CHECK((*parsed)[0].get<std::string>() == "a\"b\\c/d\n\t");
  CHECK((*parsed)[1].get<std::string>() == "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST_CASE("printJson keeps short containers on one line", "[json]") {
  Json root = Json::object();
  root["name"] = "x\"y";
  root["shape"] = std::vector<int64_t>{2, 3};
  root["scale"] = 0.5;
  root["flags"] = Json::array();
  Json list = Json::array();
  for (int64_t i = 0; i < 30; ++i)
    list.push_back(Json(std::vector<int64_t>{i, i + 1}));
  root["long"] = list;
  std::string text = printJson(root);
  CHECK(text.rfind("{\n  \"name\": \"x\\\"y\",\n  \"shape\": [2, 3],\n"
                   "  \"scale\": 0.5,\n  \"flags\": [],\n  \"long\": [\n"
                   "    [0, 1],\n",
                   0) == 0);
  CHECK_THAT(text, Catch::EndsWith("    [29, 30]\n  ]\n}\n"));
  Expected<Json> back = parseJson(text);
  REQUIRE(back.ok());
  CHECK(printJson(*back) == text);
  CHECK(printJsonCompact(root["shape"]) == "[2, 3]");
}

TEST_CASE("assigning a member replaces it in place", "[json]") {
  Json object = Json::object();
  object["a"] = 1;
  object["b"] = 2;
  object["a"] = 3;
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
  CHECK(parseFailure("{\"a\\\"b\": 1, \"a\\\"b\": 2}") ==
        "line 1, column 13: duplicate member \"a\"b\"");
  CHECK(parseFailure("[01]") ==
        "line 1, column 3: expected ',' or ']' in an array");
  CHECK(parseFailure("[1.]") ==
        "line 1, column 4: malformed number: digits expected after '.'");
  CHECK(parseFailure("\"abc") == "line 1, column 5: unterminated string");
  CHECK(parseFailure("\"\\q\"") == "line 1, column 3: unknown escape '\\q'");
  CHECK(parseFailure("\"\\ud800x\"") ==
        "line 1, column 8: unpaired surrogate in \\u escape");
  CHECK(parseFailure("{} x") ==
        "line 1, column 4: unexpected text after the JSON value");
  CHECK(parseFailure("{} 12") ==
        "line 1, column 4: unexpected text after the JSON value");
  CHECK(parseFailure("{'a': 1}") ==
        "line 1, column 2: expected a member name in double quotes");
  CHECK(parseFailure("{\"a\": 1,}") ==
        "line 1, column 9: expected a member name in double quotes");
  CHECK(parseFailure("{\"a\": 1 \"b\"}") ==
        "line 1, column 9: expected ',' or '}' in an object");
  CHECK(parseFailure("tru") == "line 1, column 1: unexpected character 't'");
  CHECK(parseFailure("[1, tru]") ==
        "line 1, column 5: unexpected character 't'");
  CHECK(parseFailure(std::string(300, '[') + std::string(300, ']')) ==
        "line 1, column 258: nesting too deep");
  CHECK(parseJson(std::string(257, '[') + std::string(257, ']')).ok());
}
