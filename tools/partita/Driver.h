//===- Driver.h - Shared pieces of the partita commands ---------*- C++ -*-===//
//
// The flag parser every command uses (so misuse always gets `error: ...`
// and exit code 1), module loading with file:line:col diagnostics, and the
// pipeline run.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_DRIVER_H
#define PARTITA_TOOLS_PARTITA_DRIVER_H

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
  "  --train                turn the loss function into one train step\n"     \
  "                         first: forward, backward, optimizer update\n"     \
  "  --optimizer <o>        with --train: adamw (default) or sgd\n"           \
  "  --lr <x>               with --train: a constant learning rate (default:\n"\
  "                         an `lr` input of the step)\n"                     \
  "  --micro-batches <m>    with --train: gradient accumulation over m\n"     \
  "                         micro-batches (default 1)\n"                      \
  "  --remat <r>            with --train: none (default), per-layer or full\n"\
  "  --clip-norm <c>        with --train: clip gradients to global L2 norm c\n"\
  "  --mixed-precision      with --train: f32 master weights and moments\n"   \
  "                         for a bf16 loss\n"

#define PARTITA_PIPELINE_FLAGS_USAGE                                           \
  "  --mesh <spec>          replace the module's mesh first\n"                 \
  "  --rules <preset|file>  map logical axis names (partita gen's models) "    \
  "to\n"                                                                       \
  "                         mesh axes: dp, zero1, zero2, fsdp, tp, dp+tp,\n"   \
  "                         fsdp+tp, tp+sp, ep, or a JSON rules file\n"        \
  "  --interconnect <file>  link figures for the cost model (JSON)\n"          \
  "  --combine-bytes <n>    all_reduce buckets of at most n bytes (25 MiB)\n"  \
  "  --no-overlap           run each collective where it stands (default:\n"  \
  "                         asynchronously, waited for before first use)\n"  \
  "  -h, --help             show this help\n"

namespace partita::cli {

/// "1.5 MiB": bytes in binary units, one decimal above a KiB.
std::string formatBytes(double bytes);

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

/// Parses `args` with the tools' shared parser (tools/common/CommandLine.h):
/// `valueFlags` take a value (`--flag v` or `--flag=v`),
/// `switchFlags` take none; one positional input at most. Returns false after
/// printing an error (exit code in `exitCode`).
bool parseCommandLine(const std::vector<std::string> &args,
                      const std::vector<std::string> &valueFlags,
                      const std::vector<std::string> &switchFlags,
                      CommandLine &parsed, int &exitCode);

/// A context with Partita's dialects and a diagnostic handler printing
/// `file:line:col: error: ...` with the source line.
struct Session {
  /// Diagnostics and load errors are printed on `errors`.
  explicit Session(llvm::raw_ostream &errors = llvm::errs());
  ~Session();
  llvm::raw_ostream &errors;
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  /// Where in the input each named location without a position was
  /// written: `loc("xw")` parses to a name around an unknown location, and
  /// its diagnostics are printed at the op's file:line:col (the first op
  /// of that name). The IR keeps the names as written.
  llvm::DenseMap<mlir::Location, mlir::Location> namedPositions;
  mlir::DiagnosticEngine::HandlerID positionHandler = 0;
  /// What loadModule expects: "auto" (partita IR, or StableHLO as JAX
  /// writes it, which is imported), "partita" or "stablehlo".
  std::string from = "auto";
};

/// Reads, parses and verifies `path` ("-" for stdin), importing StableHLO
/// (partita/Conversion/StableHLOToPartita.h); null after reporting.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(Session &session,
                                             const std::string &path);

/// loadModule on text already in memory (its identifier names it in
/// diagnostics). One module per Session: MLIR parses the source manager's
/// first buffer.
mlir::OwningOpRef<mlir::ModuleOp>
loadModuleFromBuffer(Session &session,
                     std::unique_ptr<llvm::MemoryBuffer> buffer);

/// --optimizer (default adamw) and --remat (default none), parsed once into
/// `options`; false after reporting a bad value.
bool parseTrainChoices(const CommandLine &cl, PipelineOptions &options,
                       int &exitCode);

/// The pipeline options given by the common flags (--mesh, --interconnect,
/// --strict) with the stage `stage`; false after reporting a bad value.
bool pipelineOptions(const CommandLine &cl, Stage stage,
                     PipelineOptions &options, int &exitCode);

/// Writes `path` ("-": stdout) with `write`; false after reporting a file
/// that cannot be written.
bool writeOutputFile(const std::string &path,
                     const std::function<void(llvm::raw_ostream &)> &write);

/// Runs the pipeline on `module`; false after its diagnostics. With
/// `timing`, each pass's time is recorded under it.
bool runPipeline(Session &session, mlir::ModuleOp module,
                 const PipelineOptions &options,
                 mlir::TimingScope *timing = nullptr);

/// The common flags that take a value.
inline std::vector<std::string> pipelineValueFlags() {
  return {"--mesh",          "--interconnect", "--rules",
          "--optimizer",     "--lr",           "--micro-batches",
          "--remat",         "--combine-bytes", "--max-padding",
          "--clip-norm"};
}

/// The common start of a command: parses `args` (the pipeline flags,
/// `--strict`, and `extraFlags`), prints `usage` for --help, and fills
/// `options` for `stage`. Returns the exit code when the command is done
/// (help printed or bad usage), or nothing to go on.
std::optional<int> startCommand(const std::vector<std::string> &args,
                                const std::vector<std::string> &extraFlags,
                                const char *usage, Stage stage, CommandLine &cl,
                                PipelineOptions &options,
                                const std::vector<std::string> &extraSwitches =
                                    {});

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

/// Builds `config`'s model on `mesh` in `session`'s context and verifies
/// it; null after reporting the error.
mlir::OwningOpRef<mlir::ModuleOp> buildModelOrReport(Session &session,
                                                     const ModelConfig &config,
                                                     const Mesh &mesh);

/// The model flags `gen` and `train` share (docs/Models.md).
std::vector<std::string> modelValueFlags();
std::vector<std::string> modelSwitchFlags();
/// Fills `config` (all but the model's name) from the model flags; false
/// after reporting a bad value.
bool parseModelConfig(const CommandLine &cl, ModelConfig &config,
                      int &exitCode);

} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_DRIVER_H
