//===- Compile.h - partita compile, over a request --------------*- C++ -*-===//
//
// The commands as functions over option structs: `partita compile` once its
// flags are parsed (the other commands' are in the layers they belong to:
// partita/Driver/Run.h, partita/Planning/Plan.h, partita/Planning/
// Calibrate.h, partita/Reporting/Explain.h, partita/Trainer/Trainer.h).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_API_COMPILE_H
#define PARTITA_API_COMPILE_H

#include "partita/Driver/Session.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir {
class TimingScope;
} // namespace mlir

namespace partita {

/// What `partita compile` writes; empty paths: not written.
struct CompileRequest {
  /// The module at its stage, or with `executable` the Executable file
  /// ("-": standard output, not for an Executable).
  std::string output = "-";
  bool executable = false;
  /// Chains of elementwise ops fused in the Executable.
  bool fusion = true;
  /// The report (JSON) and the HTML page, titled `title`.
  std::string reportPath, htmlPath, title;
};

/// Runs the pipeline on `module` with `options` (each pass timed under
/// `timing`) and writes what `request` asks for. An empty message after
/// the diagnostics were printed.
Status compileAndWrite(Session &session, mlir::ModuleOp module,
                       const PipelineOptions &options,
                       const CompileRequest &request,
                       mlir::TimingScope &timing);

} // namespace partita

#endif // PARTITA_API_COMPILE_H
