//===- ScheduleTest.cpp - Pipeline micro-batch schedules ------------------===//
//
// The schedules' simulated bubbles against the published closed forms
// (GPipe and 1F1B: (p-1)/(m+p-1); interleaved 1F1B: (p-1)/(v*m+p-1)), the
// zero-bubble schedule against 1F1B, the activations each rank holds, the
// checks that refuse malformed or deadlocking lists, the summary of a
// measured timeline, and the text rendering.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Pipeline/Schedule.h"

#include <catch2/catch.hpp>

#include <sstream>

using namespace partita;

namespace {

PipelineSchedule build(ScheduleKind kind, int ranks, int microBatches,
                       int virtualStages = 1) {
  Expected<PipelineSchedule> schedule =
      buildSchedule(kind, ranks, microBatches, virtualStages);
  INFO(schedule.status().message());
  REQUIRE(schedule.ok());
  return *schedule;
}

ScheduleTimeline simulate(const PipelineSchedule &schedule, PipeCosts costs) {
  Expected<ScheduleTimeline> timeline = simulateSchedule(schedule, {costs});
  INFO(timeline.status().message());
  REQUIRE(timeline.ok());
  return *timeline;
}

PipeCosts costs(double forward, double backward, double weightGrad = 0) {
  PipeCosts result;
  result.forward = forward;
  result.backward = backward;
  result.weightGrad = weightGrad;
  return result;
}

/// The error of checkSchedule, or "" when it accepts `schedule`.
std::string checkError(const PipelineSchedule &schedule) {
  return checkSchedule(schedule).message();
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> result;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);)
    result.push_back(line);
  return result;
}

} // namespace

TEST_CASE("schedule names round-trip", "[pipeline]") {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
        ScheduleKind::ZeroBubble}) {
    std::optional<ScheduleKind> parsed =
        parseScheduleKind(scheduleKindName(kind));
    REQUIRE(parsed);
    REQUIRE(*parsed == kind);
    REQUIRE(contains(availableSchedules(), scheduleKindName(kind)));
  }
  REQUIRE(std::string(availableSchedules()) == "gpipe, 1f1b, interleaved, zb");
  REQUIRE_FALSE(parseScheduleKind("pipedream"));
  REQUIRE_FALSE(parseScheduleKind(""));
}

TEST_CASE("buildSchedule refuses unsupported shapes", "[pipeline]") {
  auto error = [](ScheduleKind kind, int p, int m, int v) {
    Expected<PipelineSchedule> schedule = buildSchedule(kind, p, m, v);
    REQUIRE_FALSE(schedule.ok());
    return schedule.status().message();
  };
  REQUIRE(contains(error(ScheduleKind::OneFOneB, 0, 4, 1), "rank"));
  REQUIRE(contains(error(ScheduleKind::OneFOneB, 4, 0, 1), "micro-batch"));
  REQUIRE(contains(error(ScheduleKind::Interleaved, 4, 4, 0), "virtual"));
  REQUIRE(contains(error(ScheduleKind::GPipe, 2, 4, 2), "gpipe"));
  REQUIRE(contains(error(ScheduleKind::OneFOneB, 2, 4, 2), "1f1b"));
  REQUIRE(contains(error(ScheduleKind::ZeroBubble, 2, 4, 3), "3 virtual"));
  REQUIRE(contains(error(ScheduleKind::Interleaved, 2, 4, 1), "at least 2"));
  REQUIRE(
      contains(error(ScheduleKind::GPipe, 1 << 30, 1 << 30, 1), "too large"));
  REQUIRE(error(ScheduleKind::Interleaved, 4, 6, 2) ==
          "the interleaved schedule needs --micro-batches (6) to be a "
          "multiple of the pipeline ranks (4)");
}

TEST_CASE("every supported shape builds a valid schedule", "[pipeline]") {
  for (int p : {1, 2, 3, 5, 8})
    for (int m : {1, 2, 3, 7, 16})
      for (int v : {1, 2, 3}) {
        INFO("p=" << p << " m=" << m << " v=" << v);
        std::vector<ScheduleKind> kinds = {ScheduleKind::Interleaved};
        if (v == 1)
          kinds = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                   ScheduleKind::ZeroBubble};
        else if (m % p != 0)
          continue;
        for (ScheduleKind kind : kinds) {
          PipelineSchedule schedule = build(kind, p, m, v);
          REQUIRE(schedule.perRank.size() == size_t(p));
          REQUIRE(checkSchedule(schedule).ok());
          size_t perStage = schedule.splitBackward ? 3 : 2;
          for (int r = 0; r < p; ++r)
            REQUIRE(schedule.perRank[r].size() == perStage * m * v);
        }
      }
}

TEST_CASE("GPipe and 1F1B bubbles match (p-1)/(m+p-1)", "[pipeline]") {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int p : {1, 2, 4, 8})
      for (int m : {1, 2, 4, 8, 16}) {
        INFO(scheduleKindName(kind) << " p=" << p << " m=" << m);
        PipelineSchedule schedule = build(kind, p, m);
        REQUIRE(checkSchedule(schedule).ok());
        ScheduleTimeline timeline = simulate(schedule, costs(1, 2));
        double expected = double(p - 1) / (m + p - 1);
        REQUIRE(timeline.bubbleFraction ==
                Approx(expected).margin(1e-9).epsilon(1e-9));
        REQUIRE(timeline.makespan == Approx(3.0 * (m + p - 1)));
        REQUIRE(timeline.bubble.size() == size_t(p));
        for (int r = 0; r < p; ++r) {
          REQUIRE(timeline.bubble[r] ==
                  Approx(expected).margin(1e-9).epsilon(1e-9));
          REQUIRE(timeline.busy[r] == Approx(3.0 * m));
          int expectedPeak =
              kind == ScheduleKind::GPipe ? m : std::min(p - r, m);
          REQUIRE(timeline.peakInFlight[r] == expectedPeak);
        }
      }
}

TEST_CASE("interleaved 1F1B bubble matches (p-1)/(v*m+p-1)", "[pipeline]") {
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int m : {p, 2 * p, 4 * p}) {
        INFO("p=" << p << " v=" << v << " m=" << m);
        PipelineSchedule schedule = build(ScheduleKind::Interleaved, p, m, v);
        REQUIRE(schedule.stages() == p * v);
        REQUIRE(checkSchedule(schedule).ok());
        // Each rank runs m forwards and m backwards of each of its chunks.
        for (int r = 0; r < p; ++r)
          REQUIRE(schedule.perRank[r].size() == size_t(2 * m * v));
        ScheduleTimeline timeline = simulate(schedule, costs(1.0 / v, 2.0 / v));
        double expected = double(p - 1) / (v * m + p - 1);
        REQUIRE(timeline.bubbleFraction ==
                Approx(expected).margin(1e-9).epsilon(1e-9));
        // Rank 0 holds at most its warmup plus the one forward of the
        // steady state before its first backward.
        int warmup = std::min((p - 1) * 2 + (v - 1) * p, m * v);
        REQUIRE(timeline.peakInFlight[0] <= warmup + 1);
        // And interleaving beats plain 1F1B on the same model.
        ScheduleTimeline plain =
            simulate(build(ScheduleKind::OneFOneB, p, m), costs(1, 2));
        REQUIRE(timeline.bubbleFraction < plain.bubbleFraction);
      }
}

TEST_CASE("interleaved chunks follow the stage numbering", "[pipeline]") {
  // p = 2, v = 2: rank 1 holds stages 1 and 3; its first forwards walk
  // micro-batches 0, 1 through chunk 0, then the same through chunk 1.
  PipelineSchedule schedule = build(ScheduleKind::Interleaved, 2, 4, 2);
  for (int r = 0; r < 2; ++r)
    for (const PipeAction &action : schedule.perRank[r])
      REQUIRE(schedule.rankOfStage(action.stage) == r);
  const std::vector<PipeAction> &rank1 = schedule.perRank[1];
  REQUIRE(rank1[0] == PipeAction{PipeWork::Forward, 1, 0});
  REQUIRE(rank1[1] == PipeAction{PipeWork::Forward, 1, 1});
  REQUIRE(rank1[2] == PipeAction{PipeWork::Forward, 3, 0});
}

TEST_CASE("zero bubble beats 1F1B within 1F1B's memory", "[pipeline]") {
  for (int p : {2, 4, 8})
    for (int m : {p, 2 * p, 4 * p}) {
      INFO("p=" << p << " m=" << m);
      PipelineSchedule zb = build(ScheduleKind::ZeroBubble, p, m);
      REQUIRE(zb.splitBackward);
      REQUIRE(checkSchedule(zb).ok());
      ScheduleTimeline split = simulate(zb, costs(1, 1, 1));
      ScheduleTimeline plain =
          simulate(build(ScheduleKind::OneFOneB, p, m), costs(1, 2));
      REQUIRE(split.bubbleFraction < plain.bubbleFraction);
      for (int r = 0; r < p; ++r)
        REQUIRE(split.peakInFlight[r] <= p - r);
    }
}

TEST_CASE("simulation uses per-stage costs", "[pipeline]") {
  // Two ranks, one micro-batch: F0 (1), F1 (3), B1 (4), B0 (2) in sequence.
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 2, 1);
  Expected<ScheduleTimeline> timeline =
      simulateSchedule(schedule, {costs(1, 2), costs(3, 4)});
  REQUIRE(timeline.ok());
  REQUIRE(timeline->makespan == Approx(10));
  REQUIRE(timeline->busy[0] == Approx(3));
  REQUIRE(timeline->busy[1] == Approx(7));
  REQUIRE(timeline->bubble[0] == Approx(0.7));
  REQUIRE(timeline->bubbleFraction == Approx(0.5));
  REQUIRE(timeline->actions.size() == 4);

  SECTION("wrong cost vector sizes are refused") {
    for (size_t size : {0, 3}) {
      std::vector<PipeCosts> wrong(size);
      Expected<ScheduleTimeline> refused = simulateSchedule(schedule, wrong);
      REQUIRE_FALSE(refused.ok());
      REQUIRE(contains(refused.status().message(), "2 stages"));
    }
  }
  SECTION("negative costs are refused") {
    REQUIRE_FALSE(simulateSchedule(schedule, {costs(-1, 2)}).ok());
  }
}

TEST_CASE("checkSchedule refuses malformed lists", "[pipeline]") {
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 2, 2);
  REQUIRE(checkSchedule(schedule).ok());

  SECTION("a missing action") {
    schedule.perRank[1].pop_back();
    REQUIRE(contains(checkError(schedule), "never runs B(stage 1"));
  }
  SECTION("a duplicated action") {
    schedule.perRank[0].push_back(schedule.perRank[0].front());
    std::string error = checkError(schedule);
    REQUIRE(contains(error, "F(stage 0, micro-batch 0)"));
    REQUIRE(contains(error, "already runs"));
  }
  SECTION("an action on the wrong rank") {
    schedule.perRank[0].push_back({PipeWork::Forward, 1, 0});
    REQUIRE(contains(checkError(schedule), "stage 1 lives on rank 1"));
  }
  SECTION("a stage or micro-batch out of range") {
    schedule.perRank[0].push_back({PipeWork::Forward, 0, 7});
    REQUIRE(contains(checkError(schedule), "micro-batches 0 to 1"));
  }
  SECTION("a weight gradient in a schedule that does not split") {
    schedule.perRank[0].push_back({PipeWork::WeightGrad, 0, 0});
    REQUIRE(contains(checkError(schedule), "does not split"));
  }
  SECTION("lists for the wrong number of ranks") {
    schedule.perRank.pop_back();
    REQUIRE(contains(checkError(schedule), "lists for 1 ranks"));
  }
  SECTION("a backward before its forward deadlocks") {
    schedule = build(ScheduleKind::GPipe, 1, 2);
    std::swap(schedule.perRank[0][0], schedule.perRank[0][2]);
    std::string error = checkError(schedule);
    REQUIRE(contains(error, "deadlocks"));
    REQUIRE(contains(error, "B(stage 0, micro-batch 0)"));
    REQUIRE(contains(error, "F(stage 0, micro-batch 0)"));
    REQUIRE_FALSE(simulateSchedule(schedule, {costs(1, 2)}).ok());
  }
  SECTION("a cycle across ranks deadlocks") {
    // Rank 0 waits for B(1, 0) before running F(0, 1), which rank 1 needs
    // before it can reach B(1, 0).
    schedule.perRank[0] = {{PipeWork::Forward, 0, 0},
                           {PipeWork::Backward, 0, 0},
                           {PipeWork::Forward, 0, 1},
                           {PipeWork::Backward, 0, 1}};
    schedule.perRank[1] = {{PipeWork::Forward, 1, 0},
                           {PipeWork::Forward, 1, 1},
                           {PipeWork::Backward, 1, 0},
                           {PipeWork::Backward, 1, 1}};
    std::string error = checkError(schedule);
    REQUIRE(contains(error, "rank 0 waits at position 1"));
    REQUIRE(contains(error, "rank 1 waits at position 1"));
  }
  SECTION("a split schedule must run every W") {
    PipelineSchedule zb = build(ScheduleKind::ZeroBubble, 2, 2);
    std::vector<PipeAction> &last = zb.perRank[0];
    last.erase(std::find(last.begin(), last.end(),
                         PipeAction{PipeWork::WeightGrad, 0, 1}));
    REQUIRE(contains(checkError(zb), "never runs W(stage 0, micro-batch 1)"));
  }
}

TEST_CASE("dependencies of actions", "[pipeline]") {
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 3, 2);
  REQUIRE(pipeActionDependencies(schedule, {PipeWork::Forward, 0, 1}).empty());
  std::vector<PipeAction> deps =
      pipeActionDependencies(schedule, {PipeWork::Backward, 1, 1});
  REQUIRE(deps.size() == 2);
  REQUIRE(deps[0] == PipeAction{PipeWork::Forward, 1, 1});
  REQUIRE(deps[1] == PipeAction{PipeWork::Backward, 2, 1});
  REQUIRE(describePipeAction({PipeWork::WeightGrad, 2, 5}) ==
          "W(stage 2, micro-batch 5)");
}

TEST_CASE("summarizeTimeline on a measured timeline", "[pipeline]") {
  // Two ranks, times starting at 10 with gaps: rank 0 works 1 + 2 of the
  // 7 time units, rank 1 works 1 + 2 (with an overlap counted once).
  ScheduleTimeline timeline;
  timeline.ranks = 2;
  timeline.actions = {
      {{PipeWork::Forward, 0, 0}, 0, 10.0, 11.0},
      {{PipeWork::Forward, 1, 0}, 1, 11.5, 12.5},
      {{PipeWork::Backward, 1, 0}, 1, 12.5, 14.0},
      {{PipeWork::Backward, 1, 0}, 1, 13.5, 14.5},
      {{PipeWork::Backward, 0, 0}, 0, 15.0, 17.0},
  };
  summarizeTimeline(timeline, false);
  REQUIRE(timeline.makespan == Approx(7));
  REQUIRE(timeline.busy[0] == Approx(3));
  REQUIRE(timeline.busy[1] == Approx(3));
  REQUIRE(timeline.bubble[0] == Approx(4.0 / 7));
  REQUIRE(timeline.bubble[1] == Approx(4.0 / 7));
  REQUIRE(timeline.bubbleFraction == Approx(4.0 / 7));
  REQUIRE(timeline.peakInFlight == std::vector<int>{1, 1});

  SECTION("a rank named by an action but not counted is added") {
    timeline.ranks = 1;
    summarizeTimeline(timeline, false);
    REQUIRE(timeline.ranks == 2);
    REQUIRE(timeline.bubble.size() == 2);
  }
  SECTION("a split backward holds activations until W") {
    // Rank 0 runs F0, F1, B0, B1, W0, W1: both held at once.
    ScheduleTimeline split;
    split.ranks = 1;
    split.actions = {{{PipeWork::Forward, 0, 0}, 0, 0, 1},
                     {{PipeWork::Backward, 0, 0}, 0, 1, 2},
                     {{PipeWork::Forward, 0, 1}, 0, 2, 3},
                     {{PipeWork::Backward, 0, 1}, 0, 3, 4},
                     {{PipeWork::WeightGrad, 0, 0}, 0, 4, 5},
                     {{PipeWork::WeightGrad, 0, 1}, 0, 5, 6}};
    summarizeTimeline(split, true);
    REQUIRE(split.peakInFlight[0] == 2);
    summarizeTimeline(split, false);
    REQUIRE(split.peakInFlight[0] == 1);
  }
  SECTION("an empty timeline") {
    ScheduleTimeline empty;
    empty.ranks = 3;
    summarizeTimeline(empty, false);
    REQUIRE(empty.makespan == 0);
    REQUIRE(empty.bubble == std::vector<double>(3, 0.0));
  }
}

TEST_CASE("renderTimeline draws one row per rank", "[pipeline]") {
  SECTION("a simulated zero-bubble schedule") {
    ScheduleTimeline timeline =
        simulate(build(ScheduleKind::ZeroBubble, 4, 8), costs(1, 1, 1));
    for (int width : {1, 7, 30, 100}) {
      INFO("width " << width);
      std::vector<std::string> rows = lines(renderTimeline(timeline, width));
      REQUIRE(rows.size() == 5); // the header and 4 ranks
      REQUIRE(rows[0].rfind("time", 0) == 0);
      for (int r = 0; r < 4; ++r) {
        const std::string &row = rows[r + 1];
        REQUIRE(row.rfind("rank " + std::to_string(r) + " |", 0) == 0);
        size_t open = row.find('|'), close = row.find('|', open + 1);
        REQUIRE(close != std::string::npos);
        REQUIRE(close - open - 1 == size_t(width));
        REQUIRE(contains(row.substr(close), "| bubble "));
        REQUIRE(contains(row.substr(close), "%"));
      }
      if (width >= 30) {
        std::string all = rows[1] + rows[2] + rows[3] + rows[4];
        for (const char *letter : {"F", "B", "W", "."})
          REQUIRE(contains(all, letter));
      }
    }
    // Rank 3 starts after three forwards elsewhere: idle on the left.
    std::vector<std::string> rows = lines(renderTimeline(timeline, 100));
    REQUIRE(rows[4].substr(8, 3) == "...");
  }
  SECTION("a measured timeline with arbitrary times") {
    ScheduleTimeline timeline;
    timeline.ranks = 2;
    timeline.actions = {
        {{PipeWork::Forward, 0, 3}, 0, 0.125, 0.5},
        {{PipeWork::Forward, 1, 3}, 1, 0.5, 0.5000001}, // shorter than a cell
        {{PipeWork::Backward, 1, 3}, 1, 0.6, 0.7},
        {{PipeWork::Backward, 0, 3}, 0, 0.7, 1.125},
    };
    std::string text = renderTimeline(timeline, 40);
    std::vector<std::string> rows = lines(text);
    REQUIRE(rows.size() == 3);
    // Wide actions are labelled with their micro-batch.
    REQUIRE(contains(rows[1], "F3FF"));
    REQUIRE(contains(rows[1], "B3BB"));
    REQUIRE(contains(rows[1], "."));
    // The very short forward still shows up.
    REQUIRE(contains(rows[2], "F"));
    REQUIRE(contains(rows[2], "bubble"));
  }
  SECTION("ten ranks keep the rows aligned") {
    ScheduleTimeline timeline =
        simulate(build(ScheduleKind::OneFOneB, 10, 10), costs(1, 2));
    std::vector<std::string> rows = lines(renderTimeline(timeline, 60));
    REQUIRE(rows.size() == 11);
    for (const std::string &row : rows)
      REQUIRE(row.find('|') == rows[0].find('|'));
  }
}
