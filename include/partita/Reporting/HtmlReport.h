//===- HtmlReport.h - One self-contained page about a program ---*- C++ -*-===//
//
// `partita compile ... --html report.html` (docs/Report.md): the program as
// a graph of ops with each tensor's sharding, each sharding as blocks per
// device, every collective with its kind, axes, bytes, estimated time and
// reason, and the bytes alive per device by role over the program. One
// file, no network: the data is embedded as JSON, the page draws it.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_REPORTING_HTMLREPORT_H
#define PARTITA_REPORTING_HTMLREPORT_H

#include "partita/Driver/Session.h"

#include "partita/Sharding/Cost.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace partita {

/// What the page shows: `global` is the program with every sharding
/// (propagated, before partitioning), `partitioned` the per-device program
/// the collectives and memory come from; `title` names it; `schedule`, when
/// not empty, is a pipeline schedule drawn as text.
struct HtmlReportInput {
  mlir::ModuleOp global;
  mlir::ModuleOp partitioned;
  Interconnect interconnect;
  std::string title;
  std::string schedule;
};

/// The page's HTML.
std::string renderHtmlReport(const HtmlReportInput &input);

/// `compile --html FILE`: `global` (a copy of the input) taken through
/// propagation, `compiled` (the input compiled with `options`, or through
/// partitioning when `options` stopped earlier) for the collectives and
/// memory, the page titled `title` written to `path`. `schedule`: a
/// pipeline's stages and schedule as text, or empty. False after printing
/// an error.
bool writeHtmlFile(Session &session, const std::string &title,
                   const std::string &path, const PipelineOptions &options,
                   mlir::ModuleOp compiled, mlir::ModuleOp global,
                   const std::string &schedule);

} // namespace partita

#endif // PARTITA_REPORTING_HTMLREPORT_H
