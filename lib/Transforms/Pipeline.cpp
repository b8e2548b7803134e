//===- Pipeline.cpp - The standard compilation pipeline -------------------===//

#include "partita/Transforms/Pipeline.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace partita;

std::optional<Stage> partita::parseStage(llvm::StringRef name) {
  if (name == "verified")
    return Stage::Verified;
  if (name == "propagated")
    return Stage::Propagated;
  if (name == "partitioned")
    return Stage::Partitioned;
  return std::nullopt;
}

llvm::StringRef partita::stageName(Stage stage) {
  switch (stage) {
  case Stage::Verified:
    return "verified";
  case Stage::Propagated:
    return "propagated";
  case Stage::Partitioned:
    return "partitioned";
  }
  return "?";
}

llvm::StringRef partita::availableStages() {
  return "verified, propagated, partitioned";
}

void partita::buildPipeline(mlir::OpPassManager &passes,
                            const PipelineOptions &options) {
  if (!options.mesh.empty()) {
    SetMeshPassOptions meshOptions;
    meshOptions.meshSpec = options.mesh;
    passes.addPass(createSetMeshPass(meshOptions));
  }
  if (!options.trainOptimizer.empty()) {
    TrainStepPassOptions train;
    train.optimizer = options.trainOptimizer;
    train.learningRate = options.trainLearningRate;
    train.mixedPrecision = options.trainMixedPrecision;
    train.microBatches = options.trainMicroBatches;
    train.remat = options.trainRemat;
    passes.addPass(createTrainStepPass(train));
  }
  ApplyRulesPassOptions rulesOptions;
  rulesOptions.rules = options.rules;
  passes.addPass(createApplyRulesPass(rulesOptions));
  if (options.stage == Stage::Verified)
    return;
  PropagatePassOptions propagate;
  propagate.interconnectFile = options.interconnectFile;
  propagate.strict = options.strict;
  propagate.reportConflicts = options.reportConflicts;
  passes.addPass(createPropagatePass(propagate));
  if (options.stage == Stage::Propagated)
    return;
  PartitionPassOptions partition;
  partition.interconnectFile = options.interconnectFile;
  passes.addPass(createPartitionPass(partition));
  passes.addPass(createCleanupCollectivesPass());
}

namespace {
struct PipelineCommandLine
    : public mlir::PassPipelineOptions<PipelineCommandLine> {
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("Replace the mesh first")};
  Option<std::string> train{
      *this, "train",
      llvm::cl::desc("Make a train step first with this optimizer (adamw, sgd)")};
  Option<double> lr{*this, "lr",
                    llvm::cl::desc("The train step's constant learning rate"),
                    llvm::cl::init(0.0)};
  Option<std::string> rules{
      *this, "rules",
      llvm::cl::desc("Logical axis rules: a preset or a JSON file")};
  Option<std::string> interconnect{*this, "interconnect",
                                   llvm::cl::desc("Interconnect spec (JSON)")};
  Option<bool> strict{*this, "strict", llvm::cl::desc("Warnings become errors"),
                      llvm::cl::init(false)};
  Option<std::string> stage{
      *this, "stage",
      llvm::cl::desc("Last stage: verified, propagated or partitioned"),
      llvm::cl::init("partitioned")};
};
} // namespace

void partita::registerPipeline() {
  mlir::PassPipelineRegistration<PipelineCommandLine>(
      "partita-pipeline", "Partita's standard pipeline up to a stage",
      [](mlir::OpPassManager &passes, const PipelineCommandLine &cl) {
        PipelineOptions options;
        options.mesh = cl.mesh;
        options.rules = cl.rules;
        options.trainOptimizer = cl.train;
        options.trainLearningRate = cl.lr;
        options.interconnectFile = cl.interconnect;
        options.strict = cl.strict;
        options.stage = parseStage(cl.stage).value_or(Stage::Partitioned);
        buildPipeline(passes, options);
      });
}
