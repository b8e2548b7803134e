//===- partita.cpp - The Partita command-line tool ------------------------===//
//
// The user-facing driver: `partita <command> [options]`. Each command lives
// in its own file and parses its own flags with the parser in Flags.cpp, so
// that misuse gets `error: ...` and exit code 1 instead of a library's
// message or an abort. Compiler diagnostics are `file:line:col: error: ...`.
//
// The commands are a shared object (libpartita-cli.so, CliEntry.cpp) that
// this driver opens when a command needs them: `partita --version` answers
// without mapping MLIR and LLVM, which alone take ~20-30 ms to load here
// (docs/Runtime.md, "Plugins"). The library is found like the
// runtime's plugins: $PARTITA_CLI_LIBRARY, else ../lib beside this tool,
// else the dynamic loader's path.
//
//===----------------------------------------------------------------------===//

#include "CliEntry.h"

#include "partita/Runtime/Plugins/Plugin.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  using namespace partita::cli;
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("partita %s\n", PARTITA_VERSION);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "error: cannot write to standard output: the "
                           "disk is full or the reader has gone\n");
      return 1;
    }
    return 0;
  }
  partita::Expected<const CliTable *> table =
      partita::openPluginTable<CliTable>(
          kCliLibraryFile, "PARTITA_CLI_LIBRARY", kCliLibrarySymbol,
          "partita's commands", kCliAbi, /*lazy=*/true);
  if (!table) {
    std::fprintf(stderr, "error: %s\n", table.status().message().c_str());
    return 1;
  }
  return (*table)->run(argc, argv);
}
