//===- Compile.cpp - partita compile --------------------------------------===//

#include "partita/API/Compile.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"

#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;
using namespace partita::cli;

namespace {
/// The --help page: the options from CommandOptions.def.
std::string compileUsage() {
  return std::string(R"(Usage: partita compile [in.mlir|-] [options]

Runs Partita's pipeline on a module in the partita dialect up to a stage and
prints the result.

Options:
)") + api::renderOptions("compile") +
         R"(
Examples:
  partita compile docs/examples/transformer-layer.mlir --report report.json
  partita gen gpt --layers 4 | partita compile --train --pp 2 --mesh pipe=2,data=4 --rules dp
)";
}
} // namespace

int partita::cli::compileCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  PipelineOptions options;
  if (std::optional<int> done = startCommand(args, "compile", compileUsage(),
                                             Stage::Partitioned, cl, options))
    return *done;
  std::string from = cl.get("--from", "auto");
  if (from != "auto" && from != "partita" && from != "stablehlo")
    return usageError("--from must be partita, stablehlo or auto, got '" +
                      from + "'");
  std::string stageText = cl.get("--stage", "partitioned");
  bool executable = stageText == "executable";
  std::optional<Stage> stage = executable
                                   ? std::optional<Stage>(Stage::Partitioned)
                                   : parseStage(stageText);
  if (!stage)
    return usageError("unknown stage '" + stageText +
                      "'; available: " + availableStages() + ", executable");
  options.stage = *stage;

  // Wall time per stage (--timing): MLIR's timing manager, printed as a
  // tree to stderr when it goes out of scope.
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(cl.on("--timing"));
  mlir::TimingScope timing = timingManager.getRootScope();

  Session session;
  session.from = from;
  mlir::TimingScope reading = timing.nest("read and verify the input");
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModule(session, cl.input);
  reading.stop();
  if (module && cl.has("--pp"))
    return compilePipelinedCommand(cl, options, session, *module);
  if (!module)
    return 1;
  CompileRequest request;
  request.output = cl.output;
  request.executable = executable;
  request.fusion = !cl.on("--no-fusion");
  request.reportPath = cl.get("--report");
  request.htmlPath = cl.get("--html");
  request.title = inputTitle(cl);
  if (Status status =
          compileAndWrite(session, *module, options, request, timing);
      !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

namespace {

constexpr const char *kImportUsage =
    R"(Usage: partita import [in.mlir|-] [-o out.mlir]

Converts a program JAX lowered to the partita dialect and prints it (with
locations). The input is StableHLO in MLIR's generic op form, as

  lowered = jax.jit(f, in_shardings=...).lower(*args)
  text = lowered.compiler_ir("stablehlo").operation.get_asm(
      print_generic_op_form=True, enable_debug_info=True)

writes it: sdy.mesh, sdy.sharding and sdy.sharding_constraint become
partita meshes, shardings and constraints; the supported StableHLO ops are
listed in docs/JAX.md. Every unsupported op or attribute is reported with
its location, then the count, and the exit code is 1. compile, run, explain
and show read such files directly as well.

Examples:
  partita import test/Conversion/StableHLOToPartita/gpt_loss_dp_tp/module.mlir
  partita import test/Conversion/StableHLOToPartita/gpt_grad_dp_tp/module.mlir -o grad.mlir
)";

} // namespace

int partita::cli::importCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  if (!parseCommandLine(args, {}, {}, cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << kImportUsage;
    return 0;
  }
  Session session;
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModule(session, cl.input);
  if (!module)
    return 1;
  if (!writeOutputFile(cl.output, [&](llvm::raw_ostream &os) {
        module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
        os << "\n";
      }))
    return 1;
  return 0;
}
