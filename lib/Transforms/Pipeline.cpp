//===- Pipeline.cpp - The standard compilation pipeline -------------------===//

#include "partita/Transforms/Pipeline.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace partita;

namespace {

/// An enum's values and their names, one table per enum: parsing and
/// printing read the same rows.
template <typename Enum> struct EnumName {
  Enum value;
  const char *name;
};
constexpr EnumName<Stage> kStageNames[] = {
    {Stage::Verified, "verified"},
    {Stage::Propagated, "propagated"},
    {Stage::Partitioned, "partitioned"}};
constexpr EnumName<TrainOptimizer> kOptimizerNames[] = {
    {TrainOptimizer::None, "none"},
    {TrainOptimizer::SGD, "sgd"},
    {TrainOptimizer::AdamW, "adamw"}};
constexpr EnumName<Remat> kRematNames[] = {{Remat::None, "none"},
                                           {Remat::PerLayer, "per-layer"},
                                           {Remat::Full, "full"}};

template <typename Enum, size_t N>
std::optional<Enum> valueNamed(const EnumName<Enum> (&names)[N],
                               llvm::StringRef name) {
  for (const EnumName<Enum> &row : names)
    if (name == row.name)
      return row.value;
  return std::nullopt;
}

template <typename Enum, size_t N>
llvm::StringRef nameOf(const EnumName<Enum> (&names)[N], Enum value) {
  for (const EnumName<Enum> &row : names)
    if (row.value == value)
      return row.name;
  return "?";
}

} // namespace

std::optional<Stage> partita::parseStage(llvm::StringRef name) {
  return valueNamed(kStageNames, name);
}

llvm::StringRef partita::stageName(Stage stage) {
  return nameOf(kStageNames, stage);
}

llvm::StringRef partita::availableStages() {
  return "verified, propagated, partitioned";
}

std::optional<TrainOptimizer>
partita::parseTrainOptimizer(llvm::StringRef name) {
  return valueNamed(kOptimizerNames, name);
}

llvm::StringRef partita::trainOptimizerName(TrainOptimizer optimizer) {
  return nameOf(kOptimizerNames, optimizer);
}

std::optional<Remat> partita::parseRemat(llvm::StringRef name) {
  return valueNamed(kRematNames, name);
}

llvm::StringRef partita::rematName(Remat remat) {
  return nameOf(kRematNames, remat);
}

Status partita::resolveInterconnect(PipelineOptions &options) {
  if (options.interconnect)
    return Status::success();
  if (options.interconnectFile.empty()) {
    options.interconnect = std::make_shared<const Interconnect>();
    return Status::success();
  }
  Expected<Interconnect> parsed = readInterconnect(options.interconnectFile);
  if (!parsed)
    return parsed.status();
  options.interconnect = std::make_shared<const Interconnect>(*parsed);
  return Status::success();
}

const Interconnect &partita::interconnectOf(const PipelineOptions &options) {
  static const Interconnect defaults;
  return options.interconnect ? *options.interconnect : defaults;
}

void partita::buildPipeline(mlir::OpPassManager &passes,
                            const PipelineOptions &options) {
  if (!options.mesh.empty()) {
    SetMeshPassOptions meshOptions;
    meshOptions.meshSpec = options.mesh;
    passes.addPass(createSetMeshPass(meshOptions));
  }
  if (options.trainOptimizer != TrainOptimizer::None) {
    TrainStepPassOptions train;
    train.optimizer = options.trainOptimizer;
    train.learningRate = options.trainLearningRate;
    train.mixedPrecision = options.trainMixedPrecision;
    train.clipNorm = options.trainClipNorm;
    train.microBatches = options.trainMicroBatches;
    train.remat = options.trainRemat;
    passes.addPass(createTrainStepPass(train));
  }
  ApplyRulesPassOptions rulesOptions;
  rulesOptions.rules = options.rules;
  rulesOptions.maxPadding = options.maxPadding;
  passes.addPass(createApplyRulesPass(rulesOptions));
  if (options.stage == Stage::Verified)
    return;
  PropagatePassOptions propagate;
  if (!options.interconnect)
    propagate.interconnectFile = options.interconnectFile;
  propagate.strict = options.strict;
  propagate.maxPadding = options.maxPadding;
  propagate.reportConflicts = options.reportConflicts;
  passes.addPass(createSplitAxesPass());
  passes.addPass(createPropagatePass(propagate, options.interconnect));
  if (options.stage == Stage::Propagated) {
    passes.addPass(createJoinAxesPass());
    return;
  }
  PartitionPassOptions partition;
  if (!options.interconnect)
    partition.interconnectFile = options.interconnectFile;
  passes.addPass(createPartitionPass(partition, options.interconnect));
  passes.addPass(createCleanupCollectivesPass());
  if (options.combineBytes != 0) {
    CombineCollectivesPassOptions combine;
    combine.bucketBytes = options.combineBytes;
    if (!options.interconnect)
      combine.interconnectFile = options.interconnectFile;
    if (options.overlap)
      combine.minBuckets = 4;
    passes.addPass(createCombineCollectivesPass(combine, options.interconnect));
  }
  if (options.overlap)
    passes.addPass(createOverlapCollectivesPass());
  passes.addPass(createJoinAxesPass());
}

namespace {

/// The values an enum option of `--partita-pipeline` accepts; options of
/// other types take none (the overload for them applies nothing).
struct NoValues {
  template <class Opt> void apply(Opt &) const {}
};
template <typename T> NoValues valuesOf(T *) { return {}; }
auto valuesOf(Stage *) {
  return llvm::cl::values(
      clEnumValN(Stage::Verified, "verified", "parsed and verified"),
      clEnumValN(Stage::Propagated, "propagated", "every tensor sharded"),
      clEnumValN(Stage::Partitioned, "partitioned", "the per-device program"));
}
auto valuesOf(TrainOptimizer *) {
  return llvm::cl::values(
      clEnumValN(TrainOptimizer::None, "none", "no train step"),
      clEnumValN(TrainOptimizer::SGD, "sgd", "SGD with momentum"),
      clEnumValN(TrainOptimizer::AdamW, "adamw", "AdamW"));
}
auto valuesOf(Remat *) {
  return llvm::cl::values(
      clEnumValN(Remat::None, "none", "keep every forward value"),
      clEnumValN(Remat::PerLayer, "per-layer", "recompute each layer"),
      clEnumValN(Remat::Full, "full", "recompute everything"));
}

/// `--partita-pipeline`'s options: one per row of PipelineOptions.def. A
/// misspelt enum value (a stage, an optimizer) is a parse error.
struct PipelineCommandLine
    : public mlir::PassPipelineOptions<PipelineCommandLine> {
#define PARTITA_PIPELINE_OPTION(TYPE, FIELD, DEFAULT, FLAG, HELP)              \
  Option<TYPE> FIELD{*this, FLAG, llvm::cl::desc(HELP),                        \
                     llvm::cl::init(DEFAULT), valuesOf((TYPE *)nullptr)};
#include "partita/Transforms/PipelineOptions.def"
};

} // namespace

void partita::registerPipeline() {
  mlir::PassPipelineRegistration<PipelineCommandLine>(
      "partita-pipeline", "Partita's standard pipeline up to a stage",
      [](mlir::OpPassManager &passes, const PipelineCommandLine &cl) {
        PipelineOptions options;
#define PARTITA_PIPELINE_OPTION(TYPE, FIELD, DEFAULT, FLAG, HELP)              \
  options.FIELD = cl.FIELD;
#include "partita/Transforms/PipelineOptions.def"
        buildPipeline(passes, options);
      });
}
