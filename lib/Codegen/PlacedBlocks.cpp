//===- PlacedBlocks.cpp - the buffer planner's index of placed blocks -----===//

#include "partita/Codegen/PlacedBlocks.h"

#include <algorithm>

using namespace partita;

PlacedBlocks::PlacedBlocks(std::vector<int64_t> points)
    : points(std::move(points)) {
  std::sort(this->points.begin(), this->points.end());
  this->points.erase(std::unique(this->points.begin(), this->points.end()),
                     this->points.end());
  // The tree's depth is ceil(log2 n), so its nodes number below twice the
  // next power of two.
  size_t leaves = 1;
  while (leaves < this->points.size())
    leaves *= 2;
  own.resize(2 * leaves);
  below.resize(2 * leaves);
}

void PlacedBlocks::add(int64_t begin, int64_t end, int64_t low,
                       int64_t high) {
  if (std::optional<std::pair<size_t, size_t>> span = indices(begin, end))
    add(1, 0, points.size() - 1, span->first, span->second, {low, high});
}

void PlacedBlocks::busy(int64_t begin, int64_t end, Runs &out) const {
  if (std::optional<std::pair<size_t, size_t>> span = indices(begin, end))
    busy(1, 0, points.size() - 1, span->first, span->second, out);
}

std::optional<std::pair<size_t, size_t>>
PlacedBlocks::indices(int64_t begin, int64_t end) const {
  size_t first =
      std::lower_bound(points.begin(), points.end(), begin) - points.begin();
  size_t past =
      std::upper_bound(points.begin(), points.end(), end) - points.begin();
  if (first >= past)
    return std::nullopt;
  return std::make_pair(first, past - 1);
}

void PlacedBlocks::insert(Runs &runs, std::pair<int64_t, int64_t> run) {
  // The runs [first, last) overlap or touch the new one.
  auto first = std::lower_bound(
      runs.begin(), runs.end(), run.first,
      [](const auto &existing, int64_t low) { return existing.second < low; });
  auto last = std::upper_bound(
      first, runs.end(), run.second,
      [](int64_t high, const auto &existing) { return high < existing.first; });
  if (first == last) {
    runs.insert(first, run);
    return;
  }
  first->first = std::min(first->first, run.first);
  first->second = std::max((last - 1)->second, run.second);
  runs.erase(first + 1, last);
}

void PlacedBlocks::add(size_t node, size_t lo, size_t hi, size_t begin,
                       size_t end, std::pair<int64_t, int64_t> run) {
  insert(below[node], run);
  if (begin <= lo && hi <= end) {
    insert(own[node], run);
    return;
  }
  size_t mid = (lo + hi) / 2;
  if (begin <= mid)
    add(2 * node, lo, mid, begin, end, run);
  if (end > mid)
    add(2 * node + 1, mid + 1, hi, begin, end, run);
}

void PlacedBlocks::busy(size_t node, size_t lo, size_t hi, size_t begin,
                        size_t end, Runs &out) const {
  if (begin <= lo && hi <= end) {
    out.insert(out.end(), below[node].begin(), below[node].end());
    return;
  }
  out.insert(out.end(), own[node].begin(), own[node].end());
  size_t mid = (lo + hi) / 2;
  if (begin <= mid)
    busy(2 * node, lo, mid, begin, end, out);
  if (end > mid)
    busy(2 * node + 1, mid + 1, hi, begin, end, out);
}
