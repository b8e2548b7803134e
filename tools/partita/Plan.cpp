//===- Plan.cpp - partita plan: choose a parallel layout ------------------===//
//
// The flags in, the ranked layouts out: the search itself is the planning
// layer's (partita/Planning/Plan.h, docs/Planning.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Plan.h"
#include "Flags.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "partita/Models/Models.h"
#include "partita/Sharding/TextLimits.h"
#include "partita/Transforms/Interconnect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace partita;
using namespace partita::cli;

namespace {

/// "2.5 GiB" style bytes.
Expected<double> parseBytes(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  static const std::pair<const char *, double> units[] = {
      {"", 1},          {"B", 1},          {"KiB", 1024.0},
      {"MiB", 1 << 20}, {"GiB", 1 << 30},  {"KB", 1e3},
      {"MB", 1e6},      {"GB", 1e9},       {"TiB", 1099511627776.0},
      {"TB", 1e12}};
  for (const auto &[name, scale] : units)
    if (unit == name && end != text.c_str() && value > 0 &&
        std::isfinite(value) && value * scale < 9.2e18)
      return value * scale;
  return Status::error("--memory-per-device must be a positive number of "
                       "bytes below 2^63 (optionally with KiB, MiB, GiB, KB, "
                       "MB, GB), got '" + text + "'");
}

/// The model flags as given, for `partita train`.
std::vector<std::string> modelFlagsOf(const CommandLine &cl) {
  std::vector<std::string> flags;
  for (const std::string &flag : modelValueFlags())
    if (flag != "--batch" && cl.has(flag)) {
      flags.push_back(flag);
      flags.push_back(cl.get(flag));
    }
  for (const std::string &flag : modelSwitchFlags())
    if (cl.on(flag))
      flags.push_back(flag);
  return flags;
}

std::string trainFlags(const CommandLine &cl, const ModelConfig &config,
                       const Candidate &c, int64_t devices,
                       int64_t globalBatch) {
  std::string text = "--model " + config.model;
  for (const std::string &flag : modelFlagsOf(cl))
    text += " " + flag;
  text += " --batch " + std::to_string(globalBatch) + " --devices cpu:" +
          std::to_string(devices) + " --mesh " + c.meshText() + " --rules " +
          c.rules + " --micro-batches " + std::to_string(c.micro) +
          " --remat " + partita::rematName(c.remat).str();
  if (c.context > 1)
    text += " --context-attention " + c.attention;
  if (c.pipe > 1)
    text += " --pp " + std::to_string(c.pipe) + " --schedule " +
            partita::scheduleKindName(c.schedule);
  return text;
}

} // namespace

int partita::cli::planCommand(const CommandLine &cl) {
  if (cl.input != "-")
    return usageError("plan takes no input file (got '" + cl.input +
                      "'); give the model with --model");
  ModelConfig config;
  config.model = cl.get("--model", "gpt");
  if (config.model != "gpt" && config.model != "moe" && config.model != "mlp")
    return usageError("--model must be gpt, moe or mlp, got '" +
                      config.model + "'");
  if (Status status = api::modelConfigFromOptions(cl, config); !status.ok())
    return usageError(status.message());
  std::string devicesText = cl.get("--devices");
  if (devicesText.rfind("cpu:", 0) == 0)
    devicesText = devicesText.substr(4);
  Expected<int64_t> devices =
      api::parseIntegerFlag("--devices", devicesText, 1, 1 << 20);
  if (!devices)
    return usageError(devices.status().message() + " (or cpu:N)");
  if (cl.has("--cluster") && cl.has("--interconnect"))
    return usageError("--cluster and --interconnect exclude each other: "
                      "one names a cluster, the other reads one");
  Expected<Cluster> cluster = cl.has("--cluster")
                                  ? clusterPreset(cl.get("--cluster"))
                                  : readClusterFile(cl.get("--interconnect"));
  if (!cluster)
    return usageError(cluster.status().message());
  double budget = cluster->memoryBytes;
  if (cl.has("--memory-per-device")) {
    Expected<double> bytes = parseBytes(cl.get("--memory-per-device"));
    if (!bytes)
      return usageError(bytes.status().message());
    budget = *bytes;
  }
  long long globalBatch = config.batch, finalists = 0, top = 5;
  // Screening is on by default for deep models: only finalists are
  // compiled at full depth (compiling every layout of an 80-layer model
  // took minutes).
  if (Status status = api::integerOption(cl, "--global-batch", config.batch,
                                         globalBatch, 1, INT32_MAX);
      !status.ok())
    return usageError(status.message());
  if (Status status = api::integerOption(
          cl, "--finalists", defaultFinalists(config), finalists, 0, 100000);
      !status.ok())
    return usageError(status.message());
  if (Status status = api::integerOption(cl, "--top", 5, top, 1, 100000);
      !status.ok())
    return usageError(status.message());

  PlanRequest request;
  request.config = config;
  request.devices = *devices;
  request.cluster = *cluster;
  request.budget = budget;
  request.globalBatch = globalBatch;
  request.finalists = finalists;
  request.clusterSource =
      clusterOrigin(cl.get("--cluster"), cl.get("--interconnect"));
  Expected<PlanResult> plan = searchPlan(request);
  if (!plan) {
    if (!plan.status().message().empty())
      usageError(plan.status().message());
    return 1;
  }
  const Candidate &best = plan->candidates[plan->fits.front()];
  if (cl.on("--emit-flags")) {
    llvm::outs() << trainFlags(cl, config, best, *devices, globalBatch) << "\n";
    return 0;
  }

  printPlan(llvm::outs(), request, *plan,
            cl.on("--explain") ? plan->fits.size() : static_cast<size_t>(top),
            cl.on("--explain"));
  llvm::outs() << "run it: partita train "
               << trainFlags(cl, config, best, *devices, globalBatch) << "\n";
  return 0;
}
