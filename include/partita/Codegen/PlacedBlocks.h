//===- PlacedBlocks.h - the buffer planner's index of placed blocks -*- C++ -*-===//
//
// The blocks of a buffer plan placed so far, each a closed range of program
// points and a range of bytes, answering "which bytes are taken at some
// point of [begin, end]" without visiting every block (docs/Runtime.md, "The
// buffer plan").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_CODEGEN_PLACEDBLOCKS_H
#define PARTITA_CODEGEN_PLACEDBLOCKS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace partita {

/// A segment tree over the program points where a block is stored at the
/// O(log n) nodes whose spans make up its range. Each node keeps the bytes
/// of the blocks stored at it (`own`) and of every block stored in its
/// subtree (`below`) as sorted, coalesced runs, so a query reads O(log n)
/// short lists whatever the number of blocks: the bytes of a thousand
/// weights alive for the whole program are one run. Runs that touch are
/// joined; a first-fit scan over them finds the same offset as over the
/// blocks one by one.
class PlacedBlocks {
public:
  using Runs = std::vector<std::pair<int64_t, int64_t>>;

  /// `points`: every begin and end a block will have, in any order (a
  /// block or query is seen at these points only).
  explicit PlacedBlocks(std::vector<int64_t> points);

  /// Places bytes [low, high) over the points [begin, end].
  void add(int64_t begin, int64_t end, int64_t low, int64_t high);

  /// Appends runs of bytes that together are exactly the bytes of the
  /// blocks alive at some point of [begin, end] (runs may overlap each
  /// other; unsorted).
  void busy(int64_t begin, int64_t end, Runs &out) const;

private:
  /// The first and last of `points` within [begin, end], if any.
  std::optional<std::pair<size_t, size_t>> indices(int64_t begin,
                                                   int64_t end) const;
  static void insert(Runs &runs, std::pair<int64_t, int64_t> run);
  void add(size_t node, size_t lo, size_t hi, size_t begin, size_t end,
           std::pair<int64_t, int64_t> run);
  void busy(size_t node, size_t lo, size_t hi, size_t begin, size_t end,
            Runs &out) const;

  std::vector<int64_t> points;
  std::vector<Runs> own, below;
};

} // namespace partita

#endif // PARTITA_CODEGEN_PLACEDBLOCKS_H
