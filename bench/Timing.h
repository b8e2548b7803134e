//===- Timing.h - Wall-clock medians for the C++ benchmarks -----*- C++ -*-===//
//
// The median wall time of a piece of work run several times: what every
// CPU benchmark of this folder reports beside its peer.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_BENCH_TIMING_H
#define PARTITA_BENCH_TIMING_H

#include <algorithm>
#include <chrono>
#include <vector>

namespace partita::bench {

/// The median over `repeats` runs of `body`'s wall time, in seconds.
template <typename F> double medianSeconds(int repeats, F &&body) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace partita::bench

#endif // PARTITA_BENCH_TIMING_H
