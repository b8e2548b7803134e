//===- Plan.h - The search partita plan runs --------------------*- C++ -*-===//
//
// A model on N devices, a cluster and a memory budget in; every layout the
// search tried out, ranked (docs/Planning.md). Mesh shapes x rules presets
// x micro-batches x activation checkpointing (and pipeline ranks) are
// enumerated; a lower bound of each layout's model state prunes what
// cannot fit; the others are compiled (PlanSearch.h), in the order of a
// quick estimate when only `finalists` are wanted.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_PLAN_H
#define PARTITA_PLANNING_PLAN_H

#include "partita/Planning/PlanSearch.h"

#include "partita/Models/Models.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace partita {

/// The cluster of a `partita plan --interconnect` file (docs/Planning.md,
/// "The cluster"); the default cluster for an empty path.
Expected<Cluster> readClusterFile(const std::string &path);

/// The named clusters `partita plan --cluster NAME` takes: "h100-8x",
/// "h200-8x", "a100-8x" (8 per node; FLOP/s, memory and links from the
/// vendors' datasheets, docs/Planning.md "Named clusters"). An error names
/// the presets for any other name.
Expected<Cluster> clusterPreset(const std::string &name);
/// The presets' names, comma-separated.
std::string clusterPresetNames();
/// One line on what the cluster is and where it came from, for the plan's
/// output: a preset's name, the file, or that none was given and these are
/// assumed.
std::string clusterOrigin(const std::string &preset, const std::string &file);

/// How many finalists `partita plan` compiles when --finalists is not
/// given: 3 for a model deeper than the screening depth (screened first,
/// only finalists compiled at full depth), 0 (every layout) otherwise.
int64_t defaultFinalists(const ModelConfig &config);

/// What to plan.
struct PlanRequest {
  /// The model (its batch is ignored: globalBatch is the step's).
  ModelConfig config;
  int64_t devices = 1;
  Cluster cluster;
  /// Bytes per device a layout may use (0: unlimited).
  double budget = 0;
  int64_t globalBatch = 1;
  /// Compile in the order of the quick estimate until this many layouts
  /// fit (deep models are screened first); 0: compile every layout.
  int64_t finalists = 0;
  /// How the plan names the cluster (clusterOrigin); empty: "cluster: ".
  std::string clusterSource;
};

/// Every layout the search tried and what became of it.
struct PlanResult {
  /// The model's parameters and forward FLOPs (at one device).
  double parameters = 0, forwardFlops = 0;
  std::vector<Candidate> candidates;
  /// Indices into `candidates`: the compiled layouts that fit, fastest
  /// first (then the least memory), and those over the budget.
  std::vector<size_t> fits, over;
  int64_t pruned = 0, failed = 0, compiled = 0;
  ScreenCounts screen;
  /// Layouts not compiled because `finalists` fitted before them.
  size_t notCompiled() const {
    return candidates.size() - pruned - screen.screenedOut - screen.leftOut -
           failed - compiled;
  }
};

/// Runs the search. Errors: no layout divides the global batch, a scratch
/// directory cannot be made, no layout fits the budget (the message names
/// the smallest), or the model does not build (an empty message after its
/// diagnostics were printed).
Expected<PlanResult> searchPlan(const PlanRequest &request);

/// Prints `plan` (which found a layout that fits): the model and the
/// cluster, what the search did, the `top` fastest layouts that fit (with
/// `explain`, every layout and why it lost), and the best one's memory by
/// role and collectives (PlanReport.cpp).
void printPlan(llvm::raw_ostream &os, const PlanRequest &request,
               const PlanResult &plan, size_t top, bool explain);

} // namespace partita

#endif // PARTITA_PLANNING_PLAN_H
