//===- Json.cpp - JSON values, parsing and printing -----------------------===//
//
// Parsing is nlohmann's SAX parser feeding a document builder that also
// rejects duplicate members and deep nesting, and turns nlohmann's errors
// into a line, a column and a short phrase. Printing decides per array or
// object whether its one-line form fits; scalars and quoting are nlohmann's.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/Json.h"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

namespace partita {

namespace {

constexpr size_t maxNestingDepth = 256;
constexpr size_t printWidth = 100;

/// A character iterator that records in `*cursor` how far the parser has
/// read (the builder below reports a duplicate member where its name is).
class TrackingIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  TrackingIterator(const char *at, const char **cursor)
      : at(at), cursor(cursor) {}
  reference operator*() const { return *at; }
  TrackingIterator &operator++() {
    *cursor = ++at;
    return *this;
  }
  bool operator==(const TrackingIterator &other) const {
    return at == other.at;
  }
  bool operator!=(const TrackingIterator &other) const {
    return at != other.at;
  }

private:
  const char *at;
  const char **cursor;
};

/// "line L, column C: " of byte `index` of `text` (the end when past it).
std::string location(std::string_view text, size_t index) {
  int line = 1, column = 1;
  for (size_t i = 0; i < index && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": ";
}

bool isLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// Builds the document from nlohmann's SAX events; on failure, records
/// where and why.
class DocumentBuilder : public nlohmann::json_sax<Json> {
public:
  DocumentBuilder(std::string_view text, const char *const *cursor)
      : text(text), cursor(cursor) {}

  bool null() override { return add(Json()); }
  bool boolean(bool value) override { return add(Json(value)); }
  bool number_integer(number_integer_t value) override {
    return add(Json(value));
  }
  bool number_unsigned(number_unsigned_t value) override {
    return add(Json(value));
  }
  bool number_float(number_float_t value, const string_t &) override {
    return add(Json(value));
  }
  bool string(string_t &value) override { return add(Json(std::move(value))); }
  bool binary(binary_t &) override { return true; } // Not in JSON text.
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t &name) override {
    Json &object = *containers.back();
    if (object.contains(name))
      return fail(keyStart(), "duplicate member \"" + name + "\"");
    lastKey = name;
    member = &object[name];
    return true;
  }

  bool parse_error(std::size_t position, const std::string &lastToken,
                   const nlohmann::detail::exception &error) override {
    // `position` counts the characters read, the one that failed included.
    size_t index = position > 0 ? position - 1 : 0;
    std::string what = error.what();
    auto has = [&](const char *phrase) {
      return what.find(phrase) != std::string::npos;
    };
    // An unexpected string or number: point at its start. Its text is
    // `lastToken` (nlohmann starts a token's text only for these two).
    if ((has("- unexpected string literal") ||
         has("- unexpected number literal")) &&
        !lastToken.empty() && lastToken.size() <= index + 1)
      index -= lastToken.size() - 1;
    // An unexpected true, false or null: point at its first letter.
    if (has("- unexpected true literal") || has("- unexpected false literal") ||
        has("- unexpected null literal"))
      while (index > 0 && isLetter(text[index - 1]))
        --index;
    return fail(index, describe(what, index));
  }

  /// The document; only after a successful parse.
  Json &document() { return root; }
  /// Why the parse failed ("line L, column C: ...").
  const std::string &failure() const { return message; }

private:
  bool add(Json value) {
    place(std::move(value));
    return true;
  }
  /// Puts `value` where the document expects the next value.
  Json *place(Json value) {
    if (containers.empty()) {
      root = std::move(value);
      return &root;
    }
    Json &parent = *containers.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *member = std::move(value);
    return member;
  }
  bool open(Json container) {
    if (containers.size() > maxNestingDepth)
      return fail(consumed() - 1, "nesting too deep");
    containers.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    containers.pop_back();
    return true;
  }
  bool fail(size_t index, const std::string &why) {
    message = location(text, index) + why;
    return false;
  }
  size_t consumed() const { return static_cast<size_t>(*cursor - text.data()); }
  /// The opening quote of the member name the parser has just read.
  size_t keyStart() const {
    size_t closing = consumed() - 1;
    for (size_t i = closing; i-- > 0;) {
      if (text[i] != '"')
        continue;
      size_t backslashes = 0;
      while (backslashes < i && text[i - 1 - backslashes] == '\\')
        ++backslashes;
      if (backslashes % 2 == 0)
        return i;
    }
    return 0;
  }
  /// Short phrases for nlohmann's "syntax error while parsing <context> -
  /// <problem>" messages about byte `index`.
  std::string describe(const std::string &what, size_t &index) const {
    size_t at = what.find("while parsing ");
    std::string detail = at == std::string::npos ? what : what.substr(at + 14);
    auto has = [&](const char *phrase) {
      return detail.find(phrase) != std::string::npos;
    };
    auto context = [&](const char *name) {
      return detail.compare(0, std::strlen(name), name) == 0;
    };
    char offending = index < text.size() ? text[index] : '\0';
    // A word (literal or number) the lexer stopped inside starts here.
    auto wordStart = [&] {
      auto inWord = [](char c) {
        return isLetter(c) || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
               c == '+';
      };
      while (index > 0 && index <= text.size() && inWord(text[index - 1]))
        --index;
    };
    if (has("; expected end of input")) {
      wordStart();
      return "unexpected text after the JSON value";
    }
    // nlohmann's lexer errors, by a phrase of theirs, in our words; the
    // first match wins.
    static const std::pair<const char *, const char *> lexerErrors[] = {
        {"missing closing quote", "unterminated string"},
        {"surrogate", "unpaired surrogate in \\u escape"},
        {"must be followed by 4 hex digits", "bad hex digit in \\u escape"},
        {"control character", "control character in a string"},
        {"ill-formed UTF-8", "ill-formed UTF-8 in a string"},
        {"after '.'", "malformed number: digits expected after '.'"},
        {"after exponent", "malformed number: digits expected in the exponent"},
        {"invalid number", "malformed number"},
    };
    if (has("forbidden character after backslash"))
      return std::string("unknown escape '\\") + offending + "'";
    for (const auto &[theirs, ours] : lexerErrors)
      if (has(theirs))
        return ours;
    if (context("object key"))
      return "expected a member name in double quotes";
    if (context("object separator"))
      return "expected ':' after member name \"" + lastKey + "\"";
    if (context("array"))
      return "expected ',' or ']' in an array";
    if (context("object"))
      return "expected ',' or '}' in an object";
    if (has("unexpected end of input"))
      return "unexpected end of input, expected a value";
    wordStart();
    return std::string("unexpected character '") +
           (index < text.size() ? text[index] : '?') + "'";
  }

  std::string_view text;
  const char *const *cursor;
  Json root;
  /// The open arrays and objects, innermost last.
  std::vector<Json *> containers;
  /// The member whose name was read last, waiting for its value.
  Json *member = nullptr;
  std::string lastKey;
  std::string message;
};

std::string quoted(const std::string &text) {
  return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void appendCompact(std::string &out, const Json &value) {
  if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const Json &item : value) {
      out += first ? "" : ", ";
      first = false;
      appendCompact(out, item);
    }
    out += ']';
    return;
  }
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += first ? "" : ", ";
      first = false;
      out += quoted(it.key()) + ": ";
      appendCompact(out, it.value());
    }
    out += '}';
    return;
  }
  // JSON has no inf or nan: nlohmann prints them as null.
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// Appends `value` whose first line already has `column` characters.
void appendPretty(std::string &out, const Json &value, size_t indent,
                  size_t column) {
  std::string compact;
  appendCompact(compact, value);
  bool isContainer = value.is_array() || value.is_object();
  if (!isContainer || value.empty() || column + compact.size() <= printWidth) {
    out += compact;
    return;
  }
  std::string inner(indent + 2, ' ');
  bool isArray = value.is_array();
  out += isArray ? "[\n" : "{\n";
  size_t count = value.size(), i = 0;
  for (auto it = value.begin(); it != value.end(); ++it, ++i) {
    out += inner;
    size_t lineStart = out.size() - inner.size();
    if (!isArray)
      out += quoted(it.key()) + ": ";
    appendPretty(out, it.value(), indent + 2, out.size() - lineStart);
    out += i + 1 < count ? ",\n" : "\n";
  }
  out += std::string(indent, ' ');
  out += isArray ? ']' : '}';
}

} // namespace

JsonKind jsonKind(const Json &value) {
  switch (value.type()) {
  case Json::value_t::boolean:
    return JsonKind::Bool;
  case Json::value_t::number_integer:
    return JsonKind::Integer;
  case Json::value_t::number_unsigned:
    return value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
               ? JsonKind::Integer
               : JsonKind::Number;
  case Json::value_t::number_float:
    return JsonKind::Number;
  case Json::value_t::string:
    return JsonKind::String;
  case Json::value_t::array:
    return JsonKind::Array;
  case Json::value_t::object:
    return JsonKind::Object;
  default: // null, and binary and discarded, which parsing never gives
    return JsonKind::Null;
  }
}

const char *jsonKindName(JsonKind kind) {
  // In the order of JsonKind.
  static const char *const names[] = {"null",   "boolean", "integer", "number",
                                      "string", "array",   "object"};
  return names[static_cast<size_t>(kind)];
}

Expected<Json> parseJson(std::string_view text) {
  const char *cursor = text.data();
  DocumentBuilder builder(text, &cursor);
  TrackingIterator begin(text.data(), &cursor),
      end(text.data() + text.size(), &cursor);
  if (!Json::sax_parse(begin, end, &builder))
    return Status::error(builder.failure());
  return std::move(builder.document());
}

std::string printJson(const Json &value) {
  std::string out;
  appendPretty(out, value, 0, 0);
  return out + "\n";
}

std::string printJsonCompact(const Json &value) {
  std::string out;
  appendCompact(out, value);
  return out;
}

} // namespace partita
