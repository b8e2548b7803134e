//===- Plan.cpp - The search partita plan runs ----------------------------===//
//
// Searches mesh shapes x rules presets x micro-batches x activation
// checkpointing (and pipeline ranks) for a model on N devices, and ranks
// the layouts that fit in memory by predicted step time (docs/Planning.md).
// A lower bound of each layout's model state (parameters, gradients, AdamW
// moments) prunes what cannot fit; every other layout is compiled
// (PlanSearch.h): its memory per device is the buffer plan's arena (what
// the runtime allocates), its compute the FLOPs of the partitioned step
// over the device's throughput, its communication the cost model's time of
// its collectives on the cluster's links.
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Plan.h"

#include "partita/Driver/MemoryBudget.h"
#include "partita/Driver/Session.h"
#include "partita/Planning/StepCost.h"
#include "partita/Sharding/TextLimits.h"
#include "partita/Transforms/Interconnect.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace partita;

Expected<Cluster> partita::readClusterFile(const std::string &path) {
  Cluster cluster;
  if (path.empty())
    return cluster;
  Expected<std::string> contents = readJsonFile(path);
  if (!contents)
    return Status::error("cannot read '" + path +
                         "': " + contents.status().message());
  // One format, one reader: the links, devices_per_node, combine_bytes and
  // the checks of flops_per_second and memory_bytes are compile's
  // (parseInterconnect), with its messages; plan adds what only it reads.
  Expected<Interconnect> links = parseInterconnect(*contents);
  if (!links)
    return Status::error(path + ": " + links.status().message());
  if (!links->axes.empty())
    return Status::error(
        path + ": per-axis links ('axes') name the axes of one mesh; plan "
               "tries many meshes: give intra_node and inter_node links");
  cluster.devicesPerNode = links->devicesPerNode;
  cluster.intra = links->defaultLink;
  if (links->interNode)
    cluster.inter = *links->interNode;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(*contents);
  if (!json)
    return Status::error(path +
                         ": not JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  if (const llvm::json::Value *value = root->get("calibration")) {
    Expected<Calibration> calibration =
        parseCalibration(*value->getAsObject(), path + ": calibration");
    if (!calibration)
      return calibration.status();
    cluster.calibration = std::move(*calibration);
  }
  if (std::optional<double> flops = root->getNumber("flops_per_second"))
    cluster.flopsPerSecond = *flops;
  if (std::optional<double> memory = root->getNumber("memory_bytes"))
    cluster.memoryBytes = *memory;
  return cluster;
}

namespace {

/// A named cluster. Figures are the datasheets': dense BF16 tensor FLOP/s,
/// HBM per GPU, NVLink per direction (half the quoted bidirectional
/// figure), and one 400 Gb/s (H100, H200) or 200 Gb/s (A100) InfiniBand
/// port per GPU across nodes, as in NVIDIA's DGX systems. Latencies are
/// assumptions (5 us within a node, 10 us across), not measurements.
struct ClusterPreset {
  const char *name;
  Cluster cluster;
};

const std::vector<ClusterPreset> &clusterPresets() {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  static const std::vector<ClusterPreset> presets = {
      {"h100-8x", {8, 989e12, 80 * GiB, {450, 5}, {50, 10}, {}}},
      {"h200-8x", {8, 989e12, 141 * GiB, {450, 5}, {50, 10}, {}}},
      {"a100-8x", {8, 312e12, 80 * GiB, {300, 5}, {25, 10}, {}}},
  };
  return presets;
}

} // namespace

std::string partita::clusterPresetNames() {
  std::string names;
  for (const ClusterPreset &preset : clusterPresets())
    names += std::string(names.empty() ? "" : ", ") + preset.name;
  return names;
}

Expected<Cluster> partita::clusterPreset(const std::string &name) {
  for (const ClusterPreset &preset : clusterPresets())
    if (name == preset.name)
      return preset.cluster;
  return Status::error("unknown --cluster '" + name +
                       "'; the named clusters: " + clusterPresetNames() +
                       " (or a file: --interconnect)");
}

std::string partita::clusterOrigin(const std::string &preset,
                                   const std::string &file) {
  if (!preset.empty())
    return "cluster " + preset + ": ";
  if (!file.empty())
    return "cluster from " + file + ": ";
  return "cluster assumed (no --cluster or --interconnect; named ones: " +
         clusterPresetNames() + "): ";
}

int64_t partita::defaultFinalists(const ModelConfig &config) {
  return config.layers > kScreenLayers + 1 ? 3 : 0;
}

namespace {

/// Pipeline ranks searched at most.
constexpr int64_t kMaxPipe = 8;

/// Context parallelism is searched from this sequence length up: below it
/// the ring's or all_to_all's traffic buys little memory.
constexpr int64_t kContextFromSeq = 8192;

/// Context axes searched at most.
constexpr int64_t kMaxContext = 16;

/// The layouts that split the sequence over a context axis of 2 to 16
/// devices (docs/LongContext.md): ring and, where the key/value heads per
/// device divide, Ulysses; with the batch over data (replicated or FSDP
/// parameters) and the heads over model. Appended to `result`.
void contextLayouts(const ModelConfig &config, int64_t devices, int64_t perNode,
                    int64_t globalBatch, std::vector<Candidate> &result) {
  if (config.model == "mlp" || config.seq < kContextFromSeq)
    return;
  int64_t kvHeads = config.kvHeads ? config.kvHeads : config.heads;
  for (int64_t context = 2; context <= std::min(kMaxContext, devices);
       context *= 2) {
    if (devices % context || config.seq % context)
      continue;
    for (int64_t model = 1; model * context <= devices; model *= 2) {
      if ((devices / context) % model || model > perNode ||
          (model > 1 && (config.heads % model || kvHeads % model)))
        continue;
      int64_t data = devices / context / model;
      std::vector<std::string> presets =
          model == 1 ? std::vector<std::string>{"dp+cp", "fsdp+cp"}
                     : std::vector<std::string>{"cp+tp", "fsdp+cp+tp"};
      std::vector<std::string> forms = {"ring"};
      if ((kvHeads / model) % context == 0)
        forms.push_back("ulysses");
      for (const std::string &rules : presets)
        for (const std::string &form : forms)
          for (int64_t micro : {1, 2, 4}) {
            if (globalBatch % micro != 0 || (globalBatch / micro) % data != 0)
              continue;
            for (Remat remat : {Remat::None, Remat::PerLayer}) {
              Candidate c{data, model, rules, micro, remat};
              c.context = context;
              c.attention = form;
              result.push_back(c);
            }
          }
    }
  }
}

/// The layouts to search on `devices` devices.
std::vector<Candidate> layouts(const ModelConfig &config, int64_t devices,
                               const Cluster &cluster, int64_t globalBatch,
                               bool pipelined) {
  std::vector<Candidate> result;
  int64_t perNode =
      cluster.devicesPerNode > 0 ? cluster.devicesPerNode : devices;
  for (int64_t model = 1; model <= devices; ++model) {
    if (devices % model != 0 || model > perNode)
      continue;
    int64_t data = devices / model;
    std::vector<std::string> presets;
    if (model == 1) {
      presets = {"dp", "zero1", "zero2", "fsdp"};
      if (config.model == "moe")
        presets.push_back("ep");
    } else if (data == 1) {
      presets = {"tp", "tp+sp"};
    } else {
      presets = {"dp+tp", "fsdp+tp", "tp+sp"};
    }
    if (config.model == "mlp" && model > 1 && data == 1)
      presets = {"tp"};
    for (const std::string &rules : presets)
      for (int64_t micro : {1, 2, 4, 8}) {
        if (globalBatch % micro != 0 || (globalBatch / micro) % data != 0)
          continue;
        for (Remat remat : {Remat::None, Remat::PerLayer})
          result.push_back({data, model, rules, micro, remat});
      }
  }
  contextLayouts(config, devices, perNode, globalBatch, result);
  // Pipeline parallelism: P ranks (2 to 8, at most one per layer) of
  // devices / P each, 1F1B over P to 8P micro-batches, with the presets
  // that shard inside a rank.
  if (config.model == "mlp" || !pipelined)
    return result;
  for (int64_t pipe = 2; pipe <= std::min<int64_t>(kMaxPipe, config.layers);
       ++pipe) {
    if (devices % pipe)
      continue;
    int64_t rank = devices / pipe;
    for (int64_t model = 1; model <= rank; ++model) {
      if (rank % model != 0 || model > perNode)
        continue;
      int64_t data = rank / model;
      std::vector<std::string> presets =
          rank == 1    ? std::vector<std::string>{"dp"}
          : model == 1 ? std::vector<std::string>{"dp", "fsdp"}
          : data == 1  ? std::vector<std::string>{"tp"}
                       : std::vector<std::string>{"dp+tp", "fsdp+tp"};
      // P to 8P micro-batches: 1F1B keeps P in flight on the first rank,
      // so more of them (smaller) hold fewer activations and idle less.
      // Zero-bubble defers weight gradients into the bubble; interleaved
      // runs two chunks per rank (two layers per rank at least).
      std::vector<ScheduleKind> schedules = {ScheduleKind::OneFOneB,
                                             ScheduleKind::ZeroBubble};
      if (config.layers >= 2 * pipe)
        schedules.push_back(ScheduleKind::Interleaved);
      for (const std::string &rules : presets)
        for (int64_t micro : {pipe, 2 * pipe, 4 * pipe, 8 * pipe}) {
          if (globalBatch % micro != 0 || (globalBatch / micro) % data != 0)
            continue;
          for (Remat remat : {Remat::None, Remat::PerLayer})
            for (ScheduleKind schedule : schedules) {
              Candidate c{data, model, rules, micro, remat, pipe};
              c.schedule = schedule;
              result.push_back(c);
            }
        }
    }
  }
  return result;
}

/// Bytes of parameters, gradients and AdamW moments a device holds at
/// least under `c`, each `elementBytes` per parameter (the model's dtype:
/// 4 for f32, 2 for bf16; what is replicated counts once per device).
double stateLowerBound(const Candidate &c, double parameters,
                       double elementBytes) {
  // A pipeline rank holds its stages' share of the layers.
  double p = elementBytes * parameters / static_cast<double>(c.pipe),
         d = c.data, m = c.model;
  if (c.rules == "dp")
    return 4 * p;
  if (c.rules == "zero1")
    return 2 * p + 2 * p / d;
  if (c.rules == "zero2")
    return p + 3 * p / d;
  if (c.rules == "fsdp" || c.rules == "fsdp+tp" || c.rules == "fsdp+cp" ||
      c.rules == "fsdp+cp+tp")
    return 4 * p / (d * m);
  if (c.rules == "dp+cp")
    return 4 * p;
  if (c.rules == "ep")
    return 4 * p / d;
  return 4 * p / m; // tp, tp+sp, dp+tp, cp+tp
}

/// A quick estimate of `c`'s step time, to decide what to compile first
/// (docs/Planning.md, "Finalists"): the forward FLOPs three times (four
/// with recomputation) over the devices, and ring collectives of the bytes
/// each preset moves — gradients over `data` (reduced, or reduce-scattered
/// and the parameters gathered back; FSDP gathers them twice; ZeRO-2 and
/// FSDP reduce-scatter every micro-batch), activations
/// over `model` (four all-reduces per layer, forward and backward).
double estimateSeconds(const Candidate &c, const ModelConfig &config,
                       double parameters, double forwardFlops,
                       int64_t globalBatch, const Cluster &cluster) {
  // A pipeline rank runs its share of the layers, idle for the bubble:
  // (P - 1) / (k M + P - 1), k = 1 for 1F1B, 2 interleaved (two chunks),
  // about 3 zero-bubble (its bubble about a third of 1F1B's).
  double d = c.data, m = c.model, cp = static_cast<double>(c.context),
         pipe = static_cast<double>(c.pipe), devices = d * cp * m * pipe;
  double k = c.schedule == ScheduleKind::ZeroBubble    ? 3.0
             : c.schedule == ScheduleKind::Interleaved ? 2.0
                                                       : 1.0;
  double compute = (c.remat == Remat::None ? 3.0 : 4.0) * forwardFlops /
                   devices / cluster.flopsPerSecond * (k * c.micro + pipe - 1) /
                   (k * c.micro);
  double layers = config.layers / pipe;
  double state = 4 * parameters / pipe, tensors = 13.0 * layers + 4;
  double activation = static_cast<double>(globalBatch) / d * config.seq / cp *
                      config.dModel * 4;
  double dataBytes = 0, dataCount = 0, modelBytes = 0, modelCount = 0;
  double ring = (d - 1) / d;
  const std::string &r = c.rules;
  if (cp > 1) {
    // Parameters are replicated over the context axis: their gradients
    // are reduced over data and context together.
    ring = (d * cp - 1) / (d * cp);
  }
  if (r == "dp" || r == "ep" || r == "dp+tp" || r == "dp+cp" || r == "cp+tp") {
    dataBytes = 2 * ring * state / m;
    dataCount = 4;
  } else if (r == "zero1") {
    dataBytes = 2 * ring * state;
    dataCount = 4 + tensors;
  } else if (r == "zero2") {
    // A reduce-scatter per micro-batch (the accumulator is split), the
    // parameters gathered once.
    dataBytes = (c.micro + 1) * ring * state;
    dataCount = 4 + c.micro * tensors;
  } else if (r == "fsdp" || r == "fsdp+tp" || r == "fsdp+cp" ||
             r == "fsdp+cp+tp") {
    // Per micro-batch: gathered for the forward and the backward,
    // gradients reduce-scattered.
    dataBytes = 3 * c.micro * ring * state / m;
    dataCount = 3 * c.micro * tensors;
  }
  if (m > 1) {
    modelBytes = 4 * layers * 2 * (m - 1) / m * activation;
    modelCount = 4.0 * layers * c.micro * (r == "tp+sp" ? 2 : 1);
  }
  // The context axis, per layer: the ring sends keys and values cp - 1
  // times in the forward pass, again in each of the backward pass's two
  // recomputations, and their gradients once; Ulysses moves queries, keys,
  // values and the output through all_to_alls forward, twice again
  // recomputing and once backward (docs/LongContext.md).
  double contextBytes = 0, contextCount = 0;
  if (cp > 1) {
    double kvHeads =
        static_cast<double>(config.kvHeads ? config.kvHeads : config.heads);
    double kv = activation * kvHeads / config.heads / m;
    if (c.attention == "ring") {
      contextBytes = 4 * layers * 2 * kv * (cp - 1) * c.micro;
      contextCount = 4 * layers * 2 * cp * c.micro;
    } else {
      contextBytes =
          4 * layers * (2 * activation / m + 2 * kv) * (cp - 1) / cp * c.micro;
      contextCount = 4 * layers * 4 * c.micro;
    }
  }
  auto [dataLink, modelLink] = axisLinks(c, cluster);
  auto time = [](double bytes, double count, const AxisLink &link) {
    return bytes / (link.bandwidthGBps * 1e9) + count * link.latencyUs * 1e-6;
  };
  return compute + time(dataBytes, dataCount, dataLink) +
         time(modelBytes, modelCount, modelLink) +
         time(contextBytes, contextCount,
              c.context * c.model > cluster.devicesPerNode &&
                      cluster.devicesPerNode > 0
                  ? cluster.inter
                  : cluster.intra);
}

/// The error when no compiled layout fits: the budget, and the smallest
/// layout (compiled, screened, or by its model state alone).
Status noFit(const PlanRequest &request, const PlanResult &result) {
  const ModelConfig &config = request.config;
  const std::vector<Candidate> &candidates = result.candidates;
  int64_t devices = request.devices;
  double budget = request.budget;
  std::string message;
  llvm::raw_string_ostream os(message);
  // The least memory a compiled layout needs; failing that, the least
  // model state of a layout pruned before compiling.
  const Candidate *least = nullptr;
  for (size_t i : result.over)
    if (!least || candidates[i].memory < least->memory)
      least = &candidates[i];
  // A layout screened out may need less than any compiled one.
  const Candidate *leastScreened = nullptr;
  for (const Candidate &c : candidates)
    if (c.screenedOut &&
        (!leastScreened || c.screenedMemory < leastScreened->screenedMemory))
      leastScreened = &c;
  if (leastScreened &&
      (!least || leastScreened->screenedMemory < least->memory)) {
    os << "no layout of " << config.model << " on " << devices
       << " devices fits in " << formatBytes(budget)
       << " per device; the smallest layout needs about "
       << formatBytes(leastScreened->screenedMemory) << " ("
       << leastScreened->meshText() << ", " << leastScreened->rulesText()
       << ", " << leastScreened->micro << " micro-batches, remat "
       << partita::rematName(leastScreened->remat) << "; extrapolated from "
       << (leastScreened->pipe > 1 ? kScreenStageLayers : kScreenLayers)
       << " and "
       << (leastScreened->pipe > 1 ? kScreenStageLayers : kScreenLayers) + 1
       << (leastScreened->pipe > 1 ? " layers per stage)" : " layers)");
    return Status::error(message);
  }
  bool bound = !least;
  if (bound)
    for (const Candidate &c : candidates)
      if (!c.compiled && c.stateLowerBound > 0 &&
          (!least || c.stateLowerBound < least->stateLowerBound))
        least = &c;
  os << "no layout of " << config.model << " on " << devices
     << " devices fits in " << formatBytes(budget) << " per device";
  if (least)
    os << "; the smallest "
       << (bound ? "model state of any layout is at least " : "layout needs ")
       << formatBytes(bound ? least->stateLowerBound : least->memory) << " ("
       << least->meshText() << ", " << least->rulesText() << ", "
       << least->micro << " micro-batches, remat "
       << partita::rematName(least->remat) << ")";
  return Status::error(message);
}

} // namespace

Expected<PlanResult> partita::searchPlan(const PlanRequest &request) {
  const ModelConfig &config = request.config;
  const Cluster *cluster = &request.cluster;
  int64_t devices = request.devices, globalBatch = request.globalBatch,
          finalists = request.finalists;
  double budget = request.budget;
  // Deep models with finalists are screened at a few layers first
  // (screenLayouts).
  bool screening = finalists > 0 && config.layers > kScreenLayers + 1;
  // Every layout searched is compiled at full depth (finalists included):
  // refused up front when one such compile cannot fit in memory.
  if (Status status = checkModelMemory(config, ModuleWork::CompileTrainStep);
      !status.ok())
    return status;
  PlanResult result;
  std::vector<Candidate> &candidates = result.candidates;
  candidates = layouts(config, devices, *cluster, globalBatch, true);
  if (candidates.empty())
    return Status::error("no layout of " + std::to_string(devices) +
                         " devices divides the global batch of " +
                         std::to_string(globalBatch) +
                         " (give --global-batch a multiple of the data axis)");
  // Parameters and forward FLOPs, from the model at one device.
  double &parameters = result.parameters, &forwardFlops = result.forwardFlops;
  {
    Session session;
    ModelConfig whole = config;
    whole.batch = globalBatch;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        buildModelOrReport(session, whole, *parseMeshSpec("data=1"));
    if (!module)
      return Status::error("");
    ModelSummary summary = summarizeModel(*module);
    parameters = static_cast<double>(summary.parameters);
    forwardFlops =
        static_cast<double>(summary.matmulFlops + summary.vectorFlops);
  }
  // Prune by model state, then compile in the order of the quick
  // estimate until `finalists` layouts that fit are compiled (0: all).
  int64_t &pruned = result.pruned, &failed = result.failed,
          &compiledCount = result.compiled, fitting = 0;
  std::vector<Candidate *> order;
  for (Candidate &c : candidates) {
    c.stateLowerBound =
        stateLowerBound(c, parameters, config.dtype == "f32" ? 4.0 : 2.0);
    c.estimatedSeconds = estimateSeconds(c, config, parameters, forwardFlops,
                                         globalBatch, *cluster);
    if (budget > 0 && c.stateLowerBound > budget) {
      c.failure = "over budget: its model state alone needs at least " +
                  formatBytes(c.stateLowerBound);
      ++pruned;
      continue;
    }
    order.push_back(&c);
  }
  // Screening (finalists only, deep models): each layout compiled at a few
  // layers, its figures extrapolated; layouts over the budget then are not
  // compiled at full depth, and the others are compiled in the order of
  // their extrapolated step time.
  ScreenCounts &screenCounts = result.screen;
  if (screening)
    order = screenLayouts(order, config, *cluster, globalBatch, budget,
                          finalists, screenCounts);
  std::stable_sort(order.begin(), order.end(),
                   [](const Candidate *a, const Candidate *b) {
                     return a->estimatedSeconds < b->estimatedSeconds;
                   });
  // Compiled in waves, in estimate order: each of as many layouts as there
  // are cores, and no more than are still needed to make `finalists` fit;
  // a layout after the one that makes them fit is dropped as if never
  // compiled, so the result does not depend on the core count.
  for (size_t first = 0; first < order.size();) {
    size_t needed =
        static_cast<size_t>(std::max<long long>(finalists - fitting, 1));
    size_t wave =
        finalists > 0 ? std::min(parallelism(), needed) : order.size();
    size_t last = std::min(order.size(), first + wave);
    std::vector<Candidate> results;
    for (size_t k = first; k < last; ++k)
      results.push_back(*order[k]);
    if (finalists == 0 || fitting < finalists)
      forEachInParallel(results.size(), "layouts compiled", [&](size_t i) {
        evaluate(results[i], config, *cluster, globalBatch);
      });
    for (size_t k = first; k < last; ++k) {
      Candidate *c = order[k];
      if (finalists > 0 && fitting >= finalists) {
        c->failure = llvm::formatv("not compiled: estimated {0:F3} ms, "
                                   "after {1} layouts that fit",
                                   c->estimatedSeconds * 1e3, finalists)
                         .str();
        continue;
      }
      *c = std::move(results[k - first]);
      failed += !c->compiled;
      compiledCount += c->compiled;
      fitting += c->compiled && (budget <= 0 || c->memory <= budget);
    }
    first = last;
  }

  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].compiled)
      (budget <= 0 || candidates[i].memory <= budget ? result.fits
                                                     : result.over)
          .push_back(i);
  auto faster = [&](size_t a, size_t b) {
    const Candidate &x = candidates[a], &y = candidates[b];
    if (x.stepSeconds() != y.stepSeconds())
      return x.stepSeconds() < y.stepSeconds();
    return x.memory < y.memory;
  };
  std::stable_sort(result.fits.begin(), result.fits.end(), faster);
  if (!result.fits.empty())
    return result;
  return noFit(request, result);
}
