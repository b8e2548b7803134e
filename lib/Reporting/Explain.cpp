//===- Explain.cpp - Where each sharding came from ------------------------===//
//
// Per value: name, location, global shape, sharding in JAX spelling, local
// shape, bytes per device, and where each split came from (the annotation
// and the ops the axes travelled through); then the partitioned program's
// collectives with their reasons (docs/Propagation.md, `partita explain`).
//
//===----------------------------------------------------------------------===//

#include "partita/Reporting/Explain.h"

#include "partita/Analysis/Report.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Reporting/ValueCatalog.h"
#include "partita/Sharding/Layout.h"
#include "partita/Transforms/Interconnect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace partita;

namespace {

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// JAX spelling of the dimensions, plus the partial part in words.
std::string jaxSpelling(const Sharding &sharding) {
  std::string text = dimsSpec(sharding);
  if (sharding.partialKind != PartialKind::None) {
    text += std::string(", partial ") + partialKindName(sharding.partialKind) +
            " over";
    for (const std::string &axis : sharding.partialAxes)
      text += " \"" + axis + "\"";
  }
  return text;
}

std::string field(DictionaryAttr dict, StringRef key) {
  if (!dict)
    return "";
  auto value = dict.getAs<StringAttr>(key);
  return value ? value.str() : "";
}

/// The options propagation priced where an op's tensors disagreed: the
/// report-conflicts remarks, kept by the op's location instead of printed.
class PricedOptions {
public:
  explicit PricedOptions(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          std::string text = diag.str();
          size_t at = text.find(kMarker);
          if (diag.getSeverity() != DiagnosticSeverity::Remark ||
              at == std::string::npos)
            return failure(); // Not ours: the next handler prints it.
          // "shardings disagree; rule R; options by ...: O" -> "R", "O".
          size_t rule = text.find("rule ");
          std::string factors =
              rule == std::string::npos || rule > at
                  ? std::string()
                  : text.substr(rule + 5, text.rfind(';', at) - rule - 5);
          byLocation[diag.getLocation().getAsOpaquePointer()] = {
              factors, text.substr(at + kMarker.size())};
          return success();
        }) {}

  /// The op's factors ("([i, j], [j, k]) -> ([i, k]) {i=8, ...}") and its
  /// options ("{i: "data"} 37.6 us (chosen); {j: "data"} 144.6 us; ...")
  /// for the op at `loc`; empty when it had no choice to make.
  std::pair<std::string, std::string> at(Location loc) const {
    auto it = byLocation.find(loc.getAsOpaquePointer());
    return it == byLocation.end() ? std::pair<std::string, std::string>()
                                  : it->second;
  }

private:
  static constexpr llvm::StringLiteral kMarker =
      "options by estimated reshard time: ";
  ScopedDiagnosticHandler handler;
  std::map<const void *, std::pair<std::string, std::string>> byLocation;
};

class Explainer {
public:
  Explainer(ModuleOp module, const std::vector<ValueEntry> &entries,
            const PricedOptions &priced)
      : module(module), entries(entries), priced(priced) {
    for (const ValueEntry &entry : entries)
      byDescription.emplace(entry.description, &entry);
  }

  void explain(const ValueEntry &entry, llvm::raw_ostream &os);

private:
  ModuleOp module;
  const std::vector<ValueEntry> &entries;
  const PricedOptions &priced;
  std::multimap<std::string, const ValueEntry *> byDescription;

  /// Names of the values the axis travelled through, source first.
  std::vector<std::string> path(const ValueEntry &entry, int dim);
};

std::vector<std::string> Explainer::path(const ValueEntry &start, int dim) {
  std::vector<std::string> names{displayName(start)};
  const ValueEntry *entry = &start;
  Sharding sharding = start.sharding.toSharding();
  if (sharding.dims[dim].axes.empty())
    return names;
  std::string axis = sharding.dims[dim].axes.back();
  for (int hop = 0; hop < 64 && entry->origin; ++hop) {
    if (dim >= static_cast<int>(entry->origin.size()))
      break;
    std::string from =
        field(dyn_cast<DictionaryAttr>(entry->origin[dim]), "from");
    if (from.empty() || byDescription.count(from) != 1)
      break;
    const ValueEntry *next = byDescription.find(from)->second;
    names.push_back(displayName(*next));
    if (!next->sharding)
      break;
    // Continue along the dimension of the previous value that holds the axis.
    Sharding nextSharding = next->sharding.toSharding();
    int nextDim = -1;
    for (int d = 0; d < nextSharding.rank() && nextDim < 0; ++d)
      for (const std::string &a : nextSharding.dims[d].axes)
        if (a == axis)
          nextDim = d;
    if (nextDim < 0)
      break;
    entry = next;
    dim = nextDim;
  }
  return {names.rbegin(), names.rend()};
}

void Explainer::explain(const ValueEntry &entry, llvm::raw_ostream &os) {
  os << displayName(entry);
  if (entry.what != displayName(entry) && !entry.what.empty())
    os << "  (" << entry.what << ")";
  os << "\n  location   " << describeLocation(entry.loc) << "\n";
  os << "  shape      " << entry.type << "\n";
  if (!entry.sharding) {
    os << "  sharding   none (not propagated)\n\n";
    return;
  }
  MeshOp meshOp = lookupMesh(module, entry.sharding.getMesh());
  Sharding sharding = entry.sharding.toSharding();
  os << "  sharding   " << jaxSpelling(sharding) << "   " << entry.sharding
     << "\n";
  if (!meshOp) {
    os << "\n";
    return;
  }
  Mesh mesh = meshOp.getMesh().toMesh();
  std::vector<int64_t> shape(entry.type.getShape().begin(),
                             entry.type.getShape().end());
  std::vector<int64_t> local = localShape(mesh, sharding, shape);
  int64_t elementBytes =
      std::max<int64_t>(1, (entry.type.getElementTypeBitWidth() + 7) / 8);
  int64_t bytes = bytesPerDevice(mesh, sharding, shape, elementBytes);
  os << "  local      " << shapeText(local) << " "
     << entry.type.getElementType() << ", " << formatBytes(bytes)
     << " per device";
  if (!isEvenlySharded(mesh, sharding, shape))
    os << " (padded: uneven split)";
  os << "\n";
  std::vector<std::string> replicated;
  std::vector<std::string> used = sharding.dimAxes();
  used.insert(used.end(), sharding.partialAxes.begin(),
              sharding.partialAxes.end());
  for (const MeshAxis &axis : mesh.axes())
    if (std::find(used.begin(), used.end(), axis.name) == used.end() &&
        axis.size > 1)
      replicated.push_back(axis.name);
  if (!replicated.empty()) {
    os << "  replicated over";
    for (const std::string &axis : replicated)
      os << " \"" << axis << "\"";
    os << "\n";
  }
  if (auto manual = entry.value
                        ? entry.value.getDefiningOp<ManualComputationOp>()
                        : ManualComputationOp()) {
    // Per-device code: the models' attention on a split sequence is one
    // (docs/LongContext.md), named by its form (attn.ring, attn.ulysses).
    os << "  region     a manual computation over";
    for (Attribute axis : manual.getManualAxes())
      os << " \"" << cast<StringAttr>(axis).getValue() << "\"";
    os << ": its body runs on each device's block and its collectives over "
          "those axes are written in it\n";
  }
  if (sharding.partialKind != PartialKind::None)
    os << "  partial    each device holds "
       << (sharding.partialKind == PartialKind::Sum ? "an addend"
                                                    : "a candidate")
       << "; the value is the " << partialKindName(sharding.partialKind)
       << " over its group\n";

  bool anyOrigin = false;
  for (int d = 0; d < sharding.rank(); ++d) {
    if (sharding.dims[d].axes.empty())
      continue;
    os << "  dim " << d << "      split over";
    for (const std::string &axis : sharding.dims[d].axes)
      os << " \"" << axis << "\"";
    DictionaryAttr origin;
    if (entry.origin && d < static_cast<int>(entry.origin.size()))
      origin = dyn_cast<DictionaryAttr>(entry.origin[d]);
    if (!origin || origin.empty()) {
      os << ": annotated here\n";
      continue;
    }
    anyOrigin = true;
    std::string source = field(origin, "source");
    os << ": from "
       << (source.empty() ? "a reshard to make a partial value whole"
                          : "the annotation of " + source)
       << "\n             via " << field(origin, "via") << "\n";
    std::vector<std::string> hops = path(entry, d);
    if (hops.size() > 1) {
      os << "             path";
      for (size_t i = 0; i < hops.size(); ++i)
        os << (i ? " -> " : " ") << hops[i];
      os << "\n";
    }
  }
  if (!anyOrigin && sharding.dimAxes().empty() &&
      sharding.partialKind == PartialKind::None)
    os << "  why        no annotation reaches it: replicated\n";
  // Where the op computing it had to choose: every option and the
  // estimated time of all the reshards it implies (operands moved, the
  // result delivered, a partial result made whole downstream).
  if (entry.value && entry.value.getDefiningOp()) {
    auto [factors, options] = priced.at(entry.value.getDefiningOp()->getLoc());
    if (!options.empty())
      os << "  priced     " << options << "\n"
         << "             (factors: " << factors << ")\n";
  }
  os << "\n";
}

} // namespace

Status partita::explainModule(Session &session, ModuleOp module,
                              const PipelineOptions &pipeline,
                              const std::optional<std::string> &value,
                              llvm::raw_ostream &os) {
  PricedOptions priced(session.context);
  PipelineOptions options = pipeline;
  options.reportConflicts = true;
  if (!runPipeline(session, module, options))
    return Status::error("");
  std::vector<ValueEntry> entries = collectValues(module);
  Explainer explainer(module, entries, priced);
  if (value) {
    const ValueEntry *entry = findValue(entries, *value);
    if (!entry)
      return Status::error("");
    explainer.explain(*entry, os);
    return Status::success();
  }
  for (const ValueEntry &entry : entries)
    explainer.explain(entry, os);

  // The collectives of the partitioned program.
  OwningOpRef<ModuleOp> partitioned = module.clone();
  PipelineOptions partition = options;
  partition.reportConflicts = false;
  partition.mesh.clear();
  partition.stage = Stage::Partitioned;
  if (!runPipeline(session, *partitioned, partition))
    return Status::error("");
  Report report = analyzeModule(*partitioned, interconnectOf(partition));
  os << "collectives: " << report.totalCollectives << " per step, "
     << formatBytes(static_cast<int64_t>(report.totalBytesPerDevice))
     << " per device, " << llvm::format("%.3f", report.estTimeUs)
     << " us estimated\n";
  for (const CollectiveRecord &c : report.collectives) {
    os << "  " << c.kind << " over";
    for (const std::string &axis : c.meshAxes)
      os << " \"" << axis << "\"";
    os << " " << shapeText(c.inShape) << " -> " << shapeText(c.outShape) << " "
       << c.dtype << ": " << formatBytes(static_cast<int64_t>(c.bytesPerDevice))
       << " per device";
    if (c.count > 1)
      os << " x " << c.count;
    os << ", " << llvm::format("%.3f", c.timeUs) << " us at " << c.loc << "\n";
    if (!c.reason.empty())
      os << "    " << c.reason << "\n";
  }
  return Status::success();
}
