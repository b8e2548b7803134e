//===- Json.h - JSON values, parsing and printing ---------------*- C++ -*-===//
//
// The runtime's on-disk indexes are JSON so people and scripts can read them.
// Values are nlohmann::json's (third_party/README.md), with object members
// kept in insertion order so output is deterministic. The runtime builds
// without exceptions, so nlohmann's throwing paths abort: parse only through
// parseJson (strict; failures say line and column), and check a value's type
// (jsonKind) or a member's presence (find) before reading it.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_JSON_H
#define PARTITA_RUNTIME_JSON_H

#include "partita/Sharding/Status.h"

// No exceptions: what would throw aborts instead. No implicit conversions:
// every read names its type (get<int64_t>()), after a type check.
#ifndef JSON_NOEXCEPTION
#define JSON_NOEXCEPTION
#endif
#ifndef JSON_USE_IMPLICIT_CONVERSIONS
#define JSON_USE_IMPLICIT_CONVERSIONS 0
#endif
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace partita {

/// A JSON value whose objects keep their members in insertion (or file)
/// order.
using Json = nlohmann::ordered_json;

/// The kinds of JSON value the runtime's readers tell apart.
enum class JsonKind {
  Null,
  Bool,
  /// A number written without fraction or exponent that fits in int64.
  Integer,
  /// Any other number.
  Number,
  String,
  Array,
  Object,
};

/// The kind of `value`.
JsonKind jsonKind(const Json &value);

/// "null", "boolean", "integer", "number", "string", "array", "object".
const char *jsonKindName(JsonKind kind);

/// Parses one JSON document (RFC 8259; duplicate member names and nesting
/// deeper than 256 are rejected). A failure reads "line L, column C: what is
/// wrong".
Expected<Json> parseJson(std::string_view text);

/// Prints `value` indented by two spaces per level, keeping an array or
/// object on one line when that line stays within 100 columns. Ends with a
/// newline.
std::string printJson(const Json &value);

/// `value` as a string on one line (no trailing newline), with a space after
/// every ',' and ':'.
std::string printJsonCompact(const Json &value);

} // namespace partita

#endif // PARTITA_RUNTIME_JSON_H
