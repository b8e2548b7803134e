//===- main.cpp - A compiler that embeds Partita --------------------------===//
//
//   partita-consumer in.mlir [--mesh SPEC] [--stage verified|propagated|
//                             partitioned]
//       compiles with partita::compile and prints the report's JSON;
//   partita-consumer in.mlir --pipeline 'partita-pipeline{stage=partitioned}'
//       runs a textual pass pipeline on the module (Partita's pipeline is
//       registered by name) and prints the module.
//
//===----------------------------------------------------------------------===//

#include "partita/Partita.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

int main(int argc, char **argv) {
  if (argc < 2) {
    llvm::errs() << "usage: partita-consumer in.mlir [--mesh SPEC] [--stage S]"
                    " [--pipeline TEXT]\n";
    return 1;
  }
  partita::CompileOptions options;
  std::string pipeline;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mesh")
      options.mesh = value;
    else if (flag == "--pipeline")
      pipeline = value;
    else if (flag == "--stage") {
      std::optional<partita::Stage> stage = partita::parseStage(value);
      if (!stage) {
        llvm::errs() << "unknown stage " << value << "\n";
        return 1;
      }
      options.stage = *stage;
    } else {
      llvm::errs() << "unknown flag " << flag << "\n";
      return 1;
    }
  }

  mlir::DialectRegistry registry;
  partita::registerAllDialects(registry);
  partita::registerAllPasses();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sources;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    // Parse errors as file:line:col: error: ..., like any MLIR tool.
    mlir::SourceMgrDiagnosticHandler handler(sources, &context);
    module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], sources, &context);
  }
  if (!module)
    return 1;

  if (!pipeline.empty()) {
    mlir::PassManager passes(&context, mlir::ModuleOp::getOperationName());
    if (mlir::failed(mlir::parsePassPipeline(pipeline, passes, llvm::errs())))
      return 1;
    if (mlir::failed(passes.run(*module)))
      return 1;
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

  partita::Expected<partita::Report> report =
      partita::compile(*module, options);
  if (!report) {
    llvm::errs() << "partita-consumer: compile failed:\n"
                 << report.status().message();
    return 1;
  }
  llvm::outs() << report->toJson() << "\n";
  return 0;
}
