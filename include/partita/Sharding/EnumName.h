//===- EnumName.h - Names of enumerators from one table ---------*- C++ -*-===//
//
// The keyword of an enumerator from a table of names written once, in the
// enum's declaration order, instead of a switch per enum: the table's size
// is checked against the enum's last enumerator at compile time, and a value
// out of range (a code read from a damaged file) gets the fallback.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_ENUMNAME_H
#define PARTITA_SHARDING_ENUMNAME_H

#include <cstddef>

namespace partita {

/// The name of `value`, an enumerator of an enum whose enumerators are 0,
/// 1, ... `Last` in declaration order, from `names` (one per enumerator, in
/// that order); `fallback` when `value` is out of range.
template <auto Last, typename Enum, size_t N>
const char *enumName(Enum value, const char *const (&names)[N],
                     const char *fallback = "?") {
  static_assert(N == static_cast<size_t>(Last) + 1,
                "one name per enumerator, in declaration order");
  auto index = static_cast<size_t>(value);
  return index < N ? names[index] : fallback;
}

} // namespace partita

#endif // PARTITA_SHARDING_ENUMNAME_H
