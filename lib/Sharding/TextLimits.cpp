//===- TextLimits.cpp - Input the recursive parsers must not see ----------===//

#include "partita/Sharding/TextLimits.h"

#include <string>

namespace partita {

Status checkJsonNesting(std::string_view text, int maxDepth) {
  int depth = 0;
  int64_t line = 1, column = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      continue;
    }
    if (inString) {
      if (c == '\\') {
        ++i;
        ++column;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return Status::error("line " + std::to_string(line) + ", column " +
                             std::to_string(column) + ": nested more than " +
                             std::to_string(maxDepth) + " levels deep");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::success();
}

} // namespace partita
