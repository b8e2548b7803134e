//===- Pipeline.h - The standard compilation pipeline -----------*- C++ -*-===//
//
// One place that knows the order of Partita's passes, used by the CLI, by
// partita-opt (`--partita-pipeline`) and by embedders.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_PIPELINE_H
#define PARTITA_TRANSFORMS_PIPELINE_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace partita {

/// Where the pipeline stops.
enum class Stage {
  /// Parsed and verified only.
  Verified,
  /// Every tensor has a sharding (partita-propagate).
  Propagated,
  /// The per-device program (partita-partition, partita-cleanup-collectives).
  Partitioned,
};

/// The stage called `name`, if any.
std::optional<Stage> parseStage(llvm::StringRef name);
/// The name of `stage` ("verified", ...).
llvm::StringRef stageName(Stage stage);
/// The stage names, comma separated, for messages.
llvm::StringRef availableStages();

/// What the pipeline does.
struct PipelineOptions {
  /// Replaces the module's mesh first (partita-set-mesh); empty: keep it.
  std::string mesh;
  /// Turn the loss function into a train step first (partita-train-step)
  /// with this optimizer ("adamw" or "sgd"); empty: no.
  std::string trainOptimizer;
  /// The train step's constant learning rate (0: an `lr` input).
  double trainLearningRate = 0;
  /// f32 master weights and state for a bf16 loss.
  bool trainMixedPrecision = false;
  /// Gradient accumulation over this many micro-batches.
  int64_t trainMicroBatches = 1;
  /// Activation checkpointing of the train step: none, per-layer, full.
  std::string trainRemat = "none";
  /// Logical axis rules (a preset or a JSON file) applied next
  /// (partita-apply-rules); empty: only logical constraints are removed.
  std::string rules;
  /// Interconnect spec for the cost model; empty: the default links.
  std::string interconnectFile;
  /// Turn warnings about unwanted moves and padding into errors.
  bool strict = false;
  /// Emit a remark for each conflict settled by cost.
  bool reportConflicts = false;
  /// The last stage to run.
  Stage stage = Stage::Verified;
};

/// Adds the passes up to `options.stage` to a module-level pass manager.
void buildPipeline(mlir::OpPassManager &passes, const PipelineOptions &options);

/// Registers `--partita-pipeline` (with options mesh, interconnect, strict,
/// stage) for MlirOptMain-based tools.
void registerPipeline();

} // namespace partita

#endif // PARTITA_TRANSFORMS_PIPELINE_H
