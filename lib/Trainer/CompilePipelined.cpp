//===- CompilePipelined.cpp - A module's pipelined train step -------------===//
//
// `partita compile --train --pp P` once its flags are parsed: the module's
// loss function cut into stages, each stage's programs compiled for one
// pipeline rank's sub-mesh, the stages and the schedule printed, the step
// written for `partita-exec train`, the figures and the HTML page written
// (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Dialect/Partita/Utils/ModuleShardings.h"
#include "partita/Pipelining/Pipelining.h"
#include "partita/Planning/PipelineFigures.h"
#include "partita/Reporting/HtmlReport.h"
#include "partita/Runtime/Pipeline/PipelinedStepFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;

namespace {


} // namespace

Status partita::compilePipelinedModule(Session &session, mlir::ModuleOp module,
                                       const PipelineOptions &options,
                                       const Mesh &mesh,
                                       const PipelinedCompileRequest &request) {
  Expected<Mesh> rankMesh = pipelineRankMesh(mesh);
  if (!rankMesh)
    return rankMesh.status();

  PipelineOptions setMesh;
  setMesh.mesh = rankMesh->toString();
  setMesh.stage = Stage::Verified;
  setMesh.rules = "";
  if (!runPipeline(session, module, setMesh))
    return Status::error("");
  // --html draws the whole model as each rank's SPMD program (before the
  // cut), with the stages and the schedule.
  mlir::OwningOpRef<mlir::ModuleOp> whole;
  if (!request.htmlPath.empty())
    whole = module.clone();
  mlir::func::FuncOp loss;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    if (!function.isExternal() && (!loss || function.isPublic()))
      loss = function;
  if (!loss)
    return Status::error("the module has no function to train");
  PipelineCompileOptions compile;
  compile.schedule = request.schedule;
  compile.ranks = static_cast<int>(request.ranks);
  compile.virtualStages = request.virtualStages;
  compile.microBatches = options.trainMicroBatches;
  compile.optimizer.optimizer = options.trainOptimizer;
  compile.optimizer.learningRate = options.trainLearningRate;
  compile.optimizer.remat = options.trainRemat;
  compile.optimizer.mixedPrecision = options.trainMixedPrecision;
  compile.optimizer.clipNorm = options.trainClipNorm;
  compile.passes = options;
  compile.passes.trainOptimizer = TrainOptimizer::None;
  compile.passes.mesh.clear();
  compile.devicesPerRank = rankMesh->numDevices();
  compile.passes.stage =
      compile.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  compile.lowering.fuse = request.fusion;
  if (!request.programsDirectory.empty()) {
    compile.programsDirectory = request.programsDirectory;
    if (std::error_code error =
            llvm::sys::fs::create_directories(compile.programsDirectory))
      return Status::error("cannot create '" + compile.programsDirectory +
                           "': " + error.message());
  }
  bool sharded = !options.rules.empty() || hasShardings(module);
  Expected<PipelinedStep> step = compilePipelined(loss, compile);
  if (!step)
    return step.status();
  // Several devices per rank and nothing to split over them: each would
  // run the rank's whole work (it compiled to 0 collectives, silently).
  if (rankMesh->numDevices() > 1 && !sharded)
    return Status::error(
        "--pp " + std::to_string(request.ranks) +
        " leaves each rank the mesh " + rankMesh->toString() + " of " +
        std::to_string(rankMesh->numDevices()) +
        " devices, but nothing in the program is sharded, so each would "
        "do all of its rank's work: give --rules (dp, fsdp, dp+tp, ...) or "
        "shardings in the program");
  Expected<PipelineFigures> figures = scheduleFigures(*step);
  if (!figures)
    return figures.status();
  if (!request.outputDirectory.empty())
    if (Status written = writePipelinedStep(*step, request.outputDirectory);
        !written.ok())
      return written;
  std::string summary;
  llvm::raw_string_ostream os(summary);
  os << "pipeline of " << step->schedule.stages() << " stages on "
     << request.ranks << " ranks of mesh " << rankMesh->toString() << ", "
     << scheduleKindName(request.schedule) << ", " << compile.microBatches
     << " micro-batches\n";
  printPipelineStages(os, *step, *figures);
  os << "schedule (one unit per stage forward, two per backward):\n"
     << renderTimeline(figures->uniform, 72);
  os.flush();
  llvm::outs() << summary;
  if (whole) {
    PipelineOptions rankOptions = options;
    rankOptions.mesh.clear();
    rankOptions.trainOptimizer = TrainOptimizer::None;
    rankOptions.stage = Stage::Verified;
    mlir::OwningOpRef<mlir::ModuleOp> global = whole->clone();
    if (!writeHtmlFile(session, request.title, request.htmlPath, rankOptions,
                       *whole, *global, summary))
      return Status::error("");
  }
  if (!request.reportPath.empty() &&
      !writePipelineReport(request.reportPath, *step, *figures, nullptr))
    return Status::error("");
  return Status::success();
}
