//===- Json.h - A minimal JSON value, parser and printer --------*- C++ -*-===//
//
// The runtime has no JSON library (it builds with a bare C++ toolchain), yet
// its on-disk indexes are JSON so people and scripts can read them. This is
// just enough JSON for those files: a value tree that keeps object members in
// insertion order (so output is deterministic), a strict parser whose
// failures say line and column, and a printer that keeps short arrays and
// objects on one line.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_JSON_H
#define PARTITA_RUNTIME_JSON_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace partita {

/// A JSON value. Numbers written without fraction or exponent that fit in
/// int64 are kept exactly as integers.
class JsonValue {
public:
  /// The kinds of JSON value.
  enum class Kind { Null, Bool, Integer, Double, String, Array, Object };
  /// An object's members, in insertion (or file) order.
  using Members = std::vector<std::pair<std::string, JsonValue>>;

  /// null.
  JsonValue() = default;
  /// true or false.
  static JsonValue boolean(bool value);
  /// An integer number.
  static JsonValue integer(int64_t value);
  /// A floating-point number.
  static JsonValue number(double value);
  /// A string (UTF-8).
  static JsonValue string(std::string value);
  /// An empty array.
  static JsonValue array();
  /// An array of integers.
  static JsonValue integers(const std::vector<int64_t> &values);
  /// An array of strings.
  static JsonValue strings(const std::vector<std::string> &values);
  /// An empty object.
  static JsonValue object();

  /// This value's kind.
  Kind kind() const { return valueKind; }
  /// "null", "boolean", "integer", "number", "string", "array", "object".
  static const char *kindName(Kind kind);

  /// The boolean; only for Kind::Bool.
  bool asBool() const { return boolValue; }
  /// The integer; only for Kind::Integer.
  int64_t asInteger() const { return integerValue; }
  /// The number as a double; for Kind::Integer and Kind::Double.
  double asDouble() const;
  /// The string; only for Kind::String.
  const std::string &asString() const { return text; }
  /// The elements; only for Kind::Array.
  const std::vector<JsonValue> &items() const { return elements; }
  /// The members; only for Kind::Object.
  const Members &members() const { return fields; }

  /// Appends `value` to an array.
  JsonValue &push(JsonValue value);
  /// Sets member `key` of an object, replacing an existing one in place.
  JsonValue &set(std::string key, JsonValue value);
  /// The member called `key` of an object, or null when there is none.
  const JsonValue *find(std::string_view key) const;

private:
  Kind valueKind = Kind::Null;
  bool boolValue = false;
  int64_t integerValue = 0;
  double doubleValue = 0;
  std::string text;
  std::vector<JsonValue> elements;
  Members fields;
};

/// Parses one JSON document (RFC 8259; nesting deeper than 256 rejected).
/// A failure reads "line L, column C: what is wrong".
Expected<JsonValue> parseJson(std::string_view text);

/// Prints `value` indented by two spaces per level, keeping an array or
/// object on one line when that line stays within 100 columns. Ends with a
/// newline.
std::string printJson(const JsonValue &value);

/// `value` as a string on one line (no trailing newline).
std::string printJsonCompact(const JsonValue &value);

} // namespace partita

#endif // PARTITA_RUNTIME_JSON_H
