//===- Commands.cpp - The partita command line, as a function -------------===//
//
// Dispatches `partita <command> ...` to its command. The `partita` binary
// and the Python package (python/, docs/Python.md) both call runTool().
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Flags.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage =
    R"(partita - a sharding compiler with an SPMD partitioner

Usage: partita <command> [options]

Commands:
  gen <model> [options]          write a model (mlp, ffn, gpt, moe) as partita
                                 IR; --rules PRESET maps its logical axes to
                                 the mesh, --summary counts parameters and
                                 FLOPs
  import [in.mlir|-] [-o out]    convert a program JAX lowered (StableHLO in
                                 generic op form, Shardy shardings) to the
                                 partita dialect (every command reads such
                                 programs directly too)
  compile [in.mlir|-] [-o out]   run the pipeline up to a stage (default:
                                 partitioned) and print the module
                                 (--stage verified|propagated|partitioned,
                                 --report r.json, --mesh, --rules,
                                 --interconnect, --strict)
  explain [in.mlir|-] [--value NAME]
                                 why each tensor is sharded as it is
  show [in.mlir|-] --value NAME  which device holds which block of a tensor
  run in.mlir --devices cpu:N [--check]
                                 run the per-device program on N emulated CPU
                                 devices; --check compares with one device
                                 (--train: a train step of the loss)
  train --model mlp|gpt|moe --devices cpu:N --rules PRESET --steps N
                                 train a model on N emulated CPU devices;
                                 writes loss.csv and loss.svg
  plan --model gpt|moe|mlp --devices N [--memory-per-device B]
                                 choose the parallel layout: the fastest
                                 mesh, rules, micro-batches and remat that
                                 fit, predicted step time and memory
  calibrate [--devices cpu:N] [-o cluster.json]
                                 measure this machine (instruction, einsum,
                                 elementwise and collective costs) for
                                 plan --interconnect
  checkpoint info DIR            what a checkpoint of train holds (every
                                 file's checksum checked)
  checkpoint convert DIR -o OUT --mesh SPEC --rules R
                                 rewrite a checkpoint in another layout

Options:
  -h, --help       show this help (also: partita <command> --help)
  --version        print the version

With no input file, or '-', the input is read from stdin; with no -o the
output goes to stdout. Errors are printed as file:line:col: error: message and
the exit code is 1.

Examples:
  partita compile docs/examples/transformer-layer.mlir --report report.json
  partita run docs/examples/transformer-layer.mlir --devices cpu:8 --check
)";

} // namespace

namespace {
/// Set for the duration of one runTool call (the Python extension holds a
/// lock around each call, so one is in progress at a time).
partita::cli::ToolArrays *toolArrays = nullptr;
} // namespace

partita::cli::ToolArrays *partita::cli::currentToolArrays() {
  return toolArrays;
}

int partita::cli::runTool(const std::vector<std::string> &args,
                          ToolArrays *arrays) {
  struct Scope {
    explicit Scope(ToolArrays *arrays) { toolArrays = arrays; }
    ~Scope() { toolArrays = nullptr; }
  } scope(arrays);
  if (args.empty()) {
    llvm::errs() << kUsage;
    return 1;
  }
  const std::string &command = args[0];
  if (command == "-h" || command == "--help" || command == "help") {
    llvm::outs() << kUsage;
    return 0;
  }
  if (command == "--version") {
    llvm::outs() << "partita " << PARTITA_VERSION << "\n";
    return 0;
  }
  std::map<std::string, std::function<int(const std::vector<std::string> &)>>
      commands = {{"compile", compileCommand},
                  {"import", importCommand},
                  {"explain", explainCommand},
                  {"show", showCommand},
                  {"run", runCommand},
                  {"gen", genCommand},
                  {"train", trainCommand},
                  {"plan", planCommand},
                  {"calibrate", calibrateCommand},
                  {"checkpoint", checkpointCommand}};
  auto it = commands.find(command);
  if (it == commands.end()) {
    if (!command.empty() && command[0] == '-')
      return usageError("unknown option '" + command +
                        "'; see 'partita --help'");
    return usageError(
        "unknown command '" + command +
        "'; available: gen, import, compile, explain, show, run, train, "
        "plan, calibrate, checkpoint (see 'partita --help')");
  }
  int exitCode =
      it->second(std::vector<std::string>(args.begin() + 1, args.end()));
  // A full disk or a closed pipe on stdout: said once, exit code 1 (LLVM's
  // stream would otherwise end the process with "IO failure on output
  // stream" when it is destroyed).
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    llvm::outs().clear_error();
    llvm::errs() << "error: cannot write to standard output: "
                 << "the disk is full or the reader has gone\n";
    return 1;
  }
  return exitCode;
}

void partita::cli::flushToolStreams() {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(stdout);
  std::fflush(stderr);
}
