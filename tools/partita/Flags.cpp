//===- Flags.cpp - The flags every partita command shares --------------===//

#include "Flags.h"

#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "partita/Dialect/Partita/Utils/InlineCalls.h"

#include "../common/CommandLine.h"
#include "partita/Runtime/IO/Files.h"

#include "partita/Conversion/StableHLOToPartita.h"
#include "partita/Models/Models.h"
#include "partita/Registration.h"
#include "partita/Sharding/Mesh.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace partita;
using namespace partita::cli;

int partita::cli::usageError(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

bool partita::cli::parseCommandLine(const std::vector<std::string> &args,
                                    const std::vector<std::string> &valueFlags,
                                    const std::vector<std::string> &switchFlags,
                                    CommandLine &parsed, int &exitCode) {
  tools::CommandSyntax syntax;
  syntax.helpHint = "partita --help";
  syntax.options.push_back({"-o", "FILE", "", false});
  for (const std::string &flag : valueFlags)
    syntax.options.push_back({flag.c_str(), "VALUE", "", false});
  for (const std::string &flag : switchFlags)
    syntax.options.push_back({flag.c_str(), nullptr, "", false});
  Expected<tools::Arguments> arguments = tools::parseArguments(args, syntax);
  if (!arguments) {
    exitCode = usageError(arguments.status().message());
    return false;
  }
  parsed.help = arguments->help;
  if (arguments->positional.size() > 1) {
    exitCode =
        usageError("more than one input file ('" + arguments->positional[0] +
                   "' and '" + arguments->positional[1] + "')");
    return false;
  }
  if (!arguments->positional.empty())
    parsed.input = arguments->positional[0];
  for (const auto &[flag, value] : arguments->options) {
    bool isSwitch = std::find(switchFlags.begin(), switchFlags.end(), flag) !=
                    switchFlags.end();
    // A flag given an empty value is a mistake, not "none" (a shell
    // variable that was not set): `compile --report ''` wrote no report
    // and exited 0.
    if (!isSwitch && value.empty()) {
      exitCode = usageError(
          flag == "--rules" ? std::string("--rules needs a preset or a file, "
                                          "got ''")
                            : flag + " needs a value, got ''");
      return false;
    }
    if (flag == "-o")
      parsed.output = value;
    else if (isSwitch)
      parsed.switches.push_back(flag);
    else
      parsed.values[flag] = value;
  }
  return true;
}

std::optional<int>
partita::cli::parseCommand(const std::vector<std::string> &args,
                           const std::string &command, CommandLine &cl,
                           const std::string &page) {
  int exitCode = 0;
  if (!parseCommandLine(args, api::valueFlags(command),
                        api::switchFlags(command), cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << api::helpPage(page.empty() ? command : page);
    return 0;
  }
  return std::nullopt;
}

std::optional<int>
partita::cli::startCommand(const std::vector<std::string> &args,
                           const std::string &command, Stage stage,
                           CommandLine &cl, PipelineOptions &options) {
  if (std::optional<int> done = parseCommand(args, command, cl))
    return done;
  if (Status status = api::pipelineOptionsFromOptions(cl, stage, options);
      !status.ok())
    return usageError(status.message());
  return std::nullopt;
}
