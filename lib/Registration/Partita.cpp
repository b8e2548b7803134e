//===- Partita.cpp - Partita as a library ---------------------------------===//

#include "partita/Partita.h"

#include "partita/Transforms/Interconnect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;

Expected<Report> partita::compile(mlir::ModuleOp module,
                                  const CompileOptions &options) {
  if (!module)
    return Status::error("partita::compile: null module");
  mlir::MLIRContext *context = module.getContext();
  // Messages and locations, not dumps of the failing op.
  struct RestoreOpPrinting {
    mlir::MLIRContext *context;
    bool before;
    ~RestoreOpPrinting() { context->printOpOnDiagnostic(before); }
  } restore{context, context->shouldPrintOpOnDiagnostic()};
  context->printOpOnDiagnostic(false);
  // Errors are collected, not printed: the caller decides what to show.
  std::string errors;
  mlir::ScopedDiagnosticHandler capture(
      context, [&](mlir::Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() != mlir::DiagnosticSeverity::Error)
          return mlir::success();
        llvm::raw_string_ostream os(errors);
        if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(
                diagnostic.getLocation()))
          os << file.getFilename().getValue() << ":" << file.getLine() << ":"
             << file.getColumn() << ": ";
        else
          os << diagnostic.getLocation() << ": ";
        os << "error: " << diagnostic.str() << "\n";
        for (const mlir::Diagnostic &note : diagnostic.getNotes())
          os << "  note: " << note.str() << "\n";
        return mlir::success();
      });
  auto failure = [&](const std::string &fallback) {
    if (errors.empty())
      errors = fallback + "\n";
    return Status::error(errors);
  };

  PipelineOptions resolved = options;
  if (Status status = resolveInterconnect(resolved); !status)
    return status;
  if (mlir::failed(mlir::verify(module)))
    return failure("error: the module does not verify");
  mlir::PassManager passes(context);
  buildPipeline(passes, resolved);
  if (mlir::failed(passes.run(module)))
    return failure("error: the Partita pipeline failed");
  return analyzeModule(module, interconnectOf(resolved));
}
