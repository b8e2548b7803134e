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

/// The help lines of the pipeline flags `run` and `show` take, ending with
/// --help's (the end of their usage texts).
/// The train-step flags of compile and run (PipelineOptions.def).
#define PARTITA_TRAIN_STEP_FLAGS_USAGE                                         \
  "  --train                turn the loss function into one train step\n"      \
  "                         first: forward, backward, optimizer update\n"      \
  "  --optimizer <o>        with --train: adamw (default) or sgd\n"            \
  "  --lr <x>               with --train: a constant learning rate "           \
  "(default:\n"                                                                \
  "                         an `lr` input of the step)\n"                      \
  "  --micro-batches <m>    with --train: gradient accumulation over m\n"      \
  "                         micro-batches (default 1)\n"                       \
  "  --remat <r>            with --train: none (default), per-layer or full\n" \
  "  --clip-norm <c>        with --train: clip gradients to global L2 norm "   \
  "c\n"                                                                        \
  "  --mixed-precision      with --train: f32 master weights and moments\n"    \
  "                         for a bf16 loss\n"

#define PARTITA_PIPELINE_FLAGS_USAGE                                           \
  "  --mesh <spec>          replace the module's mesh first\n"                 \
  "  --rules <preset|file>  map logical axis names (partita gen's models) "    \
  "to\n"                                                                       \
  "                         mesh axes: dp, zero1, zero2, fsdp, tp, dp+tp,\n"   \
  "                         fsdp+tp, tp+sp, ep, or a JSON rules file\n"        \
  "  --interconnect <file>  link figures for the cost model (JSON)\n"          \
  "  --combine-bytes <n>    all_reduce buckets of at most n bytes (25 MiB)\n"  \
  "  --no-overlap           run each collective where it stands (default:\n"   \
  "                         asynchronously, waited for before first use)\n"    \
  "  -h, --help             show this help\n"

namespace partita::cli {

/// Prints `error: message` and returns exit code 1.
int usageError(const llvm::Twine &message);

/// Parsed flags of one command.
struct CommandLine {
  std::string input = "-";
  std::string output = "-";
  std::map<std::string, std::string> values;
  std::vector<std::string> switches;
  bool help = false;

  bool has(const std::string &flag) const { return values.count(flag) != 0; }
  bool on(const std::string &flag) const;
  std::string get(const std::string &flag,
                  const std::string &fallback = "") const;
};

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

/// --optimizer (default adamw) and --remat (default none), parsed once into
/// `options`; false after reporting a bad value.
bool parseTrainChoices(const CommandLine &cl, PipelineOptions &options,
                       int &exitCode);

/// The pipeline options given by the common flags (--mesh, --interconnect,
/// --strict) with the stage `stage`; false after reporting a bad value.
bool pipelineOptions(const CommandLine &cl, Stage stage,
                     PipelineOptions &options, int &exitCode);

/// The common flags that take a value.
inline std::vector<std::string> pipelineValueFlags() {
  return {"--mesh",        "--interconnect",  "--rules", "--optimizer",
          "--lr",          "--micro-batches", "--remat", "--combine-bytes",
          "--max-padding", "--clip-norm"};
}

/// The common start of a command: parses `args` (the pipeline flags,
/// `--strict`, and `extraFlags`), prints `usage` for --help, and fills
/// `options` for `stage`. Returns the exit code when the command is done
/// (help printed or bad usage), or nothing to go on.
std::optional<int>
startCommand(const std::vector<std::string> &args,
             const std::vector<std::string> &extraFlags, const char *usage,
             Stage stage, CommandLine &cl, PipelineOptions &options,
             const std::vector<std::string> &extraSwitches = {});

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
/// Fills `config` (all but the model's name) from the model flags; false
/// after reporting a bad value.
bool parseModelConfig(const CommandLine &cl, ModelConfig &config,
                      int &exitCode);

} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_FLAGS_H
