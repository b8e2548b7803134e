//===- CliEntry.cpp - The compiler's commands as a shared object ----------===//
//
// libpartita-cli.so: every command of `partita` (Commands.h), opened by the
// driver (partita.cpp) the first time a command needs it, so that the
// driver starts without mapping MLIR and LLVM (docs/Runtime.md,
// "Plugins"). It exports one symbol, a table whose interface number the
// driver checks.
//
//===----------------------------------------------------------------------===//

#include "CliEntry.h"
#include "Commands.h"
#include "partita/Runtime/Program/RunMemory.h"

#include <string>
#include <vector>

namespace {

int runCommands(int argc, char **argv) {
  partita::exitWhenOutOfMemory();
  return partita::cli::runTool(std::vector<std::string>(argv + 1, argv + argc));
}

const partita::cli::CliTable table = {partita::cli::kCliAbi, runCommands};

} // namespace

extern "C" __attribute__((visibility("default"))) const void *
partita_cli_commands() {
  return &table;
}
