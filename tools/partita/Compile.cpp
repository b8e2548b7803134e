//===- Compile.cpp - partita compile --------------------------------------===//

#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"
#include "partita/Reporting/HtmlReport.h"

#include "partita/Analysis/Report.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Transforms/Interconnect.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/ToolOutputFile.h"
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
  // --html draws the global program with its shardings: a copy taken
  // through propagation only.
  mlir::OwningOpRef<mlir::ModuleOp> global;
  if (module && cl.has("--html"))
    global = module->clone();
  if (!module || !runPipeline(session, *module, options, &timing))
    return 1;
  if (global) {
    mlir::TimingScope drawing = timing.nest("HTML report");
    if (!writeHtmlFile(session, inputTitle(cl), cl.get("--html"), options,
                       *module, *global, ""))
      return 1;
  }

  if (cl.has("--report")) {
    mlir::TimingScope reporting = timing.nest("report");
    Interconnect interconnect;
    if (!options.interconnectFile.empty()) {
      Expected<Interconnect> parsed =
          readInterconnect(options.interconnectFile);
      if (!parsed)
        return usageError(parsed.status().message());
      interconnect = *parsed;
    }
    if (!writeOutputFile(cl.get("--report"), [&](llvm::raw_ostream &os) {
          os << analyzeModule(*module, interconnect).toJson();
        }))
      return 1;
  }

  if (executable) {
    if (cl.output == "-")
      return usageError(
          "--stage executable writes a binary file: give -o FILE");
    LoweringOptions lowerOptions;
    lowerOptions.fuse = !cl.on("--no-fusion");
    mlir::TimingScope lowering = timing.nest("lower to the Executable");
    Expected<Executable> program = lowerToExecutable(*module, lowerOptions);
    lowering.stop();
    if (!program) {
      llvm::errs() << "error: " << program.status().message() << "\n";
      return 1;
    }
    mlir::TimingScope writing = timing.nest("write the Executable");
    Status written = writeExecutableFile(*program, cl.output);
    if (!written.ok())
      return usageError(written.message());
    return 0;
  }
  mlir::TimingScope writing = timing.nest("print the module");
  if (!writeOutputFile(cl.output, [&](llvm::raw_ostream &os) {
        module->print(os);
        os << "\n";
      }))
    return 1;

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
