//===- partita-opt.cpp - mlir-opt with the partita dialect ----------------===//
//
// The developer's driver: parses, verifies, runs passes and prints, like
// mlir-opt, with the partita dialect (and the upstream dialects our programs
// use) registered, and the test-only passes of test/lib. Used by the lit
// tests.
//
//===----------------------------------------------------------------------===//

#include "partita/Driver/Session.h"
#include "partita/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

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
  auto [inputName, outputName] = mlir::registerAndParseCLIOptions(
      argc, argv, "Partita optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputName, &message);
  if (!input) {
    llvm::errs() << "error: " << message << "\n";
    return EXIT_FAILURE;
  }
  // What the partita tool refuses before parsing (a binary file, nesting
  // that would overflow the parser's stack), partita-opt refuses too.
  if (!partita::checkProgramText(input->getBuffer(), inputName, llvm::errs()))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputName, &message);
  if (!output) {
    llvm::errs() << "error: " << message << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  // A full disk: said once, exit 1 (the stream's destructor would end the
  // process with "LLVM ERROR: IO failure on output stream").
  output->os().flush();
  if (output->os().has_error()) {
    output->os().clear_error();
    llvm::errs() << "error: cannot write '" << outputName
                 << "': the disk is full or the reader has gone\n";
    return EXIT_FAILURE;
  }
  output->keep();
  return EXIT_SUCCESS;
}
