//===- TextLimits.h - Input the recursive parsers must not see --*- C++ -*-===//
//
// LLVM's JSON parser recurses once per nested array or object, so a file of
// 50,000 '[' overflows the stack. The compiler's JSON inputs (interconnect
// specs, logical rules, cluster files) are checked here before they are
// parsed; the runtime's reader (Runtime/IO/Json.h) has its own limit.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_TEXTLIMITS_H
#define PARTITA_SHARDING_TEXTLIMITS_H

#include "partita/Sharding/Status.h"

#include <string_view>

namespace partita {

/// The deepest nesting of arrays and objects a JSON input may have; the
/// runtime's reader accepts as much.
constexpr int kMaxJsonNesting = 256;

/// An error "line L, column C: nested more than N levels deep" when `text`
/// nests arrays and objects (outside strings) deeper than `maxDepth`;
/// success otherwise, whether or not the rest is valid JSON.
Status checkJsonNesting(std::string_view text,
                        int maxDepth = kMaxJsonNesting);

} // namespace partita

#endif // PARTITA_SHARDING_TEXTLIMITS_H
