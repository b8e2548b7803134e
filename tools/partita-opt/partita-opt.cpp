//===- partita-opt.cpp - mlir-opt with the partita dialect ----------------===//
//
// The developer's driver: parses, verifies, runs passes and prints, like
// mlir-opt, with the partita dialect (and the upstream dialects our programs
// use) registered. Used by the lit tests.
//
//===----------------------------------------------------------------------===//

#include "partita/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  partita::registerAllDialects(registry);
  partita::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Partita optimizer driver\n", registry));
}
