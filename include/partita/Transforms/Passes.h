//===- Passes.h - Partita's passes ------------------------------*- C++ -*-===//
#ifndef PARTITA_TRANSFORMS_PASSES_H
#define PARTITA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Transforms/Pipeline.h"

#include <memory>

namespace partita {

#define GEN_PASS_DECL
#include "partita/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "partita/Transforms/Passes.h.inc"

/// The passes that cost collectives, given the interconnect as a value
/// (their `interconnect` option, a path, is for textual pipelines).
std::unique_ptr<mlir::Pass>
createPropagatePass(const PropagatePassOptions &options,
                    std::shared_ptr<const Interconnect> links);
std::unique_ptr<mlir::Pass>
createPartitionPass(const PartitionPassOptions &options,
                    std::shared_ptr<const Interconnect> links);
std::unique_ptr<mlir::Pass>
createCombineCollectivesPass(const CombineCollectivesPassOptions &options,
                             std::shared_ptr<const Interconnect> links);

} // namespace partita

#endif // PARTITA_TRANSFORMS_PASSES_H
