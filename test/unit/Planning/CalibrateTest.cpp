//===- CalibrateTest.cpp - Fitting a collective's link figures ------------===//
//
// partita calibrate fits a latency and a bandwidth to two timed calls; a
// busy machine can time the small call as long as the large one, which
// fitted 262,144 GB/s and 0.0 us without a word. Such fits are said and
// kept within what the cost model reads.
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Calibrate.h"

#include <catch2/catch.hpp>

using namespace partita;

TEST_CASE("a plausible fit is the line through the two calls") {
  // 10 us + bytes / (1 GB/s): 256 B and 256 KiB.
  double bytes[2] = {256, 262144};
  double seconds[2] = {10e-6 + 256e-9, 10e-6 + 262144e-9};
  std::string warning;
  CollectiveFit fit = fitCollective("all_reduce", 2, seconds, bytes, &warning);
  CHECK(warning.empty());
  CHECK(fit.bandwidthGBps == Approx(1.0));
  CHECK(fit.latencyUs == Approx(10.0));
}

TEST_CASE("a fit no link does is said and clamped") {
  // The small call timed as long as the large one (a busy machine).
  double bytes[2] = {256, 262144};
  double seconds[2] = {20e-6, 20e-6 + 1e-12};
  std::string warning;
  CollectiveFit fit = fitCollective("all_gather", 4, seconds, bytes, &warning);
  CHECK(warning.find("warning: all_gather over 4 devices fitted") == 0);
  CHECK(warning.find("outside what a link does") != std::string::npos);
  CHECK(fit.bandwidthGBps <= 1e4);
  // Latency near zero is said too.
  double quick[2] = {1e-12, 262144e-9};
  std::string second;
  fitCollective("all_to_all", 2, quick, bytes, &second);
  CHECK_FALSE(second.empty());
}
