//===- Show.cpp - partita show --------------------------------------------===//
//
// The flags in; the picture of a tensor's blocks is the reporting layer's
// (partita/Reporting/BlockGrid.h). Colours only on a terminal.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "Flags.h"
#include "partita/API/CommandOptions.h"
#include "partita/Reporting/BlockGrid.h"
#include "partita/Reporting/ValueCatalog.h"

#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Sharding/Layout.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <unistd.h>

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {


} // namespace

namespace {

/// `partita show --schedule`: a schedule simulated with equal stages.
int showSchedule(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  if (std::optional<int> done = parseCommand(args, "show-schedule", cl, "show"))
    return *done;
  std::optional<ScheduleKind> kind = parseScheduleKind(cl.get("--schedule"));
  if (!kind)
    return usageError("unknown --schedule '" + cl.get("--schedule") +
                      "' (expected " + availableSchedules() + ")");
  // Ranks, micro-batches and stages past 4096, or a chart wider than 10,000
  // columns, are typos (a width of 2^64 was clamped to one cell).
  auto number = [&](const char *flag, long fallback, long &value) {
    if (!cl.has(flag)) {
      value = fallback;
      return true;
    }
    Expected<int64_t> parsed =
        api::parseIntegerFlag(flag, cl.get(flag), 1,
                              std::string(flag) == "--width"            ? 10000
                              : std::string(flag) == "--virtual-stages" ? 1024
                                                                        : 4096);
    if (!parsed) {
      exitCode = usageError(parsed.status().message());
      return false;
    }
    value = static_cast<long>(*parsed);
    return true;
  };
  long ranks = 0, micro = 0, virtualStages = 0, width = 0;
  if (!number("--pp", 4, ranks) || !number("--micro-batches", 8, micro) ||
      !number("--virtual-stages",
              *kind == ScheduleKind::Interleaved ? 2 : 1, virtualStages) ||
      !number("--width", 100, width))
    return exitCode;
  Expected<PipelineSchedule> schedule =
      buildSchedule(*kind, static_cast<int>(ranks), static_cast<int>(micro),
                    static_cast<int>(virtualStages));
  if (!schedule)
    return usageError(schedule.status().message());
  PipeCosts cost;
  cost.forward = 1.0 / virtualStages;
  cost.backward = (schedule->splitBackward ? 1.0 : 2.0) / virtualStages;
  cost.weightGrad = schedule->splitBackward ? 1.0 / virtualStages : 0;
  Expected<ScheduleTimeline> timeline = simulateSchedule(*schedule, {cost});
  if (!timeline)
    return usageError(timeline.status().message());
  llvm::outs() << scheduleKindName(*kind) << " on " << ranks << " ranks, "
               << micro << " micro-batches";
  if (virtualStages > 1)
    llvm::outs() << ", " << virtualStages << " stages per rank";
  llvm::outs() << ": bubble "
               << llvm::format("%.4f", timeline->bubbleFraction)
               << ", micro-batches held at peak per rank:";
  for (int held : timeline->peakInFlight)
    llvm::outs() << " " << held;
  llvm::outs() << "\n"
               << renderTimeline(*timeline, static_cast<int>(width));
  return 0;
}

} // namespace

int partita::cli::showCommand(const std::vector<std::string> &args) {
  if (std::find(args.begin(), args.end(), "--schedule") != args.end())
    return showSchedule(args);
  CommandLine cl;
  PipelineOptions options;
  if (std::optional<int> done =
          startCommand(args, "show", Stage::Propagated, cl, options))
    return *done;
  if (!cl.has("--value"))
    return usageError("show needs --value NAME (see 'partita show --help')");
  std::string when = cl.get("--color", "auto");
  if (when != "auto" && when != "always" && when != "never")
    return usageError("unknown --color '" + when +
                      "'; expected auto, always or never");
  bool color = when == "always" || (when == "auto" && isatty(STDOUT_FILENO));

  Session session;
  OwningOpRef<ModuleOp> module = loadModule(session, cl.input);
  if (!module || !runPipeline(session, *module, options))
    return 1;
  std::vector<ValueEntry> entries = collectValues(*module);
  const ValueEntry *entry = findValue(entries, cl.get("--value"));
  if (!entry)
    return 1;
  if (!entry->sharding)
    return usageError("'" + cl.get("--value") +
                      "' has no sharding (nothing to draw)");
  MeshOp meshOp = lookupMesh(*module, entry->sharding.getMesh());
  if (!meshOp)
    return usageError("mesh of '" + cl.get("--value") + "' not found");
  Mesh mesh = meshOp.getMesh().toMesh();
  Sharding sharding = entry->sharding.toSharding();
  std::vector<int64_t> shape(entry->type.getShape().begin(),
                             entry->type.getShape().end());

  llvm::raw_ostream &os = llvm::outs();
  os << displayName(*entry) << ": " << entry->type << "  "
     << dimsSpec(sharding) << "  on mesh " << mesh.toString()
     << "\n";
  drawSharding(os, mesh, sharding, shape, color);
  return 0;
}
