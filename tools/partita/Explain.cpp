//===- Explain.cpp - partita explain --------------------------------------===//
//
// The flags in; the explanation is the reporting layer's
// (partita/Reporting/Explain.h).
//
//===----------------------------------------------------------------------===//

#include "Flags.h"

#include "partita/Reporting/Explain.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {

constexpr const char *kExplainUsage =
    R"(Usage: partita explain [in.mlir|-] [--value NAME] [options]

Runs propagation and explains, for each tensor (or the one NAME selects),
its sharding in JAX spelling, local shape, bytes per device, where the
sharding came from and, where the op computing it had to choose, every
option it priced with its estimated time; then partitions and lists every
collective with its reason and bytes.

NAME is a value's name (its NameLoc, e.g. layer3.mlp.w1), argN or resultN
(@f:argN when the module has several functions), or its full description.

Options:
  --value <name>         explain one value
  --mesh <spec>          replace the module's mesh first
  --rules <preset|file>  map logical axis names (partita gen's models) to
                         mesh axes: dp, zero1, zero2, fsdp, tp, dp+tp,
                         fsdp+tp, tp+sp, ep, or a JSON rules file
  --interconnect <file>  link figures for the cost model (JSON)
  --strict               warnings become errors
  -h, --help             show this help

Examples:
  partita explain docs/examples/megatron-mlp.mlir --value mlp.gelu
  partita explain docs/examples/transformer-layer.mlir
)";

} // namespace

int partita::cli::explainCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  PipelineOptions options;
  if (std::optional<int> done = startCommand(args, {"--value"}, kExplainUsage,
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
