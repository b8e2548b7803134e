//===- Session.h - A context, its diagnostics and the input -----*- C++ -*-===//
//
// What every front end (the CLI, the Python package, the fuzzers, the
// planner's and trainer's layers) does around the passes: a context with
// Partita's dialects and a diagnostic handler printing file:line:col with
// the source line; program text read, checked and parsed, StableHLO as JAX
// writes it imported; a model built; the pipeline run; a file written in one
// step.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DRIVER_SESSION_H
#define PARTITA_DRIVER_SESSION_H

#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <memory>
#include <string>

namespace mlir {
class TimingScope;
} // namespace mlir

namespace llvm {
class MemoryBuffer;
class raw_ostream;
} // namespace llvm

namespace partita {
class Mesh;
struct ModelConfig;

/// "1.5 MiB": bytes in binary units, one decimal above a KiB.
std::string formatBytes(double bytes);

/// A context with Partita's dialects and a diagnostic handler printing
/// `file:line:col: error: ...` with the source line.
struct Session {
  /// Diagnostics and load errors are printed on `errors`.
  explicit Session(llvm::raw_ostream &errors = llvm::errs());
  ~Session();
  llvm::raw_ostream &errors;
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  /// Where in the input each named location without a position was
  /// written: `loc("xw")` parses to a name around an unknown location, and
  /// its diagnostics are printed at the op's file:line:col (the first op
  /// of that name). The IR keeps the names as written.
  llvm::DenseMap<mlir::Location, mlir::Location> namedPositions;
  mlir::DiagnosticEngine::HandlerID positionHandler = 0;
  /// What loadModule expects: "auto" (partita IR, or StableHLO as JAX
  /// writes it, which is imported), "partita" or "stablehlo".
  std::string from = "auto";
};

/// False, after reporting on `errors` at `path`:line:col, for input that is
/// not program text: a NUL byte (a binary file), or brackets, angle brackets
/// (types and attributes: `tuple<tuple<...>>`) and regions nested deeper
/// than 1,000 levels (counted outside string literals and comments), which
/// would overflow the parser's stack. loadModule checks its input with it.
bool checkProgramText(llvm::StringRef text, llvm::StringRef path,
                      llvm::raw_ostream &errors);

/// Reads, parses and verifies `path` ("-" for stdin), importing StableHLO
/// (partita/Conversion/StableHLOToPartita.h); null after reporting.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(Session &session,
                                             const std::string &path);

/// loadModule on text already in memory (its identifier names it in
/// diagnostics). One module per Session: MLIR parses the source manager's
/// first buffer.
mlir::OwningOpRef<mlir::ModuleOp>
loadModuleFromBuffer(Session &session,
                     std::unique_ptr<llvm::MemoryBuffer> buffer);

/// Builds `config`'s model on `mesh` in `session`'s context and verifies
/// it; null after reporting the error on `session.errors`.
mlir::OwningOpRef<mlir::ModuleOp> buildModelOrReport(Session &session,
                                                     const ModelConfig &config,
                                                     const Mesh &mesh);

/// Runs the pipeline on `module`; false after its diagnostics. With
/// `timing`, each pass's time is recorded under it.
bool runPipeline(Session &session, mlir::ModuleOp module,
                 const PipelineOptions &options,
                 mlir::TimingScope *timing = nullptr);

/// Writes `path` ("-": stdout) with `write`, a file replaced in one step;
/// false after reporting one that cannot be written.
bool writeOutputFile(const std::string &path,
                     const std::function<void(llvm::raw_ostream &)> &write);

} // namespace partita

#endif // PARTITA_DRIVER_SESSION_H
