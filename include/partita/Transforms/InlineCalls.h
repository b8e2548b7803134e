//===- InlineCalls.h - Replace calls by their callees' bodies ---*- C++ -*-===//
#ifndef PARTITA_TRANSFORMS_INLINECALLS_H
#define PARTITA_TRANSFORMS_INLINECALLS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace partita {

/// Replaces every `func.call` under `root` to a function with a body by a
/// copy of that body, repeatedly, up to `maxDepth` levels (recursive calls
/// remain). Callees stay in place. Returns true when a call was inlined.
bool inlineCalls(mlir::Operation *root, unsigned maxDepth = 32);

} // namespace partita

#endif // PARTITA_TRANSFORMS_INLINECALLS_H
