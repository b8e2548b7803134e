//===- Commands.cpp - The partita command line, as a function -------------===//
//
// Dispatches `partita <command> ...` to its command. The `partita` binary
// and the Python package (python/, docs/Python.md) both call runTool().
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Flags.h"
#include "partita/Sharding/Progress.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

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
  // Each command counts its own time for progress lines (the Python package
  // runs many in one process).
  startProgressClock();
  if (args.empty()) {
    llvm::errs() << "error: no command given; the commands:\n\n"
                 << api::helpPage("partita");
    return 1;
  }
  // A full disk or a closed pipe on stdout: said once, exit code 1 (LLVM's
  // stream would otherwise end the process with "IO failure on output
  // stream" when it is destroyed).
  auto finish = [](int exitCode) {
    llvm::outs().flush();
    if (!llvm::outs().has_error())
      return exitCode;
    llvm::outs().clear_error();
    llvm::errs() << "error: cannot write to standard output: "
                 << "the disk is full or the reader has gone\n";
    return 1;
  };
  const std::string &command = args[0];
  if (command == "-h" || command == "--help" || command == "help") {
    llvm::outs() << api::helpPage("partita");
    return finish(0);
  }
  if (command == "--version") {
    llvm::outs() << "partita " << PARTITA_VERSION << "\n";
    return finish(0);
  }
  using Args = std::vector<std::string>;
  // Each command's flags parsed by the option table (and, for those that
  // compile a module, the pipeline's options made) before it runs.
  auto compiling = [](const char *name, Stage stage,
                      int (*command)(const CommandLine &, PipelineOptions &)) {
    return [=](const Args &args) {
      CommandLine cl;
      PipelineOptions options;
      if (std::optional<int> done =
              startCommand(args, name, stage, cl, options))
        return *done;
      return command(cl, options);
    };
  };
  auto parsed = [](const char *name, int (*command)(const CommandLine &)) {
    return [=](const Args &args) {
      CommandLine cl;
      if (std::optional<int> done = parseCommand(args, name, cl))
        return *done;
      return command(cl);
    };
  };
  std::map<std::string, std::function<int(const Args &)>> commands = {
      {"compile", compiling("compile", Stage::Partitioned, compileCommand)},
      {"import", importCommand},
      {"explain", compiling("explain", Stage::Propagated, explainCommand)},
      {"show", showCommand},
      {"run", compiling("run", Stage::Partitioned, runCommand)},
      {"gen", parsed("gen", genCommand)},
      {"train", parsed("train", trainCommand)},
      {"plan", parsed("plan", planCommand)},
      {"calibrate", parsed("calibrate", calibrateCommand)},
      {"generate", parsed("generate", generateCommand)},
      {"checkpoint", checkpointCommand}};
  auto it = commands.find(command);
  if (it == commands.end()) {
    if (!command.empty() && command[0] == '-')
      return usageError("unknown option '" + command +
                        "'; see 'partita --help'");
    return usageError(
        "unknown command '" + command +
        "'; available: gen, import, compile, explain, show, run, train, "
        "plan, calibrate, generate, checkpoint (see 'partita --help')");
  }
  return finish(
      it->second(std::vector<std::string>(args.begin() + 1, args.end())));
}

void partita::cli::flushToolStreams() {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(stdout);
  std::fflush(stderr);
}
