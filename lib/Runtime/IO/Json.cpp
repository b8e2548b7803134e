//===- Json.cpp - A minimal JSON value, parser and printer ----------------===//
//
// A recursive-descent parser over a string_view that tracks line and column
// for messages, and a printer that decides per array/object whether its
// one-line form fits.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace partita {

namespace {

constexpr int maxNestingDepth = 256;
constexpr size_t printWidth = 100;

class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text(text) {}

  Expected<JsonValue> parseDocument() {
    Expected<JsonValue> value = parseValue(0);
    if (!value)
      return value;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the JSON value");
    return value;
  }

private:
  Status fail(const std::string &message) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Status::error("line " + std::to_string(line) + ", column " +
                         std::to_string(column) + ": " + message);
  }
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool atEnd() const { return pos >= text.size(); }
  void skipSpace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\n' ||
                        text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  Expected<JsonValue> parseValue(int depth) {
    if (depth > maxNestingDepth)
      return fail("nesting too deep");
    skipSpace();
    if (atEnd())
      return fail("unexpected end of input, expected a value");
    char c = peek();
    if (c == '{')
      return parseObject(depth);
    if (c == '[')
      return parseArray(depth);
    if (c == '"') {
      Expected<std::string> s = parseString();
      if (!s)
        return s.status();
      return JsonValue::string(std::move(*s));
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber();
    if (consumeWord("true"))
      return JsonValue::boolean(true);
    if (consumeWord("false"))
      return JsonValue::boolean(false);
    if (consumeWord("null"))
      return JsonValue();
    return fail(std::string("unexpected character '") + c + "'");
  }

  Expected<JsonValue> parseObject(int depth) {
    ++pos; // '{'
    JsonValue object = JsonValue::object();
    skipSpace();
    if (peek() == '}') {
      ++pos;
      return object;
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a member name in double quotes");
      size_t keyStart = pos;
      Expected<std::string> key = parseString();
      if (!key)
        return key.status();
      if (object.find(*key)) {
        pos = keyStart;
        return fail("duplicate member \"" + *key + "\"");
      }
      skipSpace();
      if (peek() != ':')
        return fail("expected ':' after member name \"" + *key + "\"");
      ++pos;
      Expected<JsonValue> value = parseValue(depth + 1);
      if (!value)
        return value;
      object.set(std::move(*key), std::move(*value));
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == '}') {
        ++pos;
        return object;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  Expected<JsonValue> parseArray(int depth) {
    ++pos; // '['
    JsonValue array = JsonValue::array();
    skipSpace();
    if (peek() == ']') {
      ++pos;
      return array;
    }
    while (true) {
      Expected<JsonValue> value = parseValue(depth + 1);
      if (!value)
        return value;
      array.push(std::move(*value));
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == ']') {
        ++pos;
        return array;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  Expected<JsonValue> parseNumber() {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (!atEnd() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos - from;
    };
    if (peek() == '-')
      ++pos;
    if (peek() == '0')
      ++pos;
    else if (digits() == 0)
      return fail("malformed number");
    bool integral = true;
    if (peek() == '.') {
      ++pos;
      integral = false;
      if (digits() == 0)
        return fail("malformed number: digits expected after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos;
      integral = false;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (digits() == 0)
        return fail("malformed number: digits expected in the exponent");
    }
    std::string token(text.substr(start, pos - start));
    if (integral) {
      errno = 0;
      char *end = nullptr;
      long long value = std::strtoll(token.c_str(), &end, 10);
      if (errno == 0 && end == token.c_str() + token.size())
        return JsonValue::integer(value);
    }
    return JsonValue::number(std::strtod(token.c_str(), nullptr));
  }

  static void appendUtf8(std::string &out, uint32_t codePoint) {
    if (codePoint < 0x80) {
      out += static_cast<char>(codePoint);
    } else if (codePoint < 0x800) {
      out += static_cast<char>(0xc0 | (codePoint >> 6));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    } else if (codePoint < 0x10000) {
      out += static_cast<char>(0xe0 | (codePoint >> 12));
      out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (codePoint >> 18));
      out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    }
  }

  Expected<uint32_t> parseHex4() {
    if (text.size() - pos < 4)
      return fail("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        return fail("bad hex digit in \\u escape");
    }
    return value;
  }

  Expected<std::string> parseString() {
    ++pos; // opening quote
    std::string out;
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (atEnd())
        return fail("unterminated escape");
      char escape = text[pos++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        Expected<uint32_t> unit = parseHex4();
        if (!unit)
          return unit.status();
        uint32_t codePoint = *unit;
        if (codePoint >= 0xd800 && codePoint < 0xdc00) {
          if (!consumeWord("\\u"))
            return fail("unpaired surrogate in \\u escape");
          Expected<uint32_t> low = parseHex4();
          if (!low)
            return low.status();
          if (*low < 0xdc00 || *low >= 0xe000)
            return fail("unpaired surrogate in \\u escape");
          codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (*low - 0xdc00);
        }
        appendUtf8(out, codePoint);
        break;
      }
      default:
        return fail(std::string("unknown escape '\\") + escape + "'");
      }
    }
  }

  std::string_view text;
  size_t pos = 0;
};

void appendQuoted(std::string &out, const std::string &value) {
  out += '"';
  for (char c : value) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void appendCompact(std::string &out, const JsonValue &value) {
  switch (value.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case JsonValue::Kind::Integer:
    out += std::to_string(value.asInteger());
    return;
  case JsonValue::Kind::Double: {
    double number = value.asDouble();
    if (!std::isfinite(number)) { // JSON has no inf or nan.
      out += "null";
      return;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.17g", number);
    out += buffer;
    return;
  }
  case JsonValue::Kind::String:
    appendQuoted(out, value.asString());
    return;
  case JsonValue::Kind::Array: {
    out += '[';
    bool first = true;
    for (const JsonValue &item : value.items()) {
      out += first ? "" : ", ";
      first = false;
      appendCompact(out, item);
    }
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &[key, member] : value.members()) {
      out += first ? "" : ", ";
      first = false;
      appendQuoted(out, key);
      out += ": ";
      appendCompact(out, member);
    }
    out += '}';
    return;
  }
  }
}

/// Appends `value` whose first line already has `column` characters.
void appendPretty(std::string &out, const JsonValue &value, size_t indent,
                  size_t column) {
  std::string compact;
  appendCompact(compact, value);
  bool isContainer = value.kind() == JsonValue::Kind::Array ||
                     value.kind() == JsonValue::Kind::Object;
  bool empty = value.kind() == JsonValue::Kind::Array ? value.items().empty()
                                                      : value.members().empty();
  if (!isContainer || empty || column + compact.size() <= printWidth) {
    out += compact;
    return;
  }
  std::string inner(indent + 2, ' ');
  bool isArray = value.kind() == JsonValue::Kind::Array;
  out += isArray ? "[\n" : "{\n";
  size_t count = isArray ? value.items().size() : value.members().size();
  for (size_t i = 0; i < count; ++i) {
    out += inner;
    size_t lineStart = out.size() - inner.size();
    if (isArray) {
      appendPretty(out, value.items()[i], indent + 2, inner.size());
    } else {
      appendQuoted(out, value.members()[i].first);
      out += ": ";
      appendPretty(out, value.members()[i].second, indent + 2,
                   out.size() - lineStart);
    }
    out += i + 1 < count ? ",\n" : "\n";
  }
  out += std::string(indent, ' ');
  out += isArray ? ']' : '}';
}

} // namespace

JsonValue JsonValue::boolean(bool value) {
  JsonValue json;
  json.valueKind = Kind::Bool;
  json.boolValue = value;
  return json;
}

JsonValue JsonValue::integer(int64_t value) {
  JsonValue json;
  json.valueKind = Kind::Integer;
  json.integerValue = value;
  return json;
}

JsonValue JsonValue::number(double value) {
  JsonValue json;
  json.valueKind = Kind::Double;
  json.doubleValue = value;
  return json;
}

JsonValue JsonValue::string(std::string value) {
  JsonValue json;
  json.valueKind = Kind::String;
  json.text = std::move(value);
  return json;
}

JsonValue JsonValue::array() {
  JsonValue json;
  json.valueKind = Kind::Array;
  return json;
}

JsonValue JsonValue::integers(const std::vector<int64_t> &values) {
  JsonValue json = array();
  for (int64_t value : values)
    json.push(integer(value));
  return json;
}

JsonValue JsonValue::strings(const std::vector<std::string> &values) {
  JsonValue json = array();
  for (const std::string &value : values)
    json.push(string(value));
  return json;
}

JsonValue JsonValue::object() {
  JsonValue json;
  json.valueKind = Kind::Object;
  return json;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "boolean";
  case Kind::Integer:
    return "integer";
  case Kind::Double:
    return "number";
  case Kind::String:
    return "string";
  case Kind::Array:
    return "array";
  case Kind::Object:
    return "object";
  }
  return "?";
}

double JsonValue::asDouble() const {
  return valueKind == Kind::Integer ? static_cast<double>(integerValue)
                                    : doubleValue;
}

JsonValue &JsonValue::push(JsonValue value) {
  elements.push_back(std::move(value));
  return elements.back();
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  for (auto &[name, member] : fields) {
    if (name == key) {
      member = std::move(value);
      return member;
    }
  }
  fields.emplace_back(std::move(key), std::move(value));
  return fields.back().second;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &[name, member] : fields)
    if (name == key)
      return &member;
  return nullptr;
}

Expected<JsonValue> parseJson(std::string_view text) {
  return JsonParser(text).parseDocument();
}

std::string printJson(const JsonValue &value) {
  std::string out;
  appendPretty(out, value, 0, 0);
  return out + "\n";
}

std::string printJsonCompact(const JsonValue &value) {
  std::string out;
  appendCompact(out, value);
  return out;
}

} // namespace partita
