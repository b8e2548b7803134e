//===- Explain.cpp - partita explain --------------------------------------===//
//
// The flags in; the explanation is the reporting layer's
// (partita/Reporting/Explain.h).
//
//===----------------------------------------------------------------------===//

#include "Flags.h"
#include "partita/API/CommandOptions.h"

#include "partita/Reporting/Explain.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {

/// The --help page: the options from CommandOptions.def.
std::string explainUsage() {
  return std::string(
             R"(Usage: partita explain [in.mlir|-] [--value NAME] [options]

Runs propagation and explains, for each tensor (or the one NAME selects),
its sharding in JAX spelling, local shape, bytes per device, where the
sharding came from and, where the op computing it had to choose, every
option it priced with its estimated time; then partitions and lists every
collective with its reason and bytes.

NAME is a value's name (its NameLoc, e.g. layer3.mlp.w1), argN or resultN
(@f:argN when the module has several functions), or its full description.

Options:
)") + api::renderOptions("explain") +
         R"(
Examples:
  partita explain docs/examples/megatron-mlp.mlir --value mlp.gelu
  partita explain docs/examples/transformer-layer.mlir
)";
}

} // namespace

int partita::cli::explainCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  PipelineOptions options;
  if (std::optional<int> done = startCommand(args, "explain", explainUsage(),
                                             Stage::Propagated, cl, options))
    return *done;
  Session session;
  OwningOpRef<ModuleOp> module = loadModule(session, cl.input);
  if (!module)
    return 1;
  std::optional<std::string> value;
  if (cl.has("--value"))
    value = cl.get("--value");
  if (Status status =
          explainModule(session, *module, options, value, llvm::outs());
      !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
