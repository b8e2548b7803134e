//===- HtmlReport.cpp - One self-contained page about a program ----------===//
//
// The data (values with their shardings and block grids, the ops of each
// public function, the report, memory by role per program point) goes into
// the page as JSON; the page's script draws the graph, the tables and the
// memory chart with the DOM and SVG. docs/Report.md describes the page.
//
//===----------------------------------------------------------------------===//

#include "partita/Reporting/HtmlReport.h"
#include "partita/Reporting/BlockGrid.h"
#include "partita/Reporting/ValueCatalog.h"

#include "partita/Transforms/Interconnect.h"

#include "partita/Analysis/Report.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Sharding/Layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace partita;

namespace {

/// Devices and grid cells beyond which a value's blocks are not drawn.
constexpr int64_t kMaxGridDevices = 1024;
constexpr int64_t kMaxGridCells = 256;
/// Program points the memory chart keeps (the largest per bucket).
constexpr size_t kMaxMemoryPoints = 1200;

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// One value: its names, type and, when sharded, the sharding as JAX
/// spells it, its local shape and the devices holding each block.
void writeValue(llvm::json::OStream &json, ModuleOp module,
                const ValueEntry &entry) {
  json.object([&] {
    json.attribute("name", displayName(entry));
    json.attribute("what", entry.what);
    json.attribute("type", typeText(entry.type));
    if (!entry.sharding)
      return;
    std::string attrText;
    llvm::raw_string_ostream attrOs(attrText);
    mlir::Attribute(entry.sharding).print(attrOs);
    json.attribute("sharding", attrText);
    MeshOp meshOp = lookupMesh(module, entry.sharding.getMesh());
    if (!meshOp)
      return;
    Mesh mesh = meshOp.getMesh().toMesh();
    Sharding sharding = entry.sharding.toSharding();
    std::vector<int64_t> shape(entry.type.getShape().begin(),
                               entry.type.getShape().end());
    json.attribute("spec", dimsSpec(sharding));
    json.attribute("mesh", mesh.toString());
    std::vector<int64_t> local;
    bool leadingSplit = false;
    for (int d = 0; d < sharding.rank() && d < static_cast<int>(shape.size());
         ++d) {
      int64_t shards = numShards(mesh, sharding.dims[d]);
      local.push_back(shards > 0 ? (shape[d] + shards - 1) / shards : 0);
      leadingSplit |= shards > 1 && d + 2 < static_cast<int>(shape.size());
    }
    json.attribute("local", shapeText(local));
    std::vector<std::string> used = sharding.dimAxes();
    used.insert(used.end(), sharding.partialAxes.begin(),
                sharding.partialAxes.end());
    json.attributeArray("replicated", [&] {
      for (const MeshAxis &axis : mesh.axes())
        if (axis.size > 1 &&
            std::find(used.begin(), used.end(), axis.name) == used.end())
          json.value(axis.name);
    });
    if (sharding.partialKind != PartialKind::None) {
      std::string partial = partialKindName(sharding.partialKind);
      partial += " over";
      for (const std::string &axis : sharding.partialAxes)
        partial += " " + axis;
      json.attribute("partial", partial);
    }
    int64_t cells = 1;
    for (size_t d = shape.size() >= 2 ? shape.size() - 2 : 0;
         d < shape.size() && d < local.size(); ++d)
      cells *= numShards(mesh, sharding.dims[d]);
    if (mesh.numDevices() > kMaxGridDevices || cells > kMaxGridCells)
      return;
    BlockGrid grid = blockGrid(mesh, sharding, shape, {});
    json.attribute("leading_split", leadingSplit);
    json.attributeObject("grid", [&] {
      json.attributeArray("rows", [&] {
        for (const std::string &label : grid.rowLabels)
          json.value(label);
      });
      json.attributeArray("cols", [&] {
        for (const std::string &label : grid.colLabels)
          json.value(label);
      });
      json.attributeArray("cells", [&] {
        for (const std::vector<std::string> &row : grid.cells)
          json.array([&] {
            for (const std::string &cell : row)
              json.value(cell);
          });
      });
    });
  });
}

/// The ops of every function (top level; an op with regions is one node)
/// with the values they read and define, as indices into `values`.
void writeOps(llvm::json::OStream &json, ModuleOp module,
              const llvm::DenseMap<Value, size_t> &index) {
  auto ids = [&](auto range) {
    json.array([&] {
      for (Value value : range) {
        auto it = index.find(value);
        if (it != index.end())
          json.value(static_cast<int64_t>(it->second));
        else
          json.value(nullptr);
      }
    });
  };
  json.attributeArray("functions", [&] {
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      json.object([&] {
        json.attribute("name", "@" + function.getSymName().str());
        json.attributeBegin("args");
        ids(function.getArguments());
        json.attributeEnd();
        json.attributeArray("ops", [&] {
          for (Operation &op : function.getBody().front()) {
            json.object([&] {
              json.attribute("op", op.getName().getStringRef().str());
              json.attribute("loc", describeLocation(op.getLoc()));
              json.attributeBegin("operands");
              ids(op.getOperands());
              json.attributeEnd();
              json.attributeBegin("results");
              ids(op.getResults());
              json.attributeEnd();
            });
          }
        });
      });
    }
  });
}

/// Bytes alive per device by role over the program, at most
/// kMaxMemoryPoints points (each the largest total of its bucket).
void writeMemory(llvm::json::OStream &json, const Report &report) {
  const auto &series = report.liveBytesByRole;
  size_t step = std::max<size_t>(1, (series.size() + kMaxMemoryPoints - 1) /
                                        kMaxMemoryPoints);
  json.attributeObject("memory", [&] {
    json.attributeArray("roles", [&] {
      for (const char *role : {"param", "grad", "opt_state", "activation"})
        json.value(role);
    });
    json.attribute("points", static_cast<int64_t>(series.size()));
    json.attribute("step", static_cast<int64_t>(step));
    json.attribute("peak", report.peakBytesPerDevice);
    json.attributeArray("series", [&] {
      for (size_t begin = 0; begin < series.size(); begin += step) {
        size_t best = begin;
        auto total = [&](size_t i) {
          int64_t sum = 0;
          for (int64_t bytes : series[i])
            sum += bytes;
          return sum;
        };
        for (size_t i = begin; i < std::min(series.size(), begin + step); ++i)
          if (total(i) > total(best))
            best = i;
        json.array([&] {
          for (int64_t bytes : series[best])
            json.value(bytes);
        });
      }
    });
  });
}

} // namespace

namespace partita {
/// The page's style and script, from lib/Reporting/page/ (generated
/// ReportPage.cpp, lib/Reporting/EmbedPage.cmake). The script reads the
/// JSON in #partita-data, draws every section, then sets body[data-ready]
/// (or body[data-error] with the message when drawing failed), which the
/// headless-browser test reads; text from the program is always set as
/// text, never parsed as HTML.
extern const char *const kReportPageStyle;
extern const char *const kReportPageScript;
} // namespace partita

std::string partita::renderHtmlReport(const HtmlReportInput &input) {
  Report report = analyzeModule(input.partitioned, input.interconnect,
                                /*memoryOverProgram=*/true);
  std::vector<ValueEntry> entries = collectValues(input.global);
  llvm::DenseMap<Value, size_t> index;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].value)
      index.try_emplace(entries[i].value, i);

  std::string data;
  llvm::raw_string_ostream os(data);
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("title", input.title);
    json.attributeBegin("report");
    llvm::Expected<llvm::json::Value> parsed =
        llvm::json::parse(report.toJson());
    if (parsed) {
      json.value(std::move(*parsed));
    } else {
      llvm::consumeError(parsed.takeError());
      json.value(nullptr);
    }
    json.attributeEnd();
    json.attributeArray("values", [&] {
      for (const ValueEntry &entry : entries)
        writeValue(json, input.global, entry);
    });
    writeOps(json, input.global, index);
    writeMemory(json, report);
    json.attribute("schedule", input.schedule);
  });
  // Inside <script>, "</" would end the element: every '<' (only ever
  // inside a JSON string) is written as its escape.
  std::string escaped;
  escaped.reserve(data.size());
  for (char c : data)
    escaped += c == '<' ? std::string("\\u003c") : std::string(1, c);
  std::string title;
  for (char c : input.title)
    title += c == '<' ? "&lt;" : c == '&' ? "&amp;" : std::string(1, c);
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<style>\n";
  page += kReportPageStyle;
  page += "</style>\n";
  page += "<title>Partita report: " + title + "</title>\n</head>\n<body>\n";
  page += "<script type=\"application/json\" id=\"partita-data\">";
  page += escaped;
  page += "</script>\n<script>\n\n";
  page += kReportPageScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

bool partita::writeHtmlFile(Session &session, const std::string &title,
                            const std::string &path,
                            const PipelineOptions &options,
                            mlir::ModuleOp compiled, mlir::ModuleOp global,
                            const std::string &schedule) {
  HtmlReportInput input;
  PipelineOptions resolved = options;
  if (Status status = resolveInterconnect(resolved); !status) {
    session.errors << "error: " << status.message() << "\n";
    return false;
  }
  input.interconnect = interconnectOf(resolved);
  PipelineOptions propagate = options;
  propagate.stage = Stage::Propagated;
  {
    // The compile above reported every problem of the input already.
    mlir::ScopedDiagnosticHandler quiet(
        &session.context, [](mlir::Diagnostic &) { return mlir::success(); });
    input.global = runPipeline(session, global, propagate) ? global : compiled;
  }
  // The collectives and memory of the partitioned program (the global one
  // when the compile stopped before partitioning).
  mlir::OwningOpRef<mlir::ModuleOp> partitioned;
  if (options.stage == Stage::Partitioned) {
    input.partitioned = compiled;
  } else {
    partitioned = compiled.clone();
    PipelineOptions full = options;
    full.stage = Stage::Partitioned;
    mlir::ScopedDiagnosticHandler quiet(
        &session.context, [](mlir::Diagnostic &) { return mlir::success(); });
    input.partitioned =
        runPipeline(session, *partitioned, full) ? *partitioned : compiled;
  }
  input.title = title;
  input.schedule = schedule;
  return writeOutputFile(
      path, [&](llvm::raw_ostream &os) { os << renderHtmlReport(input); });
}
