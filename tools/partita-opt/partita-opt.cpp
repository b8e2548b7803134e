//===- partita-opt.cpp - mlir-opt with the partita dialect ----------------===//
//
// The developer's driver: parses, verifies, runs passes and prints, like
// mlir-opt, with the partita dialect (and the upstream dialects our programs
// use) registered, and the test-only passes of test/lib. Used by the lit
// tests.
//
//===----------------------------------------------------------------------===//

#include "partita/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace partita {
namespace test {
void registerTestPrintShardingRulesPass();
void registerTestShufflePass();
} // namespace test
} // namespace partita

/// Registers the passes of test/lib (PartitaTestPasses), which only this
/// driver links.
static void registerTestPasses() {
  partita::test::registerTestPrintShardingRulesPass();
  partita::test::registerTestShufflePass();
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  partita::registerAllDialects(registry);
  partita::registerAllPasses();
  registerTestPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Partita optimizer driver\n", registry));
}
