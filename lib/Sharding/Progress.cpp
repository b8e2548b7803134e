//===- Progress.cpp - Saying on stderr what a long command is doing -------===//

#include "partita/Sharding/Progress.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace partita;

namespace {

using Clock = std::chrono::steady_clock;

std::mutex &progressMutex() {
  static std::mutex mutex;
  return mutex;
}

/// When the command started (the process's start, as near as a static
/// initializer knows, until startProgressClock); the last line's time, and
/// whether the command printed one.
Clock::time_point commandStart = Clock::now();
Clock::time_point lastReport = commandStart;
bool reported = false;

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

void partita::startProgressClock() {
  std::lock_guard<std::mutex> lock(progressMutex());
  commandStart = lastReport = Clock::now();
  reported = false;
}

void partita::reportProgress(const std::string &what) {
  std::lock_guard<std::mutex> lock(progressMutex());
  Clock::time_point now = Clock::now();
  double after = threshold();
  double elapsed = seconds(commandStart, now);
  if (elapsed < after)
    return;
  if (after > 0 && reported && seconds(lastReport, now) < 1.0)
    return;
  lastReport = now;
  reported = true;
  std::fprintf(stderr, "partita: %s (%.0f s)\n", what.c_str(), elapsed);
  std::fflush(stderr);
}
