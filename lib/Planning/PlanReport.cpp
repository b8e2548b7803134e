//===- PlanReport.cpp - partita plan's answer, printed --------------------===//
//
// The model and the cluster the plan is for, what the search did with its
// layouts, the fastest that fit (every layout and why it lost, when
// asked), and the best one's memory by role (docs/Planning.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Plan.h"

#include "partita/Driver/Session.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace partita;

namespace {

void printRow(llvm::raw_ostream &os, size_t rank, const Candidate &c,
              const std::string &why) {
  os << llvm::format("%-4s %-22s %-8s %5lld %-9s ",
                     rank ? std::to_string(rank).c_str() : "-",
                     c.meshText().c_str(), c.rulesText().c_str(),
                     static_cast<long long>(c.micro),
                     partita::rematName(c.remat).str().c_str());
  if (c.compiled) {
    os << llvm::format("%9.3f %9.3f %9.3f %11s", c.stepSeconds() * 1e3,
                       c.computeSeconds * 1e3, c.commSeconds * 1e3,
                       formatBytes(c.memory).c_str());
  } else {
    os << llvm::format("%9s %9s %9s %11s", "-", "-", "-", "-");
  }
  if (!why.empty())
    os << "  " << why;
  os << "\n";
}

} // namespace

void partita::printPlan(llvm::raw_ostream &os, const PlanRequest &request,
                        const PlanResult &plan, size_t top, bool explain) {
  const ModelConfig &config = request.config;
  const Cluster *cluster = &request.cluster;
  int64_t devices = request.devices, globalBatch = request.globalBatch,
          finalists = request.finalists;
  double budget = request.budget;
  const std::vector<Candidate> &candidates = plan.candidates;
  std::vector<const Candidate *> fits, over;
  for (size_t i : plan.fits)
    fits.push_back(&candidates[i]);
  for (size_t i : plan.over)
    over.push_back(&candidates[i]);
  double parameters = plan.parameters;
  const ScreenCounts &screenCounts = plan.screen;
  int64_t compiledCount = plan.compiled, pruned = plan.pruned,
          failed = plan.failed;
  const Candidate &best = *fits.front();
  os << "plan: " << config.model << ", " << llvm::format("%.0f", parameters)
     << " parameters, global batch " << globalBatch << ", " << devices
     << " devices, AdamW\n";
  os << (request.clusterSource.empty() ? std::string("cluster: ")
                                       : request.clusterSource);
  if (const std::optional<Calibration> &measured = cluster->calibration)
    os << "calibrated" << (measured->devices.empty() ? "" : " on ")
       << measured->devices << " ("
       << llvm::format("%.3g us per instruction, %.3g einsum FLOP/s, %.3g "
                       "elements/s per device, ",
                       measured->instructionUs, measured->einsumFlopsPerSecond,
                       measured->elementsPerSecond)
       << measured->collectives.size() << " collective fits), ";
  else
    os << llvm::format("%.3g", cluster->flopsPerSecond)
       << " FLOP/s per device, ";
  os << (cluster->devicesPerNode > 0 ? cluster->devicesPerNode : devices)
     << " per node, links "
     << llvm::format("%g GB/s %g us", cluster->intra.bandwidthGBps,
                     cluster->intra.latencyUs)
     << " inside a node, "
     << llvm::format("%g GB/s %g us", cluster->inter.bandwidthGBps,
                     cluster->inter.latencyUs)
     << " across; memory "
     << (budget > 0 ? formatBytes(budget) + " per device" : "unlimited")
     << "\n";
  size_t left = plan.notCompiled();
  os << "searched " << candidates.size() << " layouts: ";
  if (screenCounts.screened)
    os << screenCounts.screened << " screened at " << kScreenLayers << " and "
       << kScreenLayers + 1 << " layers (pipelined: " << kScreenStageLayers
       << " and " << kScreenStageLayers + 1 << " per stage; "
       << screenCounts.screenedOut << " over memory), ";
  if (screenCounts.leftOut)
    os << screenCounts.leftOut
       << " pipelined left out (their group's leanest layout over memory, "
          "or its group not explored), ";
  os << compiledCount << " compiled, " << pruned
     << " over memory by their model state alone, " << failed
     << " failed to compile";
  if (left)
    os << ", " << left << " not compiled (estimated slower than " << finalists
       << " that fit)";
  os << "; " << fits.size() << " fit";
  os << "\n";
  os << llvm::format("%-4s %-22s %-8s %5s %-9s %9s %9s %9s %11s\n", "rank",
                     "mesh", "rules", "micro", "remat", "step ms", "compute",
                     "comm", "memory");
  double bestStep = best.stepSeconds();
  auto slower = [&](const Candidate &c) {
    return llvm::formatv("{0:F1}% slower than #1",
                         (c.stepSeconds() / bestStep - 1) * 100)
        .str();
  };
  size_t shown = std::min(fits.size(), top);
  for (size_t r = 0; r < shown; ++r)
    printRow(os, r + 1, *fits[r], r == 0 ? "" : slower(*fits[r]));
  if (explain) {
    for (const Candidate *c : over)
      printRow(os, 0, *c,
               "over budget: needs " + formatBytes(c->memory) + " per device");
    for (const Candidate &c : candidates)
      if (!c.compiled)
        printRow(os, 0, c, c.failure);
  }
  os << "best: " << best.meshText() << " " << best.rulesText() << ", "
     << best.micro << " micro-batch" << (best.micro > 1 ? "es" : "")
     << ", remat " << partita::rematName(best.remat) << ": memory per device "
     << formatBytes(best.memory) << " (" << llvm::format("%.0f", best.memory)
     << " bytes; at the peak: ";
  bool first = true;
  for (const auto &[role, bytes] : best.byRole) {
    os << (first ? "" : ", ") << role << " " << formatBytes(bytes);
    first = false;
  }
  os << "), " << best.collectives << " collectives per step";
  if (best.pipe > 1)
    os << llvm::format("; %s idle %.1f%% of the step (simulated)",
                       partita::scheduleKindName(best.schedule),
                       best.bubble * 100);
  os << "\n";
}
