//===- Flags.h - The flags every partita command shares ---------*- C++ -*-===//
//
// The flag parser every command uses (so misuse always gets `error: ...`
// and exit code 1), the pipeline flags, and the commands' entry points.
// Loading, building and compiling a module are the driver layer's
// (partita/Driver/Session.h).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_FLAGS_H
#define PARTITA_TOOLS_PARTITA_FLAGS_H

#include "partita/API/CommandOptions.h"
#include "partita/Driver/Session.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class TimingScope;
} // namespace mlir

namespace partita {
class Mesh;
struct ModelConfig;
} // namespace partita

namespace partita::cli {

/// Prints `error: message` and returns exit code 1.
int usageError(const llvm::Twine &message);

/// Parsed flags of one command (the option table's syntax).
using CommandLine = api::OptionValues;

/// The input's name in titles: "<stdin>" for "-".
inline std::string inputTitle(const CommandLine &cl) {
  return cl.input == "-" ? "<stdin>" : cl.input;
}

/// Parses `args` with the tools' shared parser (tools/common/CommandLine.h):
/// `valueFlags` take a value (`--flag v` or `--flag=v`),
/// `switchFlags` take none; one positional input at most. Returns false after
/// printing an error (exit code in `exitCode`).
bool parseCommandLine(const std::vector<std::string> &args,
                      const std::vector<std::string> &valueFlags,
                      const std::vector<std::string> &switchFlags,
                      CommandLine &parsed, int &exitCode);

/// Parses `args` with the options `command` takes (CommandOptions.def) and
/// prints `usage` for --help. Returns the exit code when the command is
/// done (help printed or bad usage), or nothing to go on.
std::optional<int> parseCommand(const std::vector<std::string> &args,
                                const std::string &command,
                                const std::string &usage, CommandLine &cl);

/// parseCommand, then `options` for `stage` from the pipeline flags: the
/// start of every command that runs the pipeline on a module.
std::optional<int> startCommand(const std::vector<std::string> &args,
                                const std::string &command,
                                const std::string &usage, Stage stage,
                                CommandLine &cl, PipelineOptions &options);

int compileCommand(const std::vector<std::string> &args);
int importCommand(const std::vector<std::string> &args);
int explainCommand(const std::vector<std::string> &args);
int showCommand(const std::vector<std::string> &args);
int runCommand(const std::vector<std::string> &args);
int genCommand(const std::vector<std::string> &args);
int trainCommand(const std::vector<std::string> &args);
int planCommand(const std::vector<std::string> &args);
int calibrateCommand(const std::vector<std::string> &args);
int checkpointCommand(const std::vector<std::string> &args);

/// The model flags `gen` and `train` share (docs/Models.md).
std::vector<std::string> modelValueFlags();
std::vector<std::string> modelSwitchFlags();
} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_FLAGS_H
