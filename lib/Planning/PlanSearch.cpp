//===- PlanSearch.cpp - Compiling and screening partita plan's layouts ----===//
//
// Each layout is compiled in its own MLIR context, side by side with
// others: at full depth its memory is the buffer plan's arena and its time
// the cost of its instructions and collectives; a deep model's layouts are
// first screened at a few layers, every figure extrapolated as a constant
// plus one per layer (docs/Planning.md, "Screening").
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/PlanSearch.h"

#include "partita/Driver/Session.h"
#include "partita/Planning/PipelineFigures.h"
#include "partita/Planning/PlanPipelined.h"
#include "partita/Sharding/Progress.h"

#include "partita/Analysis/Report.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Transforms/Interconnect.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <tuple>

using namespace partita;

std::pair<AxisLink, AxisLink> partita::axisLinks(const Candidate &c,
                                                 const Cluster &cluster) {
  int64_t perNode =
      cluster.devicesPerNode > 0 ? cluster.devicesPerNode : c.rankDevices();
  return {c.rankDevices() > perNode ? cluster.inter : cluster.intra,
          cluster.intra};
}

namespace {

/// The per-axis interconnect of `c`'s mesh on `cluster`: the model axis
/// inside a node; the data axis across nodes once the mesh spans more than
/// one. Given to the passes as a value.
std::shared_ptr<const Interconnect> interconnectFor(const Candidate &c,
                                                    const Cluster &cluster) {
  auto [dataLink, modelLink] = axisLinks(c, cluster);
  auto links = std::make_shared<Interconnect>();
  links->axes["model"] = modelLink;
  links->axes["data"] = dataLink;
  // The context axis sits between them: inside a node while it and the
  // model axis fit in one.
  int64_t perNode =
      cluster.devicesPerNode > 0 ? cluster.devicesPerNode : c.rankDevices();
  links->axes["context"] =
      c.context * c.model > perNode ? cluster.inter : cluster.intra;
  return links;
}

/// The pipelined layout `c` of `model` as a compile request; false, with
/// c.failure, when it cannot be.
bool pipelinedRequest(Candidate &c, const ModelConfig &model,
                      const Cluster &cluster, int64_t globalBatch,
                      PipelinedRequest &request) {
  Expected<Mesh> rankMesh = parseMeshSpec(c.rankMeshText());
  if (!rankMesh) {
    c.failure = rankMesh.status().message();
    return false;
  }
  request.microConfig = model;
  request.microConfig.batch = globalBatch / c.micro;
  request.rankMesh = *rankMesh;
  request.ranks = c.pipe;
  request.schedule = c.schedule;
  request.virtualStages = c.chunks();
  request.microBatches = c.micro;
  request.remat = c.remat;
  request.rules = c.rules;
  request.interconnect = interconnectFor(c, cluster);
  // Ranks are consecutive blocks of devices: neighbours share a node while
  // a rank is smaller than one.
  int64_t perNode = cluster.devicesPerNode > 0 ? cluster.devicesPerNode
                                               : c.rankDevices() * c.pipe;
  request.pipeLink = c.rankDevices() >= perNode ? cluster.inter : cluster.intra;
  return true;
}

/// What one program of a pipelined `c` costs: each action runs its program
/// apart, so with a calibration its launch counts as compute.
ProgramSeconds pipelinedProgramSeconds(const Candidate &c,
                                       const Cluster &cluster) {
  auto [dataLink, modelLink] = axisLinks(c, cluster);
  AxisLink inside = c.data > 1 ? dataLink : modelLink;
  return [&cluster, inside](const Executable &program) {
    StepProfile profile = profileExecutable(program);
    if (!cluster.calibration)
      return predictSecondsOnLink(profile, cluster.flopsPerSecond, inside);
    auto [compute, comm] =
        predictSeconds(profile, *cluster.calibration, inside);
    return std::pair<double, double>{
        compute + launchSeconds(program, *cluster.calibration), comm};
  };
}

/// Fills in a pipelined `c`'s figures from `estimate` (or its failure).
void takeEstimate(Candidate &c, const Expected<PipelinedEstimate> &estimate) {
  if (!estimate) {
    c.failure = estimate.status().message();
    return;
  }
  c.compiled = true;
  c.memory = estimate->memory;
  c.byRole = estimate->byRole;
  c.computeSeconds = estimate->computeSeconds;
  c.commSeconds = estimate->commSeconds;
  c.collectives = estimate->collectives;
  c.bubble = estimate->bubble;
}

/// A pipelined `c` (docs/Planning.md, "Pipeline parallelism"): compiled
/// as train --pp compiles it, its step simulated.
void evaluatePipelined(Candidate &c, const ModelConfig &model,
                       const Cluster &cluster, int64_t globalBatch) {
  PipelinedRequest request;
  if (!pipelinedRequest(c, model, cluster, globalBatch, request))
    return;
  takeEstimate(c,
               estimatePipelined(request, pipelinedProgramSeconds(c, cluster)));
}

/// A pipelined `c` screened at `stageLayers` layers per stage: the stages
/// of its layout over two ranks, compiled (docs/Planning.md, "Screening").
Expected<std::vector<StageFigures>>
screenPipelined(Candidate c, const ModelConfig &model, int64_t stageLayers,
                const Cluster &cluster, int64_t globalBatch) {
  ModelConfig shallow = model;
  shallow.layers = 2 * c.chunks() * stageLayers;
  PipelinedRequest request;
  if (!pipelinedRequest(c, shallow, cluster, globalBatch, request))
    return Status::error(c.failure);
  request.ranks = 2;
  Expected<std::vector<StageFigures>> stages =
      compileStageFigures(request, pipelinedProgramSeconds(c, cluster));
  if (stages && stages->size() != static_cast<size_t>(2 * c.chunks()))
    return Status::error("a 2-rank pipeline compiled to " +
                         std::to_string(stages->size()) + " stages");
  return stages;
}

} // namespace

void partita::evaluate(Candidate &c, const ModelConfig &model,
                       const Cluster &cluster, int64_t globalBatch) {
  if (c.pipe > 1)
    return evaluatePipelined(c, model, cluster, globalBatch);
  Session session;
  // Layouts compile side by side, one per core: no pool per context.
  session.context.disableMultithreading();
  FirstError firstError(session.context);
  ModelConfig config = model;
  config.batch = globalBatch / c.micro;
  config.contextAttention = c.attention;
  Expected<Mesh> mesh = parseMeshSpec(c.meshText());
  if (!mesh) {
    c.failure = mesh.status().message();
    return;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, config, *mesh);
  PipelineOptions options;
  options.rules = c.rules;
  options.trainOptimizer = TrainOptimizer::AdamW;
  options.trainLearningRate = 1e-3;
  options.trainMicroBatches = c.micro;
  options.trainRemat = c.remat;
  options.interconnect = interconnectFor(c, cluster);
  options.stage = Stage::Partitioned;
  if (!module || !runPipeline(session, *module, options)) {
    c.failure = "does not compile: " + firstError.message();
    return;
  }
  Report report = analyzeModule(*module, *options.interconnect);
  ModelSummary summary = summarizeModel(*module);
  Expected<Executable> program = lowerToExecutable(*module);
  if (!program) {
    c.failure = "does not lower: " + program.status().message();
    return;
  }
  c.compiled = true;
  c.memory = static_cast<double>(program->allocatedBytes());
  c.byRole = report.bytesByRole;
  if (cluster.calibration) {
    // A measured machine: each instruction, einsum, elementwise pass and
    // collective the device runs, at its measured cost.
    auto [dataLink, modelLink] = axisLinks(c, cluster);
    std::tie(c.computeSeconds, c.commSeconds) =
        predictSeconds(profileExecutable(*program), *cluster.calibration,
                       c.data > 1 ? dataLink : modelLink);
  } else {
    c.computeSeconds =
        static_cast<double>(summary.matmulFlops + summary.vectorFlops) /
        cluster.flopsPerSecond;
    c.commSeconds = report.estTimeUs * 1e-6;
  }
  c.collectives = report.totalCollectives;
}

size_t partita::parallelism() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void partita::forEachInParallel(size_t count, const char *what,
                                const std::function<void(size_t)> &body) {
  // A deep model's layouts take minutes to compile: each one done is said
  // (partita/Sharding/Progress.h).
  std::atomic<size_t> done{0};
  auto run = [&](size_t i) {
    body(i);
    reportProgress("plan: " + std::to_string(++done) + " of " +
                   std::to_string(count) + " " + what);
  };
  size_t threads = std::min(parallelism(), count);
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i)
      run(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++)
        run(i);
    });
  for (std::thread &worker : workers)
    worker.join();
}

namespace {

/// A pipelined group is explored past its leanest layout only while that
/// is at most this many times slower than the fastest layout screened that
/// fits: the others differ from it by fewer micro-batches (less work per
/// micro-batch, more idle, more memory) or no recomputation (at most a
/// quarter less compute), rarely by a factor of two.
constexpr double kExploreWithin = 2.0;

/// An explored group's layouts are screened this many at a time, leanest
/// first (a fixed number: the plan is the same on any number of cores).
constexpr size_t kScreenWave = 4;

/// Whether `b` holds at least what `a` holds per device, by construction:
/// no more micro-batches (each as large or larger), no more recomputation,
/// and a schedule keeping as many in flight or more (1F1B, zero-bubble,
/// interleaved).
bool holdsAtLeast(const Candidate &b, const Candidate &a) {
  auto remat = [](Remat r) {
    return r == Remat::None ? 2 : r == Remat::PerLayer ? 1 : 0;
  };
  auto schedule = [](ScheduleKind kind) {
    return kind == ScheduleKind::OneFOneB     ? 0
           : kind == ScheduleKind::ZeroBubble ? 1
                                              : 2;
  };
  return b.pipe == a.pipe && b.data == a.data && b.model == a.model &&
         b.context == a.context && b.attention == a.attention &&
         b.rules == a.rules && b.micro <= a.micro &&
         remat(b.remat) >= remat(a.remat) &&
         schedule(b.schedule) >= schedule(a.schedule);
}

/// Why `c` is left out when the same pipeline's `lean` is over budget.
std::string overBudgetAlready(const Candidate &lean) {
  return llvm::formatv("left out: the same pipeline with {0} micro-batches, "
                       "remat {1} and {2} needs about {3} per device already",
                       lean.micro, partita::rematName(lean.remat),
                       partita::scheduleKindName(lean.schedule),
                       formatBytes(lean.screenedMemory))
      .str();
}

/// Screens every layout of `set` at both depths, side by side, and records
/// what it found in each (Candidate::screened and the figures, or over the
/// budget).
void screenSet(const std::vector<Candidate *> &set, const ModelConfig &config,
               const Cluster &cluster, int64_t globalBatch, double budget,
               ScreenCounts &counts) {
  using Stages = Expected<std::vector<StageFigures>>;
  std::vector<Candidate> shallows, deepers;
  std::vector<Stages> shallowStages, deeperStages;
  for (Candidate *c : set) {
    shallows.push_back(*c);
    deepers.push_back(*c);
    shallowStages.push_back(Status::error("not screened"));
    deeperStages.push_back(Status::error("not screened"));
  }
  ModelConfig small = config, next = config;
  small.layers = kScreenLayers;
  next.layers = kScreenLayers + 1;
  forEachInParallel(2 * set.size(), "screening compiles", [&](size_t i) {
    size_t k = i / 2;
    if (set[k]->pipe > 1)
      (i % 2 ? deeperStages[k] : shallowStages[k]) =
          screenPipelined(*set[k], config, kScreenStageLayers + int64_t(i % 2),
                          cluster, globalBatch);
    else
      evaluate(i % 2 ? deepers[k] : shallows[k], i % 2 ? next : small, cluster,
               globalBatch);
  });
  for (size_t k = 0; k < set.size(); ++k) {
    Candidate *c = set[k];
    if (c->pipe > 1) {
      if (!shallowStages[k] || !deeperStages[k])
        continue;
      // The whole depth's stages, their step simulated.
      int64_t count = c->pipe * c->chunks();
      std::vector<StageFigures> stages = extrapolateStages(
          *shallowStages[k], *deeperStages[k],
          static_cast<double>(kScreenStageLayers),
          static_cast<double>(config.layers) / static_cast<double>(count),
          count);
      Candidate whole = *c;
      takeEstimate(whole, estimateFromStages(stages, c->schedule, c->chunks(),
                                             c->micro));
      if (!whole.compiled)
        continue;
      c->screenedMemory = whole.memory;
      c->estimatedSeconds = whole.stepSeconds();
    } else {
      const Candidate &shallow = shallows[k], &deeper = deepers[k];
      if (!shallow.compiled || !deeper.compiled)
        continue;
      double more = static_cast<double>(config.layers - kScreenLayers - 1);
      auto extend = [&](double a, double b) { return b + more * (b - a); };
      c->screenedMemory = extend(shallow.memory, deeper.memory);
      c->estimatedSeconds = extend(shallow.stepSeconds(), deeper.stepSeconds());
    }
    c->screened = true;
    ++counts.screened;
    if (budget > 0 && c->screenedMemory > budget) {
      int64_t layers = c->pipe > 1 ? kScreenStageLayers : kScreenLayers;
      c->failure = llvm::formatv("over budget: about {0} per device "
                                 "(extrapolated from {1} and {2} layers{3})",
                                 formatBytes(c->screenedMemory), layers,
                                 layers + 1, c->pipe > 1 ? " per stage" : "")
                       .str();
      c->screenedOut = true;
      ++counts.screenedOut;
    }
  }
}

} // namespace

std::vector<Candidate *>
partita::screenLayouts(const std::vector<Candidate *> &order,
                       const ModelConfig &config, const Cluster &cluster,
                       int64_t globalBatch, double budget, int64_t groups,
                       ScreenCounts &counts) {
  // Pipelined layouts by group, leanest first: the most micro-batches
  // (the fewest activations in flight), per-layer recomputation before
  // none, then 1F1B, zero-bubble (1F1B's memory) and interleaved (more
  // in flight).
  std::map<std::tuple<int64_t, int64_t, int64_t, std::string>,
           std::vector<Candidate *>>
      byGroup;
  std::vector<Candidate *> first;
  for (Candidate *c : order) {
    if (c->pipe > 1)
      byGroup[{c->pipe, c->data, c->model, c->rules}].push_back(c);
    else
      first.push_back(c);
  }
  std::vector<std::vector<Candidate *> *> pipelined;
  for (auto &[key, members] : byGroup) {
    std::stable_sort(members.begin(), members.end(),
                     [](const Candidate *a, const Candidate *b) {
                       if (a->micro != b->micro)
                         return a->micro > b->micro;
                       if (a->remat != b->remat)
                         return a->remat != Remat::None;
                       auto order = [](ScheduleKind kind) {
                         return kind == ScheduleKind::OneFOneB     ? 0
                                : kind == ScheduleKind::ZeroBubble ? 1
                                                                   : 2;
                       };
                       return order(a->schedule) < order(b->schedule);
                     });
    first.push_back(members.front());
    pipelined.push_back(&members);
  }
  screenSet(first, config, cluster, globalBatch, budget, counts);

  // The groups whose leanest layout fits, fastest first: the first `groups`
  // are screened whole; the others are left out, and so are the groups
  // whose leanest layout does not fit (their other layouts hold more).
  std::vector<std::vector<Candidate *> *> fitting;
  for (std::vector<Candidate *> *members : pipelined) {
    const Candidate *lean = members->front();
    if (lean->screened && !lean->screenedOut)
      fitting.push_back(members);
  }
  std::stable_sort(
      fitting.begin(), fitting.end(),
      [](const std::vector<Candidate *> *a, const std::vector<Candidate *> *b) {
        return a->front()->estimatedSeconds < b->front()->estimatedSeconds;
      });
  // The fastest layout screened so far that fits.
  double best = 0;
  for (Candidate *c : first)
    if (c->screened && !c->screenedOut &&
        (best == 0 || c->estimatedSeconds < best))
      best = c->estimatedSeconds;
  std::vector<Candidate *> rest;
  size_t explored = 0;
  for (; explored < fitting.size() && explored < size_t(groups) &&
         fitting[explored]->front()->estimatedSeconds <= kExploreWithin * best;
       ++explored)
    rest.insert(rest.end(), fitting[explored]->begin() + 1,
                fitting[explored]->end());
  // In waves, leanest first: a layout holding at least what a layout of
  // its group found over budget holds is left out unscreened (most of a
  // group explored for its leanest layout runs out of memory with fewer
  // micro-batches or no recomputation).
  std::vector<const Candidate *> over;
  while (!rest.empty()) {
    size_t take = std::min(rest.size(), kScreenWave);
    std::vector<Candidate *> wave(rest.begin(), rest.begin() + take);
    screenSet(wave, config, cluster, globalBatch, budget, counts);
    for (const Candidate *c : wave)
      if (c->screenedOut)
        over.push_back(c);
    std::vector<Candidate *> next;
    for (size_t k = take; k < rest.size(); ++k) {
      Candidate *c = rest[k];
      auto dominating =
          std::find_if(over.begin(), over.end(), [&](const Candidate *o) {
            return holdsAtLeast(*c, *o);
          });
      if (dominating == over.end()) {
        next.push_back(c);
        continue;
      }
      c->failure = overBudgetAlready(**dominating);
      ++counts.leftOut;
    }
    rest = std::move(next);
  }
  for (std::vector<Candidate *> *members : pipelined) {
    const Candidate *lean = members->front();
    bool wasExplored = std::find(fitting.begin(), fitting.begin() + explored,
                                 members) != fitting.begin() + explored;
    for (size_t m = 1; m < members->size(); ++m) {
      Candidate *c = (*members)[m];
      // Screened; or explored and its own screen failed: compiled at full
      // depth like any layout whose screen failed.
      if (c->screened || wasExplored)
        continue;
      ++counts.leftOut;
      if (!lean->screened) {
        // The leanest is compiled at full depth instead; the rest of the
        // group would cost as many deep compiles.
        c->failure = "left out: the leanest layout of its group could not "
                     "be screened; it is compiled at full depth instead";
        continue;
      }
      c->failure =
          lean->screenedOut
              ? overBudgetAlready(*lean)
              : llvm::formatv("left out: the leanest layout of its group "
                              "({0} micro-batches, remat {1}) is estimated "
                              "{2:F3} ms, {3}",
                              lean->micro, partita::rematName(lean->remat),
                              lean->estimatedSeconds * 1e3,
                              lean->estimatedSeconds > kExploreWithin * best
                                  ? llvm::formatv("over {0} times the best "
                                                  "screened layout's {1:F3} ms",
                                                  kExploreWithin, best * 1e3)
                                        .str()
                                  : llvm::formatv("behind {0} faster "
                                                  "pipelined groups",
                                                  explored)
                                        .str())
                    .str();
    }
  }
  std::vector<Candidate *> kept;
  for (Candidate *c : order)
    if (c->screened ? !c->screenedOut : c->failure.empty())
      kept.push_back(c);
  return kept;
}
