//===- CompilePipelined.cpp - partita compile --train --pp ----------------===//
//
// `partita compile --train --pp P`: the pipelined step of a module's loss
// function compiled, its stages and schedule printed, the figures written
// (docs/Pipeline.md). Training it is the trainer layer's
// (partita/Trainer/Trainer.h).
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/Reporting/HtmlReport.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Pipelining/Pipelining.h"
#include "partita/Runtime/Pipeline/PipelinedStepFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <unistd.h>

using namespace partita;
using namespace partita::cli;

namespace {

/// True when any argument, result or op of `module` carries a sharding.
bool hasShardings(mlir::ModuleOp module) {
  // A sharding, or a list of them (a manual computation's in_shardings).
  auto isSharding = [](mlir::NamedAttribute attr) {
    if (auto list = llvm::dyn_cast<mlir::ArrayAttr>(attr.getValue()))
      return llvm::any_of(list, [](mlir::Attribute entry) {
        return llvm::isa<ShardingAttr>(entry);
      });
    return llvm::isa<ShardingAttr>(attr.getValue());
  };
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    if (auto function = llvm::dyn_cast<mlir::func::FuncOp>(op)) {
      for (unsigned i = 0; i < function.getNumArguments() && !found; ++i)
        found = function.getArgAttr(i, PartitaDialect::kShardingAttrName) !=
                nullptr;
      for (unsigned i = 0; i < function.getNumResults() && !found; ++i)
        found = function.getResultAttr(i, PartitaDialect::kShardingAttrName) !=
                nullptr;
    }
    found = found || llvm::any_of(op->getAttrs(), isSharding);
    return found ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return found;
}

} // namespace

int partita::cli::compilePipelinedCommand(const CommandLine &cl,
                                          const PipelineOptions &options,
                                          Session &session,
                                          mlir::ModuleOp module) {
  if (options.trainOptimizer == TrainOptimizer::None)
    return usageError("--pp compiles a pipelined train step: add --train");
  if (options.trainMixedPrecision || options.trainClipNorm > 0)
    return usageError("--pp does not combine with --mixed-precision or "
                      "--clip-norm yet");
  // The pipeline axis comes out of the mesh; each rank gets the rest.
  Expected<Mesh> mesh = options.mesh.empty() ? Expected<Mesh>(Mesh())
                                             : parseMeshSpec(options.mesh);
  if (options.mesh.empty())
    for (MeshOp op : module.getOps<MeshOp>())
      mesh = op.getMesh().toMesh();
  if (!mesh)
    return usageError(mesh.status().message());
  std::string ppText = cl.get("--pp");
  Expected<int64_t> pipe = tools::parseIntegerFlag("--pp", ppText, 1, 1 << 20);
  if (!pipe)
    return usageError(pipe.status().message());
  if (mesh->axisSize("pipe") != *pipe)
    return usageError("--pp " + ppText + " needs a 'pipe' axis of size " +
                      ppText + " in the mesh (got '" + mesh->toString() + "')");
  std::string name = cl.get("--schedule", "1f1b");
  std::optional<ScheduleKind> kind = parseScheduleKind(name);
  if (!kind)
    return usageError("unknown --schedule '" + name + "' (expected " +
                      availableSchedules() + ")");
  int virtualStages = *kind == ScheduleKind::Interleaved ? 2 : 1;
  if (cl.has("--virtual-stages")) {
    Expected<int64_t> stages = tools::parseIntegerFlag(
        "--virtual-stages", cl.get("--virtual-stages"), 1, 1024);
    if (!stages)
      return usageError(stages.status().message());
    virtualStages = static_cast<int>(*stages);
  }
  std::vector<MeshAxis> rest;
  for (const MeshAxis &axis : mesh->axes())
    if (axis.name != "pipe")
      rest.push_back(axis);
  if (rest.empty())
    rest.push_back(MeshAxis{"data", 1});
  Expected<Mesh> rankMesh = Mesh::create(rest);
  if (!rankMesh)
    return usageError(rankMesh.status().message());

  PipelineOptions setMesh;
  setMesh.mesh = rankMesh->toString();
  setMesh.stage = Stage::Verified;
  setMesh.rules = "";
  if (!runPipeline(session, module, setMesh))
    return 1;
  // --html draws the whole model as each rank's SPMD program (before the
  // cut), with the stages and the schedule.
  mlir::OwningOpRef<mlir::ModuleOp> whole;
  if (cl.has("--html"))
    whole = module.clone();
  mlir::func::FuncOp loss;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    if (!function.isExternal() && (!loss || function.isPublic()))
      loss = function;
  if (!loss)
    return usageError("the module has no function to train");
  PipelineCompileOptions compile;
  compile.schedule = *kind;
  compile.ranks = static_cast<int>(*pipe);
  compile.virtualStages = virtualStages;
  compile.microBatches = options.trainMicroBatches;
  compile.optimizer.optimizer = options.trainOptimizer;
  compile.optimizer.learningRate = options.trainLearningRate;
  compile.optimizer.remat = options.trainRemat;
  compile.passes = options;
  compile.passes.trainOptimizer = TrainOptimizer::None;
  compile.passes.mesh.clear();
  compile.devicesPerRank = rankMesh->numDevices();
  compile.passes.stage =
      compile.devicesPerRank > 1 ? Stage::Partitioned : Stage::Verified;
  compile.lowering.fuse = !cl.on("--no-fusion");
  if (cl.has("--programs")) {
    compile.programsDirectory = cl.get("--programs");
    if (std::error_code error =
            llvm::sys::fs::create_directories(compile.programsDirectory))
      return usageError("cannot create '" + compile.programsDirectory +
                        "': " + error.message());
  }
  bool sharded = !options.rules.empty() || hasShardings(module);
  Expected<PipelinedStep> step = compilePipelined(loss, compile);
  if (!step) {
    if (!step.status().message().empty())
      llvm::errs() << "error: " << step.status().message() << "\n";
    return 1;
  }
  // Several devices per rank and nothing to split over them: each would
  // run the rank's whole work (it compiled to 0 collectives, silently).
  if (rankMesh->numDevices() > 1 && !sharded)
    return usageError(
        "--pp " + ppText + " leaves each rank the mesh " +
        rankMesh->toString() + " of " + std::to_string(rankMesh->numDevices()) +
        " devices, but nothing in the program is sharded, so each would "
        "do all of its rank's work: give --rules (dp, fsdp, dp+tp, ...) or "
        "shardings in the program");
  Expected<PipelineFigures> figures = scheduleFigures(*step);
  if (!figures) {
    llvm::errs() << "error: " << figures.status().message() << "\n";
    return 1;
  }
  if (cl.output != "-")
    if (Status written = writePipelinedStep(*step, cl.output); !written.ok())
      return usageError(written.message());
  std::string summary;
  llvm::raw_string_ostream os(summary);
  os << "pipeline of " << step->schedule.stages() << " stages on " << *pipe
     << " ranks of mesh " << rankMesh->toString() << ", "
     << scheduleKindName(*kind) << ", " << compile.microBatches
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
    if (!writeHtmlFile(session, inputTitle(cl), cl.get("--html"), rankOptions,
                       *whole, *global, summary))
      return 1;
  }
  if (cl.has("--report") &&
      !writePipelineReport(cl.get("--report"), *step, *figures, nullptr))
    return 1;
  return 0;
}
