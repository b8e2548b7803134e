//===- Schedule.cpp - Micro-batch schedules for pipeline parallelism ------===//
//
// Builders for the GPipe, 1F1B, interleaved 1F1B and ZB-H1 schedules; the
// dependency-driven executor that both checks schedules for deadlock and
// simulates them; and the timeline summary and text rendering.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Pipeline/Schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

using namespace partita;
using std::to_string;

namespace {

/// Schedules beyond this many actions are refused rather than allocated:
/// real pipelines are orders of magnitude smaller, and the bound keeps the
/// index arithmetic below far from overflow.
constexpr int64_t kMaxScheduleActions = int64_t(1) << 24;

struct KindName {
  ScheduleKind kind;
  const char *name;
};
constexpr KindName kKindNames[] = {
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Interleaved, "interleaved"},
    {ScheduleKind::ZeroBubble, "zb"},
};

constexpr PipeWork F = PipeWork::Forward, B = PipeWork::Backward,
                   W = PipeWork::WeightGrad;

char workLetter(PipeWork work) {
  return work == F ? 'F' : work == B ? 'B' : work == W ? 'W' : '?';
}

/// Dense numbering of every (work, stage, micro-batch) a schedule can name,
/// so that per-action state lives in flat vectors.
struct ActionIndexer {
  int64_t stages = 0, microBatches = 0;
  size_t size() const { return size_t(3 * stages * microBatches); }
  size_t operator()(const PipeAction &action) const {
    return size_t((int64_t(action.work) * stages + action.stage) *
                      microBatches +
                  action.microBatch);
  }
};

/// Writes the dependencies of `action` into `out`; returns how many.
int dependenciesOf(const PipeAction &action, int stages, PipeAction out[2]) {
  int count = 0, s = action.stage, i = action.microBatch;
  if (action.work == F && s > 0)
    out[count++] = {F, s - 1, i};
  if (action.work == B) {
    out[count++] = {F, s, i};
    if (s < stages - 1)
      out[count++] = {B, s + 1, i};
  }
  if (action.work == W)
    out[count++] = {B, s, i};
  return count;
}

/// Runs the lists of a well-formed schedule in dependency order: `visit`
/// sees each action only after all of its dependencies and all earlier
/// actions of its rank. Returns, per rank, the position of the first action
/// never visited (the list size when the rank finished); a rank stopping
/// short means the schedule deadlocks.
template <typename Visit>
std::vector<size_t> runInOrder(const PipelineSchedule &schedule,
                               const ActionIndexer &index, Visit visit) {
  std::vector<size_t> next(schedule.perRank.size(), 0);
  std::vector<char> done(index.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t rank = 0; rank < schedule.perRank.size(); ++rank) {
      const std::vector<PipeAction> &list = schedule.perRank[rank];
      for (; next[rank] < list.size(); ++next[rank], progress = true) {
        const PipeAction &action = list[next[rank]];
        PipeAction deps[2];
        int count = dependenciesOf(action, schedule.stages(), deps);
        bool ready = true;
        for (int d = 0; d < count; ++d)
          ready = ready && done[index(deps[d])];
        if (!ready)
          break;
        visit(int(rank), action);
        done[index(action)] = 1;
      }
    }
  }
  return next;
}

Status checkDimensions(int ranks, int microBatches, int virtualStages) {
  const std::pair<const char *, int> counts[] = {
      {"rank", ranks},
      {"micro-batch", microBatches},
      {"virtual stage per rank", virtualStages}};
  for (const auto &[what, count] : counts)
    if (count < 1)
      return Status::error(std::string("a pipeline needs at least one ") +
                           what + ", not " + to_string(count));
  // In floating point: the integer product of three ints can overflow.
  if (3.0 * ranks * microBatches * virtualStages > kMaxScheduleActions)
    return Status::error(
        "the pipeline is too large to schedule: " + to_string(ranks) +
        " ranks x " + to_string(microBatches) + " micro-batches x " +
        to_string(virtualStages) + " virtual stages per rank exceeds " +
        to_string(kMaxScheduleActions / 3) + " (stage, micro-batch) pairs");
  return Status::success();
}

/// Why `action` cannot sit on `rank` of `schedule`; empty when it can.
std::string misplacement(const PipelineSchedule &schedule, int rank,
                         const PipeAction &action) {
  if (action.work != F && action.work != B && action.work != W)
    return "an unknown kind of work";
  std::string what = describePipeAction(action) + ", but ";
  if (action.stage < 0 || action.stage >= schedule.stages())
    return what + "the pipeline has stages 0 to " +
           to_string(schedule.stages() - 1);
  if (action.microBatch < 0 || action.microBatch >= schedule.microBatches)
    return what + "the pipeline has micro-batches 0 to " +
           to_string(schedule.microBatches - 1);
  if (action.work == W && !schedule.splitBackward)
    return what + "the schedule does not split the backward into B and W";
  if (schedule.rankOfStage(action.stage) != rank)
    return what + "stage " + to_string(action.stage) + " lives on rank " +
           to_string(schedule.rankOfStage(action.stage));
  return "";
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

/// GPipe (Huang et al. 2019): every forward, then every backward.
void buildGPipe(PipelineSchedule &schedule) {
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (PipeWork work : {F, B})
      for (int i = 0; i < schedule.microBatches; ++i)
        schedule.perRank[size_t(rank)].push_back({work, rank, i});
  }
}

/// The common shape of 1F1B and interleaved 1F1B: `warmup` forwards, then
/// one forward and one backward at a time, then the remaining backwards.
/// `forwards` and `backwards` are the rank's work in the order it runs it.
void interleaveOneFOneB(std::vector<PipeAction> &list,
                        const std::vector<PipeAction> &forwards,
                        const std::vector<PipeAction> &backwards,
                        size_t warmup) {
  warmup = std::min(warmup, forwards.size());
  size_t steady = forwards.size() - warmup;
  list.insert(list.end(), forwards.begin(), forwards.begin() + warmup);
  for (size_t i = 0; i < steady; ++i) {
    list.push_back(forwards[warmup + i]);
    list.push_back(backwards[i]);
  }
  list.insert(list.end(), backwards.begin() + steady, backwards.end());
}

/// 1F1B (PipeDream-flush): rank r first fills the pipe behind it with
/// p - r - 1 micro-batches, the most it can run before its first backward
/// can arrive, so it never holds more than p - r activations.
void buildOneFOneB(PipelineSchedule &schedule) {
  int p = schedule.ranks, m = schedule.microBatches;
  for (int rank = 0; rank < p; ++rank) {
    std::vector<PipeAction> forwards, backwards;
    for (int i = 0; i < m; ++i) {
      forwards.push_back({F, rank, i});
      backwards.push_back({B, rank, i});
    }
    interleaveOneFOneB(schedule.perRank[size_t(rank)], forwards, backwards,
                       size_t(p - rank - 1));
  }
}

/// Interleaved 1F1B (Narayanan et al. 2021, section 2.2): a rank walks its
/// chunks in groups of p micro-batches, forwards through chunks 0..v-1 and
/// backwards through v-1..0. The warmup lets the first micro-batch go
/// through every chunk before the rank's first backward is due.
void buildInterleaved(PipelineSchedule &schedule) {
  int p = schedule.ranks, m = schedule.microBatches, v = schedule.virtualStages;
  for (int rank = 0; rank < p; ++rank) {
    std::vector<PipeAction> forwards, backwards;
    for (int k = 0; k < m * v; ++k) {
      int microBatch = (k / (p * v)) * p + k % p, chunk = (k / p) % v;
      forwards.push_back({F, chunk * p + rank, microBatch});
      backwards.push_back({B, (v - 1 - chunk) * p + rank, microBatch});
    }
    int warmup = (p - rank - 1) * 2 + (v - 1) * p;
    interleaveOneFOneB(schedule.perRank[size_t(rank)], forwards, backwards,
                       size_t(warmup));
  }
}

/// ZB-H1 (Qi et al. 2023): the order comes from a greedy simulation with
/// unit costs. A free rank runs a ready B first (it unblocks the ranks
/// before it), else the next F while it holds fewer than p - r micro-batches
/// (1F1B's memory bound, a micro-batch held until its W), else its oldest
/// pending W: the Ws fill the time 1F1B leaves idle.
Status buildZeroBubble(PipelineSchedule &schedule) {
  int p = schedule.ranks, m = schedule.microBatches;
  // Every kind of work runs in micro-batch order on every rank (Fs by
  // construction, Bs because the Bs they wait for do, Ws oldest first), so
  // a rank's progress is how many Fs, Bs and Ws it has run.
  std::vector<int> forwards(size_t(p), 0), backwards = forwards,
                                           weights = forwards;
  // With unit costs whatever starts at step t has ended by step t + 1, so
  // each step is decided from the counts at its beginning.
  std::vector<PipeAction> step;
  for (int64_t left = 3 * int64_t(p) * m; left > 0;
       left -= int64_t(step.size())) {
    step.clear();
    for (int r = 0; r < p; ++r) {
      int f = forwards[size_t(r)], b = backwards[size_t(r)],
          w = weights[size_t(r)];
      if (b < f && (r == p - 1 || backwards[size_t(r + 1)] > b))
        step.push_back({B, r, b});
      else if (f < m && f - w < p - r &&
               (r == 0 || forwards[size_t(r - 1)] > f))
        step.push_back({F, r, f});
      else if (w < b)
        step.push_back({W, r, w});
    }
    if (step.empty())
      return Status::error("the zero-bubble construction stalled with " +
                           to_string(left) + " actions left");
    for (const PipeAction &action : step) {
      size_t rank = size_t(action.stage);
      schedule.perRank[rank].push_back(action);
      ++(action.work == F   ? forwards
         : action.work == B ? backwards
                            : weights)[rank];
    }
  }
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Names and actions
//===----------------------------------------------------------------------===//

std::optional<ScheduleKind> partita::parseScheduleKind(std::string_view name) {
  for (const KindName &entry : kKindNames)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

const char *partita::scheduleKindName(ScheduleKind kind) {
  for (const KindName &entry : kKindNames)
    if (entry.kind == kind)
      return entry.name;
  return "unknown";
}

const char *partita::availableSchedules() {
  return "gpipe, 1f1b, interleaved, zb";
}

bool partita::operator==(const PipeAction &a, const PipeAction &b) {
  return a.work == b.work && a.stage == b.stage && a.microBatch == b.microBatch;
}

std::string partita::describePipeAction(const PipeAction &action) {
  return std::string(1, workLetter(action.work)) + "(stage " +
         to_string(action.stage) + ", micro-batch " +
         to_string(action.microBatch) + ")";
}

std::vector<PipeAction>
partita::pipeActionDependencies(const PipelineSchedule &schedule,
                                const PipeAction &action) {
  PipeAction deps[2];
  int count = dependenciesOf(action, schedule.stages(), deps);
  return std::vector<PipeAction>(deps, deps + count);
}

//===----------------------------------------------------------------------===//
// Building and checking
//===----------------------------------------------------------------------===//

Expected<PipelineSchedule> partita::buildSchedule(ScheduleKind kind, int ranks,
                                                  int microBatches,
                                                  int virtualStages) {
  if (Status status = checkDimensions(ranks, microBatches, virtualStages);
      !status.ok())
    return status;
  std::string name = scheduleKindName(kind);
  if (kind == ScheduleKind::Interleaved && virtualStages < 2)
    return Status::error(
        "the interleaved schedule needs at least 2 virtual stages per rank, "
        "not " +
        to_string(virtualStages));
  // The interleaved chunk walk goes in groups of `ranks` micro-batches.
  if (kind == ScheduleKind::Interleaved && microBatches % ranks != 0)
    return Status::error("the interleaved schedule needs --micro-batches (" +
                         to_string(microBatches) +
                         ") to be a multiple of the pipeline ranks (" +
                         to_string(ranks) + ")");
  if (kind != ScheduleKind::Interleaved && virtualStages != 1)
    return Status::error(
        "the " + name + " schedule runs one stage per rank, not " +
        to_string(virtualStages) + " virtual stages; use the interleaved one");

  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.ranks = ranks;
  schedule.microBatches = microBatches;
  schedule.virtualStages = virtualStages;
  schedule.splitBackward = kind == ScheduleKind::ZeroBubble;
  schedule.perRank.resize(size_t(ranks));
  Status built;
  switch (kind) {
  case ScheduleKind::GPipe:
    buildGPipe(schedule);
    break;
  case ScheduleKind::OneFOneB:
    buildOneFOneB(schedule);
    break;
  case ScheduleKind::Interleaved:
    buildInterleaved(schedule);
    break;
  case ScheduleKind::ZeroBubble:
    built = buildZeroBubble(schedule);
    break;
  }
  // The builders are meant to be valid by construction; checking is cheap
  // and turns a mistake into a message instead of a hung train step.
  if (built.ok())
    built = checkSchedule(schedule);
  if (!built.ok())
    return Status::error("internal error: the " + name +
                         " schedule is invalid: " + built.message());
  return schedule;
}

Status partita::checkSchedule(const PipelineSchedule &schedule) {
  if (Status status = checkDimensions(schedule.ranks, schedule.microBatches,
                                      schedule.virtualStages);
      !status.ok())
    return status;
  if (schedule.perRank.size() != size_t(schedule.ranks))
    return Status::error("the schedule has lists for " +
                         to_string(schedule.perRank.size()) + " ranks but " +
                         to_string(schedule.ranks) + " pipeline ranks");

  int stages = schedule.stages();
  ActionIndexer index{stages, schedule.microBatches};
  // Where each action sits, as (rank, position); rank -1 when absent.
  std::vector<std::pair<int, size_t>> where(index.size(), {-1, 0});
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const std::vector<PipeAction> &list = schedule.perRank[size_t(rank)];
    for (size_t pos = 0; pos < list.size(); ++pos) {
      std::string at =
          "rank " + to_string(rank) + " position " + to_string(pos) + " runs ";
      std::string problem = misplacement(schedule, rank, list[pos]);
      if (!problem.empty())
        return Status::error(at + problem);
      std::pair<int, size_t> &seen = where[index(list[pos])];
      if (seen.first >= 0)
        return Status::error(at + describePipeAction(list[pos]) +
                             ", which rank " + to_string(seen.first) +
                             " already runs at position " +
                             to_string(seen.second));
      seen = {rank, pos};
    }
  }
  for (PipeWork work : {F, B, W}) {
    if (work == W && !schedule.splitBackward)
      continue;
    for (int stage = 0; stage < stages; ++stage)
      for (int i = 0; i < schedule.microBatches; ++i)
        if (where[index({work, stage, i})].first < 0)
          return Status::error("the schedule never runs " +
                               describePipeAction({work, stage, i}) +
                               " (it belongs on rank " +
                               to_string(schedule.rankOfStage(stage)) + ")");
  }

  std::vector<size_t> stoppedAt =
      runInOrder(schedule, index, [](int, const PipeAction &) {});
  std::string stuck;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const std::vector<PipeAction> &list = schedule.perRank[size_t(rank)];
    size_t pos = stoppedAt[size_t(rank)];
    if (pos == list.size())
      continue;
    // Name a dependency the rank waits for and where it sits: that action
    // is itself stuck behind a waiting action, which closes the cycle.
    PipeAction deps[2];
    int count = dependenciesOf(list[pos], stages, deps);
    std::string waitsFor;
    for (int d = 0; d < count && waitsFor.empty(); ++d) {
      std::pair<int, size_t> dep = where[index(deps[d])];
      if (stoppedAt[size_t(dep.first)] <= dep.second)
        waitsFor = " for " + describePipeAction(deps[d]) + ", which rank " +
                   to_string(dep.first) + " runs at position " +
                   to_string(dep.second);
    }
    stuck += (stuck.empty() ? "rank " : "; rank ") + to_string(rank) +
             " waits at position " + to_string(pos) + " to run " +
             describePipeAction(list[pos]) + waitsFor;
  }
  if (!stuck.empty())
    return Status::error("the schedule deadlocks: " + stuck);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Simulation, summary and rendering
//===----------------------------------------------------------------------===//

Expected<ScheduleTimeline>
partita::simulateSchedule(const PipelineSchedule &schedule,
                          const std::vector<PipeCosts> &costs) {
  if (Status status = checkSchedule(schedule); !status.ok())
    return status;
  int stages = schedule.stages();
  if (costs.size() != 1 && costs.size() != size_t(stages))
    return Status::error(
        "the simulation needs costs for each of the " + to_string(stages) +
        " stages or one entry for all, not " + to_string(costs.size()));
  for (size_t s = 0; s < costs.size(); ++s)
    for (double cost :
         {costs[s].forward, costs[s].backward, costs[s].weightGrad})
      if (!std::isfinite(cost) || cost < 0)
        return Status::error("the costs of stage " + to_string(s) +
                             " must be finite and not negative");

  ActionIndexer index{stages, schedule.microBatches};
  std::vector<double> endOf(index.size(), 0),
      rankFree(size_t(schedule.ranks), 0);
  ScheduleTimeline timeline;
  timeline.ranks = schedule.ranks;
  // Dependencies are visited first, so their end times are final here.
  runInOrder(schedule, index, [&](int rank, const PipeAction &action) {
    const PipeCosts &cost = costs[costs.size() == 1 ? 0 : action.stage];
    double start = rankFree[size_t(rank)];
    PipeAction deps[2];
    for (int d = 0, count = dependenciesOf(action, stages, deps); d < count;
         ++d)
      start = std::max(start, endOf[index(deps[d])]);
    double end = start + (action.work == F   ? cost.forward
                          : action.work == B ? cost.backward
                                             : cost.weightGrad);
    endOf[index(action)] = rankFree[size_t(rank)] = end;
    timeline.actions.push_back({action, rank, start, end});
  });
  std::stable_sort(timeline.actions.begin(), timeline.actions.end(),
                   [](const TimedAction &a, const TimedAction &b) {
                     return a.start < b.start;
                   });
  summarizeTimeline(timeline, schedule.splitBackward);
  return timeline;
}

void partita::summarizeTimeline(ScheduleTimeline &timeline,
                                bool splitBackward) {
  int ranks = std::max(timeline.ranks, 0);
  for (const TimedAction &timed : timeline.actions)
    ranks = std::max(ranks, timed.rank + 1);
  timeline.ranks = ranks;
  timeline.makespan = timeline.bubbleFraction = 0;
  timeline.busy.assign(size_t(ranks), 0);
  timeline.bubble.assign(size_t(ranks), 0);
  timeline.peakInFlight.assign(size_t(ranks), 0);
  if (timeline.actions.empty())
    return;

  // Per rank: the busy intervals, and the changes to the activations held
  // (+1 at the start of an F, -1 at the end of the action that last reads
  // it; an activation never released stays held to the end).
  using Interval = std::pair<double, double>;
  using Change = std::pair<double, int>;
  std::vector<std::vector<Interval>> spans(static_cast<size_t>(ranks));
  std::vector<std::vector<Change>> changes(static_cast<size_t>(ranks));
  PipeWork releasing = splitBackward ? W : B;
  double first = timeline.actions.front().start, last = first;
  for (const TimedAction &timed : timeline.actions) {
    first = std::min(first, timed.start);
    last = std::max(last, timed.end);
    if (timed.rank < 0)
      continue;
    spans[size_t(timed.rank)].push_back({timed.start, timed.end});
    if (timed.action.work == F)
      changes[size_t(timed.rank)].push_back({timed.start, +1});
    else if (timed.action.work == releasing)
      changes[size_t(timed.rank)].push_back({timed.end, -1});
  }
  timeline.makespan = std::max(0.0, last - first);

  for (size_t rank = 0; rank < size_t(ranks); ++rank) {
    // Measured actions may overlap (communication beside compute), so busy
    // time is the length of the union of the intervals.
    std::sort(spans[rank].begin(), spans[rank].end());
    double busy = 0, coveredUntil = first;
    for (const Interval &span : spans[rank]) {
      double from = std::max(span.first, coveredUntil);
      if (span.second > from) {
        busy += span.second - from;
        coveredUntil = span.second;
      }
    }
    timeline.busy[rank] = busy;
    if (timeline.makespan > 0)
      timeline.bubble[rank] =
          std::max(0.0, (timeline.makespan - busy) / timeline.makespan);
    timeline.bubbleFraction += timeline.bubble[rank] / ranks;

    // At equal times releases sort first: a forward starting as a backward
    // ends does not hold both activations.
    std::sort(changes[rank].begin(), changes[rank].end());
    int held = 0;
    for (const Change &change : changes[rank]) {
      held += change.second;
      timeline.peakInFlight[rank] = std::max(timeline.peakInFlight[rank], held);
    }
  }
}

namespace {

std::string formatNumber(const char *format, double value) {
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

/// `value` as a cell position clamped to [0, limit]; NaN gives 0.
int clampToCells(double value, int limit) {
  return !(value > 0) ? 0 : value >= limit ? limit : int(value);
}

} // namespace

std::string partita::renderTimeline(const ScheduleTimeline &timeline,
                                    int width) {
  width = std::max(width, 1);
  // Summarize a copy: a measured timeline may arrive without its summary.
  ScheduleTimeline view = timeline;
  summarizeTimeline(view, false);
  double first = 0;
  bool seenStart = false;
  for (const TimedAction &timed : view.actions)
    if (std::isfinite(timed.start) && (!seenStart || timed.start < first)) {
      first = timed.start;
      seenStart = true;
    }
  double cell = view.makespan > 0 && std::isfinite(view.makespan)
                    ? view.makespan / width
                    : 1.0;

  // Each cell belongs to the action covering its centre, so an action spans
  // about as many cells as its duration. One shorter than a cell takes the
  // cell at its midpoint when nothing wider does, so that it stays visible.
  std::vector<std::vector<int>> owner(size_t(view.ranks),
                                      std::vector<int>(size_t(width), -1));
  std::vector<char> wide(size_t(view.ranks) * size_t(width), 0);
  for (size_t a = 0; a < view.actions.size(); ++a) {
    const TimedAction &timed = view.actions[a];
    if (timed.rank < 0 || !std::isfinite(timed.start) ||
        !std::isfinite(timed.end))
      continue;
    std::vector<int> &row = owner[size_t(timed.rank)];
    int from =
        clampToCells(std::ceil((timed.start - first) / cell - 0.5), width);
    int to = clampToCells(std::ceil((timed.end - first) / cell - 0.5), width);
    for (int c = from; c < to; ++c) {
      row[size_t(c)] = int(a);
      wide[size_t(timed.rank) * size_t(width) + size_t(c)] = 1;
    }
    int middle = std::min(
        clampToCells(((timed.start + timed.end) / 2 - first) / cell, width),
        width - 1);
    if (from >= to &&
        !wide[size_t(timed.rank) * size_t(width) + size_t(middle)])
      row[size_t(middle)] = int(a);
  }

  // The header: the time at a cell's left edge every ten cells, where the
  // label fits.
  std::string rankDigits = to_string(std::max(view.ranks - 1, 0));
  std::string out = "time" + std::string(rankDigits.size() + 2, ' ') + "|";
  std::string ruler(size_t(width), ' ');
  for (int c = 0, freeFrom = 0; c < width; c += 10) {
    std::string label = formatNumber("%.3g", first + c * cell);
    if (c >= freeFrom && c + int(label.size()) <= width) {
      ruler.replace(size_t(c), label.size(), label);
      freeFrom = c + int(label.size()) + 1;
    }
  }
  out += ruler + "| one cell = " + formatNumber("%.3g", cell) + "\n";

  for (int rank = 0; rank < view.ranks; ++rank) {
    std::string number = to_string(rank);
    out += "rank " + std::string(rankDigits.size() - number.size(), ' ') +
           number + " |";
    const std::vector<int> &row = owner[size_t(rank)];
    for (int c = 0, end; c < width; c = end) {
      for (end = c + 1; end < width && row[size_t(end)] == row[size_t(c)];)
        ++end;
      size_t length = size_t(end - c);
      if (row[size_t(c)] < 0) {
        out.append(length, '.');
        continue;
      }
      const PipeAction &action = view.actions[size_t(row[size_t(c)])].action;
      char letter = workLetter(action.work);
      std::string label = letter + to_string(action.microBatch);
      if (length < 2 || label.size() > length)
        label.clear();
      out += label + std::string(length - label.size(), letter);
    }
    out += "| bubble " +
           formatNumber("%.1f%%", view.bubble[size_t(rank)] * 100) + "\n";
  }
  return out;
}

std::string partita::timelineTraceJson(const ScheduleTimeline &timeline) {
  std::string json = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  char line[256];
  bool first = true;
  auto add = [&](const char *text) {
    json += first ? "  " : ",\n  ";
    json += text;
    first = false;
  };
  add("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, "
      "\"args\": {\"name\": \"pipelined step\"}}");
  for (int rank = 0; rank < timeline.ranks; ++rank) {
    std::snprintf(line, sizeof(line),
                  "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                  "\"tid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                  rank, rank);
    add(line);
  }
  for (const TimedAction &action : timeline.actions) {
    const char *work = action.action.work == PipeWork::Forward    ? "F"
                       : action.action.work == PipeWork::Backward ? "B"
                                                                  : "W";
    std::snprintf(line, sizeof(line),
                  "{\"name\": \"%s%d\", \"cat\": \"%s\", \"ph\": \"X\", "
                  "\"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"stage\": %d, \"micro_batch\": %d}}",
                  work, action.action.microBatch, work, action.rank,
                  action.start * 1e6, (action.end - action.start) * 1e6,
                  action.action.stage, action.action.microBatch);
    add(line);
  }
  json += "\n]}\n";
  return json;
}

Expected<Mesh> partita::pipelineRankMesh(const Mesh &mesh) {
  std::vector<MeshAxis> rest;
  for (const MeshAxis &axis : mesh.axes())
    if (axis.name != "pipe")
      rest.push_back(axis);
  if (rest.empty())
    rest.push_back(MeshAxis{"data", 1});
  return Mesh::create(rest);
}
