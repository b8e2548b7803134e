//===- Flags.cpp - The flags every partita command shares --------------===//

#include "Flags.h"

#include "partita/API/CommandOptions.h"

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
    if (flag == "-o")
      parsed.output = value;
    else if (std::find(switchFlags.begin(), switchFlags.end(), flag) !=
             switchFlags.end())
      parsed.switches.push_back(flag);
    else
      parsed.values[flag] = value;
  }
  return true;
}

bool partita::cli::parseTrainChoices(const CommandLine &cl,
                                     PipelineOptions &options, int &exitCode) {
  std::string optimizer = cl.get("--optimizer", "adamw");
  std::optional<TrainOptimizer> parsedOptimizer =
      parseTrainOptimizer(optimizer);
  if (!parsedOptimizer || *parsedOptimizer == TrainOptimizer::None) {
    exitCode =
        usageError("--optimizer must be adamw or sgd, got '" + optimizer + "'");
    return false;
  }
  options.trainOptimizer = *parsedOptimizer;
  std::string remat = cl.get("--remat", "none");
  std::optional<Remat> parsedRemat = parseRemat(remat);
  if (!parsedRemat) {
    exitCode = usageError("--remat must be none, per-layer or full, got '" +
                          remat + "'");
    return false;
  }
  options.trainRemat = *parsedRemat;
  if (cl.has("--clip-norm")) {
    Expected<double> norm = api::parseNumberFlag(
        "--clip-norm", cl.get("--clip-norm"), 0, 1e30, true);
    if (!norm) {
      exitCode = usageError(norm.status().message());
      return false;
    }
    options.trainClipNorm = *norm;
  }

  return true;
}

bool partita::cli::pipelineOptions(const CommandLine &cl, Stage stage,
                                   PipelineOptions &options, int &exitCode) {
  options.stage = stage;
  options.strict = cl.on("--strict");
  options.overlap = !cl.on("--no-overlap");
  options.interconnectFile = cl.get("--interconnect");
  options.rules = cl.get("--rules");
  // An empty value is a mistake (a shell variable that was not set), not
  // "no rules": it compiled with nothing sharded.
  if (cl.has("--rules") && options.rules.empty()) {
    exitCode = usageError("--rules needs a preset or a file, got ''");
    return false;
  }
  if (cl.has("--combine-bytes")) {
    Expected<int64_t> bytes =
        api::parseIntegerFlag("--combine-bytes", cl.get("--combine-bytes"), 0,
                              std::numeric_limits<int64_t>::max());
    if (!bytes) {
      exitCode = usageError(bytes.status().message() +
                            " (bytes per device; 0: no combining)");
      return false;
    }
    options.combineBytes = *bytes;
  }
  if (cl.has("--max-padding")) {
    Expected<double> fraction =
        api::parseNumberFlag("--max-padding", cl.get("--max-padding"), 0, 1);
    if (!fraction) {
      exitCode = usageError(fraction.status().message());
      return false;
    }
    options.maxPadding = *fraction;
  }
  if (cl.on("--train")) {
    if (!parseTrainChoices(cl, options, exitCode))
      return false;
    options.trainMixedPrecision = cl.on("--mixed-precision");
    if (cl.has("--micro-batches")) {
      Expected<int64_t> micro = api::parseIntegerFlag(
          "--micro-batches", cl.get("--micro-batches"), 1, 1 << 20);
      if (!micro) {
        exitCode = usageError(micro.status().message());
        return false;
      }
      options.trainMicroBatches = *micro;
    }
    if (cl.has("--lr")) {
      Expected<double> rate =
          api::parseNumberFlag("--lr", cl.get("--lr"), 0, 1e6, true);
      if (!rate) {
        exitCode = usageError(rate.status().message());
        return false;
      }
      options.trainLearningRate = *rate;
    }
  } else if (cl.has("--optimizer") || cl.has("--lr") ||
             cl.on("--mixed-precision") || cl.has("--micro-batches") ||
             cl.has("--remat") || cl.has("--clip-norm")) {
    exitCode = usageError("--optimizer, --lr, --mixed-precision, "
                          "--micro-batches, --remat and --clip-norm need "
                          "--train");
    return false;
  }
  if (cl.has("--mesh")) {
    std::string text = cl.get("--mesh");
    llvm::StringRef spec = text;
    if (size_t colon = spec.find(':'); colon != llvm::StringRef::npos)
      spec = spec.drop_front(colon + 1);
    Expected<Mesh> mesh = parseMeshSpec(spec.str());
    if (!mesh) {
      exitCode = usageError("invalid --mesh '" + text +
                            "': " + mesh.status().message());
      return false;
    }
    options.mesh = text;
  }
  return true;
}

std::optional<int>
partita::cli::parseCommand(const std::vector<std::string> &args,
                           const std::string &command, const std::string &usage,
                           CommandLine &cl) {
  int exitCode = 0;
  if (!parseCommandLine(args, api::valueFlags(command),
                        api::switchFlags(command), cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << usage;
    return 0;
  }
  return std::nullopt;
}

std::optional<int>
partita::cli::startCommand(const std::vector<std::string> &args,
                           const std::string &command, const std::string &usage,
                           Stage stage, CommandLine &cl,
                           PipelineOptions &options) {
  if (std::optional<int> done = parseCommand(args, command, usage, cl))
    return done;
  int exitCode = 0;
  if (!pipelineOptions(cl, stage, options, exitCode))
    return exitCode;
  return std::nullopt;
}
