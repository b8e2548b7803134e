//===- CompilePipelined.cpp - partita compile --train --pp ----------------===//
//
// `partita compile --train --pp P`: the flags in (the mesh's `pipe` axis,
// the schedule); compiling and writing the step are the trainer layer's
// (compilePipelinedModule, partita/Trainer/Trainer.h; docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"

#include "partita/Dialect/Partita/IR/PartitaOps.h"

#include "llvm/Support/raw_ostream.h"

using namespace partita;
using namespace partita::cli;

int partita::cli::compilePipelinedCommand(const CommandLine &cl,
                                          const PipelineOptions &options,
                                          Session &session,
                                          mlir::ModuleOp module) {
  if (options.trainOptimizer == TrainOptimizer::None)
    return usageError("--pp compiles a pipelined train step: add --train");
  // The pipeline axis comes out of the mesh; each rank gets the rest.
  Expected<Mesh> mesh = options.mesh.empty() ? Expected<Mesh>(Mesh())
                                             : parseMeshSpec(options.mesh);
  if (options.mesh.empty())
    for (MeshOp op : module.getOps<MeshOp>())
      mesh = op.getMesh().toMesh();
  if (!mesh)
    return usageError(mesh.status().message());
  std::string ppText = cl.get("--pp");
  Expected<int64_t> pipe = api::parseIntegerFlag("--pp", ppText, 1, 1 << 20);
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
    Expected<int64_t> stages = api::parseIntegerFlag(
        "--virtual-stages", cl.get("--virtual-stages"), 1, 1024);
    if (!stages)
      return usageError(stages.status().message());
    virtualStages = static_cast<int>(*stages);
  }
  PipelinedCompileRequest request;
  request.ranks = *pipe;
  request.schedule = *kind;
  request.virtualStages = virtualStages;
  request.fusion = !cl.on("--no-fusion");
  request.programsDirectory = cl.get("--programs");
  request.htmlPath = cl.get("--html");
  request.reportPath = cl.get("--report");
  request.outputDirectory = cl.output == "-" ? "" : cl.output;
  request.title = inputTitle(cl);
  if (Status status =
          compilePipelinedModule(session, module, options, *mesh, request);
      !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
