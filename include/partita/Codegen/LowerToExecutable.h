//===- LowerToExecutable.h - partita IR to the runtime's program -*- C++
//-*-===//
//
// Lowers the entry function of a module (partitioned or not) to the
// runtime's Executable: one buffer slot per tensor value, one Instruction
// per op, constants into the pool, and the layout of every input and
// output. An unpartitioned module lowers to a one-device program.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_CODEGEN_LOWERTOEXECUTABLE_H
#define PARTITA_CODEGEN_LOWERTOEXECUTABLE_H

#include "partita/Runtime/Program/Executable.h"

namespace mlir {
class ModuleOp;
class Type;
} // namespace mlir

namespace partita {

/// How to lower.
struct LoweringOptions {
  /// Group elementwise chains into fused instructions (Fusion.h).
  bool fuse = true;
};

/// The Executable of `module`'s entry function (its only function with a
/// body, or the first public one). Fails, naming the op, on what the runtime
/// cannot run yet (loops, calls).
/// The runtime's element type of a tensor type; fails on an element type
/// the runtime has no kernels for.
Expected<DType> tensorDType(mlir::Type type);

Expected<Executable> lowerToExecutable(mlir::ModuleOp module,
                                       const LoweringOptions &options = {});

} // namespace partita

#endif // PARTITA_CODEGEN_LOWERTOEXECUTABLE_H
