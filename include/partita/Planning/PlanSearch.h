//===- PlanSearch.h - The layouts partita plan searches ---------*- C++ -*-===//
//
// A layout of the search (a Candidate), the cluster it is for, and how a
// layout is compiled and costed: at full depth, or screened at a few
// layers and extrapolated (docs/Planning.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_PLANSEARCH_H
#define PARTITA_PLANNING_PLANSEARCH_H

#include "partita/Planning/StepCost.h"

#include "partita/Models/Models.h"
#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Sharding/Cost.h"
#include "partita/Transforms/Pipeline.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace partita {

/// The cluster the plan is for.
struct Cluster {
  int64_t devicesPerNode = 0; // 0: every device in one node.
  double flopsPerSecond = 1e11;
  double memoryBytes = 0; // 0: unknown.
  AxisLink intra{450, 5}, inter{450, 5};
  /// Measured by `partita calibrate`: then compiled layouts are costed per
  /// instruction and collective (docs/Planning.md, "Calibration").
  std::optional<Calibration> calibration;
};

/// One layout of the search and what became of it.
struct Candidate {
  int64_t data = 1, model = 1;
  /// Pipeline ranks (1: no pipeline parallelism); data x context x model is
  /// then one rank's sub-mesh.
  std::string rules;
  int64_t micro = 1;
  Remat remat = Remat::None;
  int64_t pipe = 1;
  /// A pipelined layout's schedule: 1F1B, zero-bubble (ZB-H1) or
  /// interleaved (two chunks per rank).
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  /// Devices of the context axis (1: the sequence is not split through
  /// attention), and the attention on a split sequence: "ring" or
  /// "ulysses" (docs/LongContext.md).
  int64_t context = 1;
  std::string attention = "ring";
  int64_t chunks() const {
    return schedule == ScheduleKind::Interleaved ? 2 : 1;
  }
  // Filled in by evaluate().
  double stateLowerBound = 0;
  double estimatedSeconds = 0; // The quick estimate that orders compiling.
  bool compiled = false;
  std::string failure; // Why it was not compiled or failed to.
  double memory = 0;   // Arena bytes per device.
  std::map<std::string, int64_t> byRole;
  double computeSeconds = 0, commSeconds = 0;
  int64_t collectives = 0;
  double stepSeconds() const { return computeSeconds + commSeconds; }
  /// Memory per device extrapolated from the model at kScreenLayers and
  /// kScreenLayers + 1 layers (kScreenStageLayers and one more per stage
  /// when pipelined; 0: not screened), whether screening gave figures, and
  /// whether they put it over the budget (then it is not compiled at full
  /// depth).
  double screenedMemory = 0;
  bool screened = false, screenedOut = false;
  /// A pipelined layout's simulated idle fraction.
  double bubble = 0;

  /// One rank's sub-mesh (the whole mesh without pipelining).
  std::string rankMeshText() const {
    std::string text;
    auto add = [&](const char *name, int64_t size) {
      text += (text.empty() ? "" : ",") + std::string(name) + "=" +
              std::to_string(size);
    };
    if (data > 1 || (context == 1 && model == 1))
      add("data", data);
    if (context > 1)
      add("context", context);
    if (model > 1)
      add("model", model);
    return text;
  }
  /// Devices of one rank's sub-mesh.
  int64_t rankDevices() const { return data * context * model; }
  /// The rules, and a pipelined layout's schedule (a split sequence's
  /// attention) after a slash.
  std::string rulesText() const {
    if (context > 1)
      return rules + "/" + attention;
    return pipe == 1 ? rules
                     : rules + "/" + partita::scheduleKindName(schedule);
  }
  std::string meshText() const {
    if (pipe == 1)
      return rankMeshText();
    std::string text = "pipe=" + std::to_string(pipe);
    return rankDevices() == 1 ? text : text + "," + rankMeshText();
  }
};

/// Deep models are screened at this many layers and one more: every
/// figure of a stack of identical layers (memory of the buffer plan,
/// FLOPs, collective time) is a constant plus one per layer, so the pair
/// extrapolates to the whole depth (docs/Planning.md, "Screening").
constexpr int64_t kScreenLayers = 2;

/// Pipelined layouts are screened over two ranks at this many layers per
/// stage and one more (models of 2 and 4 layers): a stage's programs
/// compile separately, so one layer per stage is not the degenerate case a
/// whole model of one layer can be.
constexpr int64_t kScreenStageLayers = 1;

/// The link of the data axis and of the model axis of `c`'s mesh: the
/// model axis inside a node; the data axis across nodes once the mesh spans
/// more than one.
std::pair<AxisLink, AxisLink> axisLinks(const Candidate &c,
                                        const Cluster &cluster);

/// Compiles `c` for `model` with `globalBatch` sequences per step (its
/// per-axis links from `cluster`, axisLinks()) and fills in its figures,
/// or its failure.
void evaluate(Candidate &c, const ModelConfig &model, const Cluster &cluster,
              int64_t globalBatch);

/// Threads to compile layouts on: one per core.
size_t parallelism();

/// Runs body(0) ... body(count - 1) on up to parallelism() threads. Each
/// layout compiles in its own MLIR context, so compiles run side by side.
/// Once the search has run a second, prints "plan: K of N WHAT (T s)" on
/// stderr at most once a second.
void forEachInParallel(size_t count, const char *what,
                       const std::function<void(size_t)> &body);

/// What screening did.
struct ScreenCounts {
  int64_t screened = 0, screenedOut = 0;
  /// Pipelined layouts left out: their group's leanest layout did not fit,
  /// or was slower than the groups explored.
  int64_t leftOut = 0;
};

/// Screens `order` (a deep model, with finalists): each plain layout at
/// kScreenLayers and one more layers; pipelined layouts over two ranks at
/// kScreenStageLayers and one more layers per stage, the leanest layout of
/// each group (the same pipeline, rank mesh and rules) first (the most
/// micro-batches, per-layer recomputation), then every layout of the
/// `groups` groups whose leanest is fastest. A screened layout gets its
/// extrapolated step time (estimatedSeconds) and memory; one over `budget`
/// and the pipelined layouts left out get their failure. Returns the
/// layouts still to compile at full depth.
std::vector<Candidate *> screenLayouts(const std::vector<Candidate *> &order,
                                       const ModelConfig &config,
                                       const Cluster &cluster,
                                       int64_t globalBatch, double budget,
                                       int64_t groups, ScreenCounts &counts);

} // namespace partita

#endif // PARTITA_PLANNING_PLANSEARCH_H
