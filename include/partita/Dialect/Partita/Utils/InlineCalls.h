//===- InlineCalls.h - Replace calls by their callees' bodies ---*- C++ -*-===//
#ifndef PARTITA_DIALECT_PARTITA_UTILS_INLINECALLS_H
#define PARTITA_DIALECT_PARTITA_UTILS_INLINECALLS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace partita {

/// Replaces every `func.call` under `root` to a function with a body by a
/// copy of that body, repeatedly, up to `maxDepth` levels (recursive calls
/// remain). Callees stay in place. Returns true when a call was inlined.
bool inlineCalls(mlir::Operation *root, unsigned maxDepth = 32);

/// A copy of `module` in which every call to a function with a body is
/// replaced by that body (repeatedly, up to `maxDepth` levels, so recursive
/// calls remain), so analyses see callee buffers; null when the module has
/// no calls to inline.
mlir::OwningOpRef<mlir::ModuleOp> cloneWithCallsInlined(mlir::ModuleOp module,
                                                        unsigned maxDepth = 32);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_UTILS_INLINECALLS_H
