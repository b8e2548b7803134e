//===- Progress.h - Saying on stderr what a long command is doing -*- C++
//-*-===//
//
// Anything that runs longer than a second says what it is doing, on stderr
// ("partita: compiled 40 of 138 layouts (12 s)"), at most once a second:
// a deep model's build, compile or search takes minutes, and silence looks
// like a hang. Plain C++ in the bottom layer (as Status.h), so that every
// layer can say what it is doing. The clock starts with the process;
// PARTITA_PROGRESS_AFTER (seconds, default 1) sets when lines start (0: from
// the first step, which the tests use). docs/Robustness.md, "Progress".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_PROGRESS_H
#define PARTITA_SHARDING_PROGRESS_H

#include <string>

namespace partita {

/// Prints "partita: WHAT (T s)" on stderr when the process has run longer
/// than the threshold and no line was printed in the last second (or the
/// threshold is 0). Thread-safe.
void reportProgress(const std::string &what);

} // namespace partita

#endif // PARTITA_SHARDING_PROGRESS_H
