//===- ValueNames.h - How values and ops are named to users -----*- C++ -*-===//
//
// Propagation records origins by name, and `partita explain`/`show` find
// values by name, so both use these functions.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_PARTITA_UTILS_VALUENAMES_H
#define PARTITA_DIALECT_PARTITA_UTILS_VALUENAMES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <string>

namespace partita {

/// "file:line:col", or the name of a NameLoc.
std::string describeLocation(mlir::Location loc);

/// "<op name> at <location>".
std::string describeOp(mlir::Operation *op);

/// The user-facing name of a value: the NameLoc of its op (with "#i" for
/// multi-result ops), "argument N (name) of @f" for function arguments, or
/// the op's description.
std::string describeValue(mlir::Value value);

/// The short name `--value` matches: the NameLoc name, or "" when none.
std::string shortName(mlir::Value value);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_UTILS_VALUENAMES_H
