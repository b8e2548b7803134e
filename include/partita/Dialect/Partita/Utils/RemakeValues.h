//===- RemakeValues.h - Cheap values made again near their users -*- C++ -*-===//
//
// What the runtime's fusion makes on the fly (splat constants, broadcasts
// of a leading/trailing block) is cheaper to make again inside each fused
// chain that reads it than to write once and read from memory later. The
// lowering to an Executable copies such values next to each user a fused
// chain can take them into, and the memory report analyses the program
// the same way, so that both see the same live buffers. docs/Runtime.md,
// "Fusion".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_PARTITA_UTILS_REMAKEVALUES_H
#define PARTITA_DIALECT_PARTITA_UTILS_REMAKEVALUES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace partita {

/// True for the ops a fused chain takes when their result is f32 (the
/// runtime's isFusibleOp, by dialect op name; a unit test keeps the two
/// the same).
bool isFusedChainOp(llvm::StringRef name);

/// Gives each f32 elementwise user (the ops a fused chain takes) of an f32
/// splat constant or of a broadcast that only adds leading and trailing
/// dimensions its own copy of that value, right before it, in the same
/// block; the original stays for its other users and goes when it has
/// none. Returns the copies made.
int64_t remakeNearFusedUsers(mlir::func::FuncOp function);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_UTILS_REMAKEVALUES_H
