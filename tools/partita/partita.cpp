//===- partita.cpp - The Partita command-line tool ------------------------===//
//
// The user-facing driver: `partita <command> [options]`. Each command lives
// in its own file and parses its own flags with the parser in Driver.cpp, so
// that misuse gets `error: ...` and exit code 1 instead of a library's
// message or an abort. Compiler diagnostics are `file:line:col: error: ...`.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <string>
#include <vector>

int main(int argc, char **argv) {
  return partita::cli::runTool(std::vector<std::string>(argv + 1, argv + argc));
}
