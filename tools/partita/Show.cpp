//===- Show.cpp - partita show --------------------------------------------===//
//
// A picture of which device holds which block of a tensor, in the spirit of
// jax.debug.visualize_array_sharding: the last two dimensions as a grid of
// blocks, one grid per block of the leading dimensions. Colours only on a
// terminal.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "Flags.h"
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

constexpr const char *kShowUsage =
    R"(Usage: partita show [in.mlir|-] --value NAME [options]

Runs propagation and draws which device holds which block of one tensor:
the last two dimensions as a grid (one grid per block of the leading
dimensions), each cell listing the devices that hold that block. Replicated
and partial axes are named above the picture.

Options:
  --value <name>         the tensor (NameLoc name, argN, resultN, ...)
  --color <when>         auto (default: only on a terminal), always, never

  partita show --schedule gpipe|1f1b|interleaved|zb --pp P
               --micro-batches M [--virtual-stages V] [--width W]

draws a pipeline schedule instead: one row per rank, F forward, B backward
(input gradient when split), W weight gradient, . idle, with equal stages
(a forward takes 1, a backward 2; zero-bubble splits it 1 + 1), and the
bubble and micro-batches held per rank (docs/Pipeline.md).
)" PARTITA_PIPELINE_FLAGS_USAGE R"(
Examples:
  partita show docs/examples/megatron-mlp.mlir --value mlp.gelu
  partita show --schedule 1f1b --pp 4 --micro-batches 8
)";

std::string padCenter(const std::string &text, size_t width) {
  size_t left = (width - std::min(width, text.size())) / 2;
  return std::string(left, ' ') + text +
         std::string(width - std::min(width, text.size()) - left, ' ');
}

} // namespace

namespace {

class Picture {
public:
  Picture(const Mesh &mesh, const Sharding &sharding,
          std::vector<int64_t> shape, bool color)
      : mesh(mesh), sharding(sharding), shape(std::move(shape)), color(color) {
    for (int d = 0; d < this->sharding.rank(); ++d) {
      counts.push_back(numShards(mesh, this->sharding.dims[d]));
      chunks.push_back(counts.back() > 0
                           ? (this->shape[d] + counts.back() - 1) /
                                 counts.back()
                           : this->shape[d]);
    }
  }

  void draw(llvm::raw_ostream &os) {
    int rank = static_cast<int>(shape.size());
    if (rank == 0) {
      grid({}, os);
      return;
    }
    int leading = std::max(0, rank - 2);
    std::vector<int64_t> block(leading, 0);
    while (true) {
      if (leading > 0) {
        os << "block";
        for (int d = 0; d < leading; ++d) {
          int64_t begin = block[d] * chunks[d];
          os << (d ? ", " : " ") << "dim " << d << " ["
             << rangeText(std::min(begin, shape[d]),
                          std::min(begin + chunks[d], shape[d]))
             << "]";
        }
        os << ":\n";
      }
      grid(block, os);
      int d = leading - 1;
      while (d >= 0 && ++block[d] == counts[d])
        block[d--] = 0;
      if (d < 0)
        break;
      os << "\n";
    }
  }

private:
  const Mesh &mesh;
  Sharding sharding;
  std::vector<int64_t> shape;
  bool color;
  std::vector<int64_t> counts, chunks;
  std::map<std::string, int> colours;

  void grid(const std::vector<int64_t> &leadingBlock, llvm::raw_ostream &os) {
    BlockGrid blocks = blockGrid(mesh, sharding, shape, leadingBlock);
    const std::vector<std::string> &rowLabels = blocks.rowLabels;
    const std::vector<std::string> &colLabels = blocks.colLabels;
    const std::vector<std::vector<std::string>> &cells = blocks.cells;
    int64_t rows = static_cast<int64_t>(cells.size());
    int64_t cols = static_cast<int64_t>(cells.front().size());
    int colDim = shape.empty() ? -1 : static_cast<int>(shape.size()) - 1;
    size_t width = 0, labelWidth = 0;
    for (const std::string &label : rowLabels)
      labelWidth = std::max(labelWidth, label.size());
    for (const std::string &label : colLabels)
      width = std::max(width, label.size());
    for (const std::vector<std::string> &row : cells)
      for (const std::string &cell : row)
        width = std::max(width, cell.size());
    width += 2;
    std::string indent(labelWidth + 1, ' ');
    std::string rule = indent + "+";
    for (int64_t j = 0; j < cols; ++j)
      rule += std::string(width, '-') + "+";
    if (colDim >= 0) {
      os << indent << " ";
      for (int64_t j = 0; j < cols; ++j)
        os << padCenter(colLabels[j], width) << " ";
      os << "\n";
    }
    os << rule << "\n";
    for (int64_t i = 0; i < rows; ++i) {
      os << rowLabels[i]
         << std::string(labelWidth - rowLabels[i].size() + 1, ' ') << "|";
      for (int64_t j = 0; j < cols; ++j) {
        std::string text = padCenter(cells[i][j], width);
        if (color) {
          auto [it, inserted] =
              colours.emplace(cells[i][j], static_cast<int>(colours.size()));
          // Light backgrounds from the 256-colour palette, black text.
          static const int palette[] = {153, 194, 223, 217, 189, 230, 159, 225};
          os << "\033[30;48;5;" << palette[it->second % 8] << "m" << text
             << "\033[0m|";
        } else {
          os << text << "|";
        }
      }
      os << "\n" << rule << "\n";
    }
  }
};

} // namespace

namespace {

/// `partita show --schedule`: a schedule simulated with equal stages.
int showSchedule(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  if (!parseCommandLine(args,
                        {"--schedule", "--pp", "--micro-batches",
                         "--virtual-stages", "--width"},
                        {}, cl, exitCode))
    return exitCode;
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
    Expected<int64_t> parsed = tools::parseIntegerFlag(
        flag, cl.get(flag), 1, std::string(flag) == "--width" ? 10000 : 4096);
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
          startCommand(args, {"--value", "--color"}, kShowUsage,
                       Stage::Propagated, cl, options))
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
  std::vector<std::string> used = sharding.dimAxes();
  used.insert(used.end(), sharding.partialAxes.begin(),
              sharding.partialAxes.end());
  for (const MeshAxis &axis : mesh.axes())
    if (axis.size > 1 &&
        std::find(used.begin(), used.end(), axis.name) == used.end())
      os << "replicated over \"" << axis.name << "\" (" << axis.size
         << " devices hold each block)\n";
  if (sharding.partialKind != PartialKind::None) {
    os << "partial " << partialKindName(sharding.partialKind) << " over";
    for (const std::string &axis : sharding.partialAxes)
      os << " \"" << axis << "\"";
    os << ": the devices of a cell hold different "
       << (sharding.partialKind == PartialKind::Sum ? "addends" : "candidates")
       << " of that block\n";
  }
  os << "\n";
  Picture(mesh, sharding, shape, color).draw(os);
  return 0;
}
