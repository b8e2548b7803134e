//===- Compile.cpp - partita compile --------------------------------------===//

#include "partita/API/Compile.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"

#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;
using namespace partita::cli;

int partita::cli::compileCommand(const CommandLine &cl,
                                 PipelineOptions &options) {
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


} // namespace

int partita::cli::importCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  int exitCode = 0;
  if (!parseCommandLine(args, {}, {}, cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << api::helpPage("import");
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
