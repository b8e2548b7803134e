//===- Timeline.h - What each device did, instruction by instruction -*- C++ -*-===//
//
// A run can record, per device, when each instruction started and how long
// it took, and for a collective how much of that was spent waiting for the
// other devices of its group. `partita run --trace`, `partita-exec run
// --trace` and `partita train --trace` write it in the Chrome / Perfetto
// trace event format (docs/Runtime.md, "Timeline traces").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TIMELINE_H
#define PARTITA_RUNTIME_TIMELINE_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

struct Executable;

/// One execution of one instruction on one device.
struct InstructionSpan {
  /// Index into Executable::instructions.
  int32_t instruction = 0;
  /// The trip of the innermost loop around it, or -1 outside loops.
  int32_t trip = -1;
  /// Start on the host's steady clock, and duration, in nanoseconds.
  int64_t startNanos = 0, nanos = 0;
  /// Collectives: the part of `nanos` spent waiting for other devices
  /// (what the communicator measures on the calling thread).
  int64_t waitedNanos = 0;
};

/// The spans of one device's run, in the order they started.
struct DeviceTimeline {
  int64_t device = 0;
  std::vector<InstructionSpan> spans;
};

/// How a trace describes its run.
struct TraceOptions {
  /// The process track's name ("partita run", "train step 9").
  std::string title = "run";
  /// The backend queues kernels (a GPU): a kernel's span is its launch.
  bool asynchronousKernels = false;
};

/// The Chrome / Perfetto trace event format (JSON) of `timelines`: one
/// track per device ("device 3"), a complete event ("ph": "X") per span
/// named after the op (an einsum with its spec, a collective with its mesh
/// axes), category "compute", "collective" or "loop", arguments giving the
/// instruction index, loop trip, operand and result types and a
/// collective's bytes and wait; a collective's wait is also a nested
/// "wait" event at the span's start. Times are microseconds from the
/// earliest span.
std::string deviceTimelineTraceJson(const Executable &program,
                                    const std::vector<DeviceTimeline> &timelines,
                                    const TraceOptions &options = {});

/// deviceTimelineTraceJson() written to `path` (atomically).
Status writeDeviceTrace(const std::string &path, const Executable &program,
                        const std::vector<DeviceTimeline> &timelines,
                        const TraceOptions &options);

} // namespace partita

#endif // PARTITA_RUNTIME_TIMELINE_H
