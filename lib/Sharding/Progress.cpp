//===- Progress.cpp - Saying on stderr what a long command is doing -------===//

#include "partita/Sharding/Progress.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace partita;

namespace {

using Clock = std::chrono::steady_clock;

/// When the process started, as near as a static initializer knows.
const Clock::time_point processStart = Clock::now();

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// PARTITA_PROGRESS_AFTER, or 1 second.
double threshold() {
  static const double value = [] {
    const char *text = std::getenv("PARTITA_PROGRESS_AFTER");
    if (!text || !*text)
      return 1.0;
    char *end = nullptr;
    double parsed = std::strtod(text, &end);
    return end && !*end && parsed >= 0 ? parsed : 1.0;
  }();
  return value;
}

} // namespace

void partita::reportProgress(const std::string &what) {
  static std::mutex mutex;
  static Clock::time_point lastReport = processStart;
  static bool reported = false;
  std::lock_guard<std::mutex> lock(mutex);
  Clock::time_point now = Clock::now();
  double after = threshold();
  double elapsed = seconds(processStart, now);
  if (elapsed < after)
    return;
  if (after > 0 && reported && seconds(lastReport, now) < 1.0)
    return;
  lastReport = now;
  reported = true;
  std::fprintf(stderr, "partita: %s (%.0f s)\n", what.c_str(), elapsed);
  std::fflush(stderr);
}
