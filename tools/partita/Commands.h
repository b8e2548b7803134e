//===- Commands.h - The partita command line, as a function -----*- C++ -*-===//
//
// Only standard headers: the Python extension (built with RTTI and
// exceptions, unlike the MLIR code behind this) includes it.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMANDS_H
#define PARTITA_TOOLS_COMMANDS_H

#include <string>
#include <vector>

namespace partita::cli {

/// Runs `partita ARGS...` (ARGS[0] the command) in this process: output on
/// stdout and stderr as the binary prints it; returns the exit code.
int runTool(const std::vector<std::string> &args);

/// Flushes everything the commands print through (LLVM's streams, stdio).
void flushToolStreams();

} // namespace partita::cli

#endif // PARTITA_TOOLS_COMMANDS_H
