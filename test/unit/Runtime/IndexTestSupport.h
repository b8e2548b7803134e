//===- IndexTestSupport.h - Row-major index math for test oracles -*- C++
//-*-===//
//
// Written here, not taken from the library, so that tests' reference
// implementations do not share the index math they check.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TEST_UNIT_INDEXTESTSUPPORT_H
#define PARTITA_TEST_UNIT_INDEXTESTSUPPORT_H

#include <cstdint>
#include <vector>

namespace partita::index_test {

/// The row-major multi-index of `flat` in `shape`.
inline std::vector<int64_t> unflatten(int64_t flat,
                                      const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

/// The row-major flat position of `index` in `shape`.
inline int64_t flatten(const std::vector<int64_t> &index,
                       const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

/// Number of elements of `shape` (1 for a scalar).
inline int64_t countOf(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

} // namespace partita::index_test

#endif // PARTITA_TEST_UNIT_INDEXTESTSUPPORT_H
