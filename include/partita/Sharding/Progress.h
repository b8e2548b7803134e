//===- Progress.h - What a long command is doing, on stderr -----*- C++ -*-===//
//
// Anything that runs longer than a second says what it is doing, on stderr
// ("partita: plan: 40 of 138 layouts compiled (12 s)"), at most once a
// second: a deep model's build, compile or search takes minutes, and
// silence looks like a hang. The clock starts with the process, or with
// startProgressClock (each command the CLI or the Python package runs).
// Plain C++ in the bottom layer (as Status.h), so that every layer can say
// what it is doing. PARTITA_PROGRESS_AFTER (seconds, default 1) sets when
// lines start (0: from the first step, which the tests use).
// docs/Robustness.md, "Progress".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_PROGRESS_H
#define PARTITA_SHARDING_PROGRESS_H

#include <string>

namespace partita {

/// Prints "partita: WHAT (T s)" on stderr when the command has run longer
/// than the threshold and no line was printed in the last second (or the
/// threshold is 0). Thread-safe.
void reportProgress(const std::string &what);

/// Starts the clock of a command: a process that runs several (the Python
/// package, a long-lived embedder) counts each from its start, not from
/// the process's.
void startProgressClock();

} // namespace partita

#endif // PARTITA_SHARDING_PROGRESS_H
