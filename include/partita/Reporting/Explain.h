//===- Explain.h - Where each sharding came from ----------------*- C++ -*-===//
//
// `partita explain` as a library (docs/Propagation.md): propagation run
// with its conflicts priced, then per value its sharding and where each
// split came from, and the partitioned program's collectives.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_REPORTING_EXPLAIN_H
#define PARTITA_REPORTING_EXPLAIN_H

#include "partita/Driver/Session.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace partita {

/// Propagates `module` (changed in place) with `pipeline` and writes to
/// `os` the explanation of the value named `value` (its name, argN or
/// resultN), or without one of every value and then the collectives of the
/// program partitioned. An empty message after the diagnostics were printed.
Status explainModule(Session &session, mlir::ModuleOp module,
                     const PipelineOptions &pipeline,
                     const std::optional<std::string> &value,
                     llvm::raw_ostream &os);

} // namespace partita

#endif // PARTITA_REPORTING_EXPLAIN_H
