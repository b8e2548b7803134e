//===- Compile.cpp - partita compile --------------------------------------===//

#include "Driver.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;
using namespace partita::cli;

namespace {
constexpr const char *kCompileUsage =
    R"(Usage: partita compile [in.mlir|-] [options]

Runs Partita's pipeline on a module in the partita dialect up to a stage and
prints the result.

Options:
  -o <file>              write the result to <file> (default: stdout)
  --stage <stage>        stop after <stage>: verified (default) or propagated
  --mesh <spec>          replace the module's mesh: data=2,model=4, or
                         NAME:data=2,model=4 when the module has several
  --interconnect <file>  per-axis link bandwidth and latency (JSON) for the
                         cost model; default 450 GB/s and 5 us per axis
  --strict               ops without a sharding rule, unwanted all-gathers
                         of annotated tensors, and padding are errors
  -h, --help             show this help
)";
} // namespace

int partita::cli::runCompile(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  std::vector<std::string> valueFlags = pipelineValueFlags();
  valueFlags.push_back("--stage");
  if (!parseCommandLine(args, valueFlags, {"--strict"}, cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << kCompileUsage;
    return 0;
  }
  std::string stageText = cl.get("--stage", "verified");
  std::optional<Stage> stage = parseStage(stageText);
  if (!stage)
    return usageError("unknown stage '" + stageText +
                      "'; available: " + availableStages());
  PipelineOptions options;
  if (!pipelineOptions(cl, *stage, options, exitCode))
    return exitCode;

  Session session;
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModule(session, cl.input);
  if (!module || !runPipeline(session, *module, options))
    return 1;

  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(cl.output, &errorMessage);
  if (!output) {
    llvm::errs() << "error: cannot write '" << cl.output
                 << "': " << errorMessage << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
