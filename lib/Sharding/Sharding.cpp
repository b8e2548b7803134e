//===- Sharding.cpp - The sharding of one tensor --------------------------===//
//
// Structural and mesh checks of a Sharding, its attribute-body spelling, and
// the conversion from and to JAX's PartitionSpec spelling.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Sharding.h"
#include "partita/Sharding/EnumName.h"

#include <cctype>

namespace partita {

namespace {

/// An axis name as a double-quoted string, with `"` and `\` escaped.
std::string quote(const std::string &name) {
  std::string text = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\')
      text += '\\';
    text += c;
  }
  return text + "\"";
}

std::string quotedList(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names) {
    if (!text.empty())
      text += ", ";
    text += quote(name);
  }
  return text;
}

std::string dimToString(const DimSharding &dim) {
  std::string text = "{" + quotedList(dim.axes);
  if (dim.open)
    text += dim.axes.empty() ? "?" : ", ?";
  return text + "}";
}

/// "'data', 'model'" or "no axes" for the unknown-axis message.
std::string meshAxesForMessage(const Mesh &mesh) {
  if (mesh.rank() == 0)
    return "the mesh has no axes";
  std::string text = "the mesh has axes ";
  for (int i = 0; i < mesh.rank(); ++i)
    text += (i ? ", '" : "'") + mesh.axes()[i].name + "'";
  return text;
}

/// A small recursive-descent parser for PartitionSpec text. It reads Python
/// syntax only as far as PartitionSpecs use it: names, dotted names, quoted
/// strings, parentheses and commas.
class PartitionSpecParser {
public:
  explicit PartitionSpecParser(std::string_view text) : text(text) {}

  Expected<Sharding> parse() {
    Sharding sharding;
    std::string head;
    size_t headPos = skipSpace();
    if (!parseDottedName(head) || !(endsWithComponent(head, "P") ||
                                    endsWithComponent(head, "PartitionSpec")))
      return error(headPos, "expected 'P(' or 'PartitionSpec('");
    if (!consume('('))
      return error(skipSpace(), "expected '(' after '" + head + "'");
    if (!consume(')')) {
      while (true) {
        DimSharding dim;
        if (Status status = parseEntry(dim); !status.ok())
          return status;
        sharding.dims.push_back(std::move(dim));
        if (consume(')'))
          break;
        if (!consume(','))
          return error(skipSpace(), "expected ',' or ')' after dimension " +
                                        std::to_string(sharding.rank() - 1));
        if (consume(')'))
          break;
      }
    }
    size_t end = skipSpace();
    if (end != text.size())
      return error(end, "unexpected text after the closing ')'");
    return sharding;
  }

private:
  std::string_view text;
  size_t pos = 0;

  size_t skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
    return pos;
  }

  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  /// What sits at `at`, for messages: a short excerpt or "end of input".
  std::string describe(size_t at) const {
    if (at >= text.size())
      return "end of input";
    std::string_view rest = text.substr(at, 12);
    return "'" + std::string(rest) + (at + 12 < text.size() ? "...'" : "'");
  }

  Status error(size_t at, const std::string &what) const {
    return Status::error("invalid PartitionSpec at position " +
                         std::to_string(at) + ": " + what + ", got " +
                         describe(at));
  }

  static bool isNameStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool isNameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool endsWithComponent(const std::string &name, const char *last) {
    std::string suffix = last;
    if (name == suffix)
      return true;
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
               0 &&
           name[name.size() - suffix.size() - 1] == '.';
  }

  /// Reads `a.b.c` (no spaces inside) into `name`; false when no name starts
  /// here or a '.' is not followed by a name.
  bool parseDottedName(std::string &name) {
    skipSpace();
    size_t start = pos;
    while (true) {
      if (pos >= text.size() || !isNameStart(text[pos])) {
        pos = start;
        return false;
      }
      while (pos < text.size() && isNameChar(text[pos]))
        ++pos;
      if (pos < text.size() && text[pos] == '.') {
        ++pos;
        continue;
      }
      break;
    }
    name = std::string(text.substr(start, pos - start));
    return true;
  }

  /// Reads a Python string literal in single or double quotes.
  Status parseString(std::string &value) {
    size_t start = skipSpace();
    char quoteChar = text[pos++];
    value.clear();
    while (pos < text.size() && text[pos] != quoteChar) {
      if (text[pos] == '\\' && pos + 1 < text.size())
        ++pos;
      value += text[pos++];
    }
    if (pos >= text.size())
      return Status::error("invalid PartitionSpec at position " +
                           std::to_string(start) +
                           ": unterminated string starting " + describe(start));
    ++pos;
    if (value.empty())
      return error(start, "expected a non-empty mesh axis name");
    return Status::success();
  }

  bool atString() {
    skipSpace();
    return pos < text.size() && (text[pos] == '"' || text[pos] == '\'');
  }

  Status parseEntry(DimSharding &dim) {
    size_t start = skipSpace();
    if (atString()) {
      std::string axis;
      if (Status status = parseString(axis); !status.ok())
        return status;
      dim.axes.push_back(std::move(axis));
      return Status::success();
    }
    if (consume('('))
      return parseTuple(dim);
    std::string name;
    if (parseDottedName(name)) {
      if (name == "None")
        return Status::success();
      if (endsWithComponent(name, "P.UNCONSTRAINED") ||
          endsWithComponent(name, "PartitionSpec.UNCONSTRAINED")) {
        dim.open = true;
        return Status::success();
      }
      pos = start;
    }
    return error(start, "expected a quoted axis name, a tuple of axis names, "
                        "None or P.UNCONSTRAINED");
  }

  /// After '(': a possibly empty tuple of axis names, Python style (a
  /// trailing comma is allowed; `("x")` is just "x").
  Status parseTuple(DimSharding &dim) {
    if (consume(')'))
      return Status::success();
    while (true) {
      size_t start = skipSpace();
      if (!atString())
        return error(start, "expected a quoted axis name inside the tuple");
      std::string axis;
      if (Status status = parseString(axis); !status.ok())
        return status;
      dim.axes.push_back(std::move(axis));
      if (consume(')'))
        return Status::success();
      if (!consume(','))
        return error(skipSpace(), "expected ',' or ')' inside the tuple");
      if (consume(')'))
        return Status::success();
    }
  }
};

} // namespace

const char *partialKindName(PartialKind kind) {
  static const char *const names[] = {"", "sum", "max", "min"};
  return enumName<PartialKind::Min>(kind, names, "");
}

Sharding Sharding::replicated(int rank) {
  Sharding sharding;
  sharding.dims.resize(rank > 0 ? rank : 0);
  return sharding;
}

Sharding Sharding::open(int rank) {
  Sharding sharding = replicated(rank);
  for (DimSharding &dim : sharding.dims)
    dim.open = true;
  return sharding;
}

bool Sharding::isReplicated() const {
  if (partialKind != PartialKind::None || !partialAxes.empty())
    return false;
  for (const DimSharding &dim : dims)
    if (!dim.axes.empty())
      return false;
  return true;
}

std::vector<std::string> Sharding::dimAxes() const {
  std::vector<std::string> axes;
  for (const DimSharding &dim : dims)
    axes.insert(axes.end(), dim.axes.begin(), dim.axes.end());
  return axes;
}

std::string Sharding::toString() const {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + dimToString(dims[i]);
  text += "]";
  if (partialKind != PartialKind::None || !partialAxes.empty())
    text += ", partial = " + std::string(partialKindName(partialKind)) + "{" +
            quotedList(partialAxes) + "}";
  if (priority)
    text += ", priority = " + std::to_string(*priority);
  return text;
}

Status validateStructure(const Sharding &sharding) {
  // Where each axis was first seen: a dimension index, or -1 for partial.
  std::vector<std::pair<std::string, int>> seen;
  auto firstUse = [&](const std::string &axis) -> const int * {
    for (const auto &entry : seen)
      if (entry.first == axis)
        return &entry.second;
    return nullptr;
  };
  for (int d = 0; d < sharding.rank(); ++d) {
    for (const std::string &axis : sharding.dims[d].axes) {
      if (axis.empty())
        return Status::error("dimension " + std::to_string(d) +
                             " names an empty mesh axis");
      if (const int *other = firstUse(axis)) {
        if (*other == d)
          return Status::error("mesh axis '" + axis +
                               "' is used twice in dimension " +
                               std::to_string(d));
        return Status::error("mesh axis '" + axis +
                             "' is used twice (dimension " +
                             std::to_string(*other) + " and dimension " +
                             std::to_string(d) + ")");
      }
      seen.emplace_back(axis, d);
    }
  }
  for (const std::string &axis : sharding.partialAxes) {
    if (axis.empty())
      return Status::error("the partial axes name an empty mesh axis");
    if (const int *other = firstUse(axis)) {
      if (*other < 0)
        return Status::error("partial axis '" + axis + "' is listed twice");
      return Status::error("partial axis '" + axis +
                           "' is also used by dimension " +
                           std::to_string(*other));
    }
    seen.emplace_back(axis, -1);
  }
  if (sharding.partialKind != PartialKind::None && sharding.partialAxes.empty())
    return Status::error("partial kind '" +
                         std::string(partialKindName(sharding.partialKind)) +
                         "' needs at least one partial axis");
  if (sharding.partialKind == PartialKind::None &&
      !sharding.partialAxes.empty())
    return Status::error("partial axes " + quotedList(sharding.partialAxes) +
                         " are given without a partial kind (sum, max, min)");
  if (sharding.priority && *sharding.priority < 0)
    return Status::error("priority must be non-negative, got " +
                         std::to_string(*sharding.priority));
  return Status::success();
}

Status validateSharding(const Mesh &mesh, const Sharding &sharding,
                        const std::vector<int64_t> *shape) {
  if (Status status = validateStructure(sharding); !status.ok())
    return status;
  auto checkAxis = [&](const std::string &axis) {
    if (mesh.axisIndex(axis) >= 0)
      return Status::success();
    return Status::error("unknown mesh axis '" + axis + "'; " +
                         meshAxesForMessage(mesh));
  };
  for (const DimSharding &dim : sharding.dims)
    for (const std::string &axis : dim.axes)
      if (Status status = checkAxis(axis); !status.ok())
        return status;
  for (const std::string &axis : sharding.partialAxes)
    if (Status status = checkAxis(axis); !status.ok())
      return status;
  if (shape && static_cast<int64_t>(shape->size()) != sharding.rank())
    return Status::error("the sharding has " + std::to_string(sharding.rank()) +
                         " dimensions but the tensor has rank " +
                         std::to_string(shape->size()));
  return Status::success();
}

Expected<Sharding> parsePartitionSpec(std::string_view text, int rank) {
  Expected<Sharding> parsed = PartitionSpecParser(text).parse();
  if (!parsed)
    return parsed;
  Sharding &sharding = *parsed;
  if (rank >= 0) {
    if (sharding.rank() > rank)
      return Status::error(
          "PartitionSpec has " + std::to_string(sharding.rank()) +
          " entries but the tensor has rank " + std::to_string(rank));
    sharding.dims.resize(rank);
  }
  if (Status status = validateStructure(sharding); !status.ok())
    return status;
  return parsed;
}

Expected<std::string> toPartitionSpec(const Sharding &sharding) {
  if (sharding.partialKind != PartialKind::None ||
      !sharding.partialAxes.empty())
    return Status::error("a partial sharding (" + sharding.toString() +
                         ") has no PartitionSpec spelling");
  std::string text = "P(";
  for (int d = 0; d < sharding.rank(); ++d) {
    const DimSharding &dim = sharding.dims[d];
    if (d)
      text += ", ";
    if (dim.open && !dim.axes.empty())
      return Status::error("dimension " + std::to_string(d) + " " +
                           dimToString(dim) +
                           " is open with axes and has no PartitionSpec "
                           "spelling");
    if (dim.open)
      text += "P.UNCONSTRAINED";
    else if (dim.axes.empty())
      text += "None";
    else if (dim.axes.size() == 1)
      text += quote(dim.axes.front());
    else
      text += "(" + quotedList(dim.axes) + ")";
  }
  return text + ")";
}

} // namespace partita
