//===- partita.cpp - The Partita command-line tool ------------------------===//
//
// The user-facing driver: `partita <command> [options]`. Each command parses
// its own flags with the small table-driven parser below, so that misuse
// gets `error: ...` and exit code 1 instead of a library's message or an
// abort. Compiler diagnostics are printed as `file:line:col: error: ...`.
//
//===----------------------------------------------------------------------===//

#include "partita/Registration.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage = R"(partita - a sharding compiler with an SPMD partitioner

Usage: partita <command> [options]

Commands:
  compile [in.mlir|-] [-o out]   parse, verify and print a module
                                 (--mesh to retarget; --stage verified)

Options:
  -h, --help       show this help (also: partita <command> --help)
  --version        print the version

With no input file, or '-', the input is read from stdin; with no -o the
output goes to stdout. Errors are printed as file:line:col: error: message and
the exit code is 1.
)";

constexpr const char *kCompileUsage = R"(Usage: partita compile [in.mlir|-] [options]

Parses and verifies a module in the partita dialect and prints it.

Options:
  -o <file>            write the result to <file> (default: stdout)
  --mesh <spec>        replace the module's mesh: data=2,model=4, or
                       NAME:data=2,model=4 when the module has several
  --stage <stage>      stop after <stage>; available: verified (default)
  -h, --help           show this help
)";

/// Prints a usage error and returns the exit code for it.
int usageError(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Options shared by commands that read one module and write one output.
struct CommandLine {
  std::string input = "-";
  std::string output = "-";
  std::map<std::string, std::string> values;
  bool help = false;
};

/// Parses `args` given the flags that take a value. Returns false after
/// printing an error.
bool parseCommandLine(const std::vector<std::string> &args,
                      const std::vector<std::string> &valueFlags,
                      CommandLine &parsed, int &exitCode) {
  bool haveInput = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (arg == "-" || arg.empty() || arg[0] != '-') {
      if (haveInput) {
        exitCode = usageError("more than one input file ('" + parsed.input +
                              "' and '" + arg + "')");
        return false;
      }
      parsed.input = arg;
      haveInput = true;
      continue;
    }
    std::string flag = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    bool takesValue = flag == "-o" ||
                      std::find(valueFlags.begin(), valueFlags.end(), flag) !=
                          valueFlags.end();
    if (!takesValue) {
      exitCode = usageError("unknown option '" + arg +
                            "'; see 'partita --help'");
      return false;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size()) {
        exitCode = usageError("option '" + flag + "' needs a value");
        return false;
      }
      value = args[++i];
    }
    if (flag == "-o")
      parsed.output = value;
    else
      parsed.values[flag] = value;
  }
  return true;
}

/// Reads, parses and verifies the module at `path`; diagnostics go to stderr
/// with file:line:col locations.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(const std::string &path,
                                             mlir::MLIRContext &context,
                                             llvm::SourceMgr &sourceMgr) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(path, &errorMessage);
  if (!file) {
    llvm::errs() << "error: cannot read '" << path << "': " << errorMessage << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
}

int runCompile(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  if (!parseCommandLine(args, {"--stage", "--mesh"}, cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << kCompileUsage;
    return 0;
  }
  std::string stage = cl.values.count("--stage") ? cl.values["--stage"] : "verified";
  if (stage != "verified")
    return usageError("unknown stage '" + stage + "'; available: verified");
  if (cl.values.count("--mesh")) {
    llvm::StringRef spec = cl.values["--mesh"];
    if (size_t colon = spec.find(':'); colon != llvm::StringRef::npos)
      spec = spec.drop_front(colon + 1);
    partita::Expected<partita::Mesh> mesh = partita::parseMeshSpec(spec.str());
    if (!mesh)
      return usageError("invalid --mesh '" + cl.values["--mesh"] +
                        "': " + mesh.status().message());
  }

  mlir::DialectRegistry registry;
  partita::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  // Users get the message and the source line, not a generic dump of the op.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModule(cl.input, context, sourceMgr);
  if (!module)
    return 1;

  if (cl.values.count("--mesh")) {
    mlir::PassManager passes(&context);
    partita::SetMeshPassOptions options;
    options.meshSpec = cl.values["--mesh"];
    passes.addPass(partita::createSetMeshPass(options));
    if (mlir::failed(passes.run(*module)))
      return 1;
  }

  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(cl.output, &errorMessage);
  if (!output) {
    llvm::errs() << "error: cannot write '" << cl.output << "': " << errorMessage
                 << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
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
      commands = {{"compile", runCompile}};
  auto it = commands.find(command);
  if (it == commands.end()) {
    if (!command.empty() && command[0] == '-')
      return usageError("unknown option '" + command + "'; see 'partita --help'");
    return usageError("unknown command '" + command +
                      "'; available: compile (see 'partita --help')");
  }
  return it->second(std::vector<std::string>(args.begin() + 1, args.end()));
}
