//===- Commands.h - The partita command line, as a function -----*- C++ -*-===//
//
// Only standard headers: the Python extension (built with RTTI and
// exceptions, unlike the MLIR code behind this) includes it.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMANDS_H
#define PARTITA_TOOLS_COMMANDS_H

#include <cstdint>
#include <string>
#include <vector>

namespace partita::cli {

/// An array crossing runTool's boundary: its element type as a .npy descr
/// ("<f4", "|b1", "<V2" for bfloat16), its shape and its row-major bytes.
struct ToolArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// The arrays of a `partita run` called in this process (the Python
/// package's Module.run): with `hasInputs`, `inputs` are the program's
/// inputs instead of --inputs files (errors name them inputs[i]); the run's
/// outputs land in `outputs` instead of --outputs files.
struct ToolArrays {
  bool hasInputs = false;
  std::vector<ToolArray> inputs;
  std::vector<ToolArray> outputs;
};

/// Runs `partita ARGS...` (ARGS[0] the command) in this process: output on
/// stdout and stderr as the binary prints it; returns the exit code.
/// `arrays`, when given, carries a run's inputs and outputs in memory.
int runTool(const std::vector<std::string> &args, ToolArrays *arrays = nullptr);

/// The arrays of the runTool call in progress (null when none were given).
ToolArrays *currentToolArrays();

/// Flushes everything the commands print through (LLVM's streams, stdio).
void flushToolStreams();

} // namespace partita::cli

#endif // PARTITA_TOOLS_COMMANDS_H
