//===- Partita.h - Partita as a library -------------------------*- C++ -*-===//
//
// The entry points for a compiler that embeds Partita: register the dialect
// and passes, build the standard pipeline into a pass manager, or compile a
// module in one call and get the report back. Nothing here aborts on bad
// input: errors come back as a Status carrying the diagnostics, each with
// its location.
//
//   mlir::DialectRegistry registry;
//   partita::registerAllDialects(registry);
//   mlir::MLIRContext context(registry);
//   ... parse or build a module with partita.mesh and shardings ...
//   partita::CompileOptions options;
//   options.mesh = "data=4,model=2";
//   partita::Expected<partita::Report> report =
//       partita::compile(*module, options);
//   if (!report) { llvm::errs() << report.status().message(); return 1; }
//   llvm::outs() << report->toJson();   // the JSON `partita compile
//                                       // --report` writes
//
// docs/Embedding.md describes the API, the pipeline, the install and the
// consumer example (test/install/consumer).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PARTITA_H
#define PARTITA_PARTITA_H

#include "partita/Analysis/Report.h"
#include "partita/Registration.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include <string>

namespace mlir {
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace partita {

/// What `compile` does: the pipeline's options (PipelineOptions.def lists
/// them: mesh override, train step, rules, interconnect file, strictness,
/// the last stage). The defaults run the whole pipeline on the module's own
/// mesh and shardings.
using CompileOptions = PipelineOptions;

/// Verifies `module`, runs the pipeline up to `options.stage` on it in
/// place, and returns the report of the result (the same struct and JSON as
/// `partita compile --report`). On bad input — an invalid module, an unknown
/// mesh axis, an unreadable interconnect or rules file, a dimension the
/// partitioner cannot split — returns an error whose message holds every
/// diagnostic as "file:line:col: error: message" lines; the module may then
/// be partly transformed. Diagnostics of a successful run (warnings, remarks)
/// are not printed; the caller's handlers, if any, still see them.
Expected<Report> compile(mlir::ModuleOp module, const CompileOptions &options);

} // namespace partita

#endif // PARTITA_PARTITA_H
