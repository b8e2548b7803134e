//===- Compile.cpp - partita compile, over a request ----------------------===//
//
// A module compiled with the pipeline's options and what `partita compile`
// writes of it: the module at its stage or the Executable, the report as
// JSON, the HTML page (docs/Report.md).
//
//===----------------------------------------------------------------------===//

#include "partita/API/Compile.h"

#include "partita/Analysis/Report.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/Utils/ModuleShardings.h"
#include "partita/Reporting/HtmlReport.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Transforms/Interconnect.h"

#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;

Status partita::compileAndWrite(Session &session, mlir::ModuleOp module,
                                const PipelineOptions &options,
                                const CompileRequest &request,
                                mlir::TimingScope &timing) {
  // --html draws the global program with its shardings: a copy taken
  // through propagation only.
  mlir::OwningOpRef<mlir::ModuleOp> global;
  if (!request.htmlPath.empty())
    global = module.clone();
  // Nothing to split the work by: every device would run all of it.
  bool sharded = !options.rules.empty() || hasShardings(module);
  if (!runPipeline(session, module, options, &timing))
    return Status::error("");
  if (int64_t devices = largestMeshDevices(module); !sharded && devices > 1)
    session.errors << "warning: nothing in the program is sharded, so each of "
                      "the mesh's "
                   << devices
                   << " devices does all of the work: give --rules (dp, "
                      "fsdp, dp+tp, ...) or shardings in the program\n";
  if (global) {
    mlir::TimingScope drawing = timing.nest("HTML report");
    if (!writeHtmlFile(session, request.title, request.htmlPath, options,
                       module, *global, ""))
      return Status::error("");
  }

  if (!request.reportPath.empty()) {
    mlir::TimingScope reporting = timing.nest("report");
    if (!writeOutputFile(request.reportPath, [&](llvm::raw_ostream &os) {
          os << analyzeModule(module, interconnectOf(options)).toJson();
        }))
      return Status::error("");
  }

  if (request.executable) {
    if (request.output == "-")
      return Status::error(
          "--stage executable writes a binary file: give -o FILE");
    LoweringOptions lowerOptions;
    lowerOptions.fuse = request.fusion;
    mlir::TimingScope lowering = timing.nest("lower to the Executable");
    Expected<Executable> program = lowerToExecutable(module, lowerOptions);
    lowering.stop();
    if (!program)
      return program.status();
    mlir::TimingScope writing = timing.nest("write the Executable");
    return writeExecutableFile(*program, request.output);
  }
  mlir::TimingScope writing = timing.nest("print the module");
  if (!writeOutputFile(request.output, [&](llvm::raw_ostream &os) {
        module->print(os);
        os << "\n";
      }))
    return Status::error("");
  return Status::success();
}
