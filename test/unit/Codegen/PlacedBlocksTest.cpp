//===- PlacedBlocksTest.cpp - the buffer planner's block index ------------===//
//
// PlacedBlocks against a brute force: for random blocks and queries, the
// bytes it reports busy over a range of points are exactly those of the
// blocks alive at some point of that range.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/PlacedBlocks.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace partita;

namespace {

struct Block {
  int64_t begin, end, low, high;
};

/// Sorted, coalesced union of byte runs (touching runs joined).
PlacedBlocks::Runs unite(PlacedBlocks::Runs runs) {
  std::sort(runs.begin(), runs.end());
  PlacedBlocks::Runs joined;
  for (const auto &run : runs) {
    if (!joined.empty() && run.first <= joined.back().second)
      joined.back().second = std::max(joined.back().second, run.second);
    else
      joined.push_back(run);
  }
  return joined;
}

} // namespace

TEST_CASE("placed blocks: busy bytes equal a brute force over random blocks",
          "[codegen]") {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t horizon = 1 + random() % 60;
    int count = static_cast<int>(random() % 80);
    std::vector<Block> blocks;
    std::vector<int64_t> points;
    for (int i = 0; i < count; ++i) {
      int64_t a = random() % horizon, b = random() % horizon;
      int64_t low = random() % 500, size = 1 + random() % 100;
      blocks.push_back({std::min(a, b), std::max(a, b), low, low + size});
      points.push_back(blocks.back().begin);
      points.push_back(blocks.back().end);
    }
    PlacedBlocks index(points);
    for (size_t placed = 0; placed <= blocks.size(); ++placed) {
      // Queries over the points after `placed` blocks were added.
      for (int q = 0; q < 10; ++q) {
        int64_t a = random() % horizon, b = random() % horizon;
        int64_t begin = std::min(a, b), end = std::max(a, b);
        PlacedBlocks::Runs expected, got;
        for (size_t i = 0; i < placed; ++i) {
          const Block &block = blocks[i];
          // A query sees a block where one of the index's points lies in
          // both ranges (the planner asks only at its blocks' points).
          bool meets = false;
          for (int64_t point : points)
            meets |= point >= begin && point <= end && point >= block.begin &&
                     point <= block.end;
          if (meets)
            expected.push_back({block.low, block.high});
        }
        index.busy(begin, end, got);
        INFO("trial " << trial << ", " << placed << " blocks, query [" << begin
                      << ", " << end << "]");
        CHECK(unite(got) == unite(expected));
      }
      if (placed < blocks.size())
        index.add(blocks[placed].begin, blocks[placed].end, blocks[placed].low,
                  blocks[placed].high);
    }
  }
}

TEST_CASE("placed blocks: with no points, nothing is busy", "[codegen]") {
  PlacedBlocks index({});
  index.add(0, 3, 0, 64);
  PlacedBlocks::Runs got;
  index.busy(0, 3, got);
  CHECK(got.empty());
}
