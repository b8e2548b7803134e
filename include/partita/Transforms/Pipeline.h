//===- Pipeline.h - The standard compilation pipeline -----------*- C++ -*-===//
//
// One place that knows the order of Partita's passes, used by the CLI, by
// partita-opt (`--partita-pipeline`) and by embedders. What the pipeline
// can be asked to do is one list, PipelineOptions.def.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_PIPELINE_H
#define PARTITA_TRANSFORMS_PIPELINE_H

#include "partita/Sharding/Status.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace partita {

struct Interconnect;

/// Where the pipeline stops.
enum class Stage {
  /// Parsed and verified only.
  Verified,
  /// Every tensor has a sharding (partita-propagate).
  Propagated,
  /// The per-device program (partita-partition, partita-cleanup-collectives).
  Partitioned,
};

/// The optimizer of a train step made first, or none.
enum class TrainOptimizer { None, SGD, AdamW };

/// Activation checkpointing of a train step (docs/Training.md).
enum class Remat { None, PerLayer, Full };

/// The stage called `name`, if any.
std::optional<Stage> parseStage(llvm::StringRef name);
/// The name of `stage` ("verified", ...).
llvm::StringRef stageName(Stage stage);
/// The stage names, comma separated, for messages.
llvm::StringRef availableStages();

/// "none", "sgd", "adamw" and back.
std::optional<TrainOptimizer> parseTrainOptimizer(llvm::StringRef name);
llvm::StringRef trainOptimizerName(TrainOptimizer optimizer);
/// "none", "per-layer", "full" and back.
std::optional<Remat> parseRemat(llvm::StringRef name);
llvm::StringRef rematName(Remat remat);

/// What the pipeline does: one field per row of PipelineOptions.def.
struct PipelineOptions {
#define PARTITA_PIPELINE_OPTION(TYPE, FIELD, DEFAULT, FLAG, HELP)              \
  TYPE FIELD = DEFAULT;
#include "partita/Transforms/PipelineOptions.def"
  /// The interconnect spec, parsed once (resolveInterconnect()) and given
  /// to every pass that costs collectives as a value; unset: the passes
  /// read `interconnectFile` themselves (partita-opt's textual pipeline),
  /// or use the default link when it is empty.
  std::shared_ptr<const Interconnect> interconnect;
};

/// Parses `options.interconnectFile` into `options.interconnect`, unless
/// that is set already; the default link when the path is empty. The error
/// names the file and the field.
Status resolveInterconnect(PipelineOptions &options);

/// The interconnect of `options`: its parsed value, else the default link
/// (call resolveInterconnect() first where a path may be given).
const Interconnect &interconnectOf(const PipelineOptions &options);

/// Adds the passes up to `options.stage` to a module-level pass manager.
void buildPipeline(mlir::OpPassManager &passes, const PipelineOptions &options);

/// Registers `--partita-pipeline` for MlirOptMain-based tools, with one
/// option per row of PipelineOptions.def.
void registerPipeline();

} // namespace partita

#endif // PARTITA_TRANSFORMS_PIPELINE_H
