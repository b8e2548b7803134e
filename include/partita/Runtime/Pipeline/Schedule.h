//===- Schedule.h - Micro-batch schedules for pipelines ---------*- C++ -*-===//
//
// A pipelined train step splits the model into S = p * v stages over p
// pipeline ranks (v virtual stages, or model chunks, per rank: stage s lives
// on rank s % p) and the batch into m micro-batches. A schedule fixes, for
// every rank, the order in which it runs the forward (F), backward (B) and,
// when the backward is split, weight-gradient (W) work of each
// (stage, micro-batch). The order decides both the idle time ("bubble") and
// how many activations a rank keeps alive at once.
//
// Validity is defined by the data dependencies alone:
//   F(s, i) needs F(s - 1, i)                       (s > 0)
//   B(s, i) needs F(s, i) and B(s + 1, i)           (s < S - 1 for the latter)
//   W(s, i) needs B(s, i)
// A rank runs its list strictly in order, so a list is valid when every
// action appears once on the rank owning its stage and no rank can end up
// waiting on an action that sits behind a waiting action.
//
// This header builds the standard schedules, checks hand-made ones,
// simulates them with per-stage costs, and summarizes and draws timelines.
// The compiler's report and `partita show --schedule` use the simulator; the
// runtime executes the lists and records measured timestamps into the same
// ScheduleTimeline, so both are summarized and rendered by the same code.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PIPELINE_SCHEDULE_H
#define PARTITA_RUNTIME_PIPELINE_SCHEDULE_H

#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// The schedules buildSchedule knows.
enum class ScheduleKind {
  /// All forwards, then all backwards (Huang et al. 2019).
  GPipe,
  /// One forward, one backward after a warmup (PipeDream-flush).
  OneFOneB,
  /// 1F1B over several model chunks per rank (Narayanan et al. 2021).
  Interleaved,
  /// ZB-H1: 1F1B's memory with the weight gradients deferred into the
  /// bubble (Qi et al. 2023).
  ZeroBubble,
};

/// The kind spelled `name` ("gpipe", "1f1b", "interleaved", "zb"), or none.
std::optional<ScheduleKind> parseScheduleKind(std::string_view name);
/// The spelling parseScheduleKind accepts for `kind`.
const char *scheduleKindName(ScheduleKind kind);
/// Every accepted spelling, comma separated, for error messages and help.
const char *availableSchedules();

/// The three kinds of work of a (stage, micro-batch).
enum class PipeWork : uint8_t {
  /// The forward pass.
  Forward,
  /// The backward pass; only the input gradient when the schedule splits
  /// the backward, the input and weight gradients otherwise.
  Backward,
  /// The weight gradient (split schedules only).
  WeightGrad,
};

/// One unit of work in a rank's list.
struct PipeAction {
  PipeWork work = PipeWork::Forward;
  int32_t stage = 0;
  int32_t microBatch = 0;
};

/// True when `a` and `b` name the same work.
bool operator==(const PipeAction &a, const PipeAction &b);

/// `action` for messages, e.g. "B(stage 2, micro-batch 5)".
std::string describePipeAction(const PipeAction &action);

/// The order each pipeline rank runs its work in.
struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int ranks = 1, microBatches = 1, virtualStages = 1;
  /// True when B and W are separate actions (ZeroBubble).
  bool splitBackward = false;
  /// perRank[r] is the list rank r runs, first to last.
  std::vector<std::vector<PipeAction>> perRank;

  /// The number of stages, ranks * virtualStages.
  int stages() const { return ranks * virtualStages; }
  /// The rank that runs `stage`'s work.
  int rankOfStage(int stage) const { return ranks > 0 ? stage % ranks : 0; }
};

/// The actions that must have ended before `action` may start, in
/// `schedule`'s stage numbering (zero, one or two of them).
std::vector<PipeAction> pipeActionDependencies(const PipelineSchedule &schedule,
                                               const PipeAction &action);

/// The schedule of `kind` for `ranks` pipeline ranks, `microBatches`
/// micro-batches and `virtualStages` chunks per rank. Fails with a message
/// naming the offending value when the combination is not supported.
Expected<PipelineSchedule> buildSchedule(ScheduleKind kind, int ranks,
                                         int microBatches,
                                         int virtualStages = 1);

/// Success when every (stage, micro-batch) has exactly one F and one B (and
/// one W when the backward is split) on the rank owning its stage, and
/// running the lists in order cannot deadlock. The message of a failure
/// names the offending action and where it sits.
Status checkSchedule(const PipelineSchedule &schedule);

/// What one action of a stage costs, in any time unit.
struct PipeCosts {
  double forward = 1;
  /// The full backward; only the input gradient when the schedule splits it.
  double backward = 2;
  /// The weight gradient; used only when the schedule splits the backward.
  double weightGrad = 0;
};

/// An action placed in time on a rank.
struct TimedAction {
  PipeAction action;
  int rank = 0;
  double start = 0, end = 0;
};

/// A run of a schedule, simulated or measured, and its summary.
struct ScheduleTimeline {
  int ranks = 0;
  std::vector<TimedAction> actions;
  /// The last end minus the first start.
  double makespan = 0;
  /// Per rank: time spent running actions (overlaps counted once).
  std::vector<double> busy;
  /// Per rank: idle time as a fraction of the makespan.
  std::vector<double> bubble;
  /// The mean of `bubble` over the ranks.
  double bubbleFraction = 0;
  /// Per rank: the most (stage, micro-batch) activations held at once.
  std::vector<int> peakInFlight;
};

/// Runs `schedule` in simulation: each rank takes its actions in order, and
/// an action starts as soon as its rank is free and its dependencies have
/// ended (transfers take no time). `costs` has one entry per stage or a
/// single entry used for every stage. Fails when the schedule does not pass
/// checkSchedule or the costs do not fit it.
Expected<ScheduleTimeline>
simulateSchedule(const PipelineSchedule &schedule,
                 const std::vector<PipeCosts> &costs);

/// Fills makespan, busy, bubble, bubbleFraction and peakInFlight from
/// `timeline.actions` (raising `timeline.ranks` if an action names a higher
/// rank). The activation of a (stage, micro-batch) is held from the start
/// of its F to the end of its B, or of its W when `splitBackward`; one whose
/// releasing action is missing is held to the end of the timeline.
void summarizeTimeline(ScheduleTimeline &timeline, bool splitBackward);

/// `timeline` as text: a header line with the time scale, then one row per
/// rank, "rank R |cells| bubble X%", with at most `width` cells per row:
/// 'F', 'B' and 'W' where the rank works, '.' where it is idle. An action
/// at least two cells wide shows its micro-batch number ("F3FF") when it
/// fits. Works for measured timelines with arbitrary times.
std::string renderTimeline(const ScheduleTimeline &timeline, int width = 100);

/// `timeline` in the Chrome / Perfetto trace event format (JSON, times in
/// microseconds): one track per pipeline rank, each action a complete
/// event ("F" forward, "B" backward, "W" weight gradient) with its stage
/// and micro-batch, so ui.perfetto.dev or chrome://tracing opens it.
std::string timelineTraceJson(const ScheduleTimeline &timeline);

/// The mesh of one pipeline rank: `mesh` without its `pipe` axis (a
/// `data` axis of 1 when nothing else is left).
Expected<Mesh> pipelineRankMesh(const Mesh &mesh);

} // namespace partita

#endif // PARTITA_RUNTIME_PIPELINE_SCHEDULE_H
