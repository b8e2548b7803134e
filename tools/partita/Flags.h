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
struct TrainRequest;
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
/// prints its help page (`page`'s, when given) for --help. Returns the exit
/// code when the command is done (help printed or bad usage), or nothing to
/// go on.
std::optional<int> parseCommand(const std::vector<std::string> &args,
                                const std::string &command, CommandLine &cl,
                                const std::string &page = "");

/// parseCommand, then `options` for `stage` from the pipeline flags: the
/// start of every command that runs the pipeline on a module.
std::optional<int> startCommand(const std::vector<std::string> &args,
                                const std::string &command, Stage stage,
                                CommandLine &cl, PipelineOptions &options);

/// The commands. Those that compile a module get their flags parsed and
/// the pipeline's options made (startCommand); those that take flags get
/// them parsed (parseCommand); the rest (import, show, checkpoint) parse
/// their own arguments (Commands.cpp dispatches).
int compileCommand(const CommandLine &cl, PipelineOptions &options);
int explainCommand(const CommandLine &cl, PipelineOptions &options);
int runCommand(const CommandLine &cl, PipelineOptions &options);
int genCommand(const CommandLine &cl);
int trainCommand(const CommandLine &cl);
/// `partita train` once its request is made (checkpoint convert's too).
int trainFromRequest(TrainRequest &request);
int planCommand(const CommandLine &cl);
int calibrateCommand(const CommandLine &cl);
int generateCommand(const CommandLine &cl);
int importCommand(const std::vector<std::string> &args);
int showCommand(const std::vector<std::string> &args);
int checkpointCommand(const std::vector<std::string> &args);

/// The model flags `gen` and `train` share (docs/Models.md).
std::vector<std::string> modelValueFlags();
std::vector<std::string> modelSwitchFlags();
} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_FLAGS_H
