//===- Registration.cpp - Register Partita with an MLIR context -----------===//

#include "partita/Registration.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Transforms/Passes.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

void partita::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<PartitaDialect, mlir::func::FuncDialect>();
}

void partita::registerAllPasses() {
  registerPartitaPasses();
  registerPipeline();
}
