//===- Liveness.h - When each buffer of a function is alive -----*- C++ -*-===//
//
// One liveness analysis for the memory report and, later, the CPU runtime's
// buffer plan: each tensor value of a function is a buffer alive from its
// definition to its last use, in program order (a value used inside a loop
// body it is defined outside of stays alive until the loop ends).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_ANALYSIS_LIVENESS_H
#define PARTITA_ANALYSIS_LIVENESS_H

#include "mlir/IR/Value.h"

#include <cstdint>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace partita {

/// One buffer and the program points [begin, end] it is alive at.
struct LiveBuffer {
  mlir::Value value;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t bytes = 0;
};

/// The buffers of a function and the peak of their total size.
struct BufferLiveness {
  /// Arguments first, then results of ops in program order.
  std::vector<LiveBuffer> buffers;
  /// Number of program points (ops, in pre-order).
  int64_t points = 0;
  /// Largest total size of the buffers alive at one point, and where.
  int64_t peakBytes = 0;
  int64_t peakPoint = 0;
};

/// Bytes of a statically shaped tensor type (i1 counts one byte).
int64_t tensorBytes(mlir::Type type);

/// Liveness of every tensor buffer of `function` (arguments are alive
/// throughout).
BufferLiveness analyzeLiveness(mlir::func::FuncOp function);

} // namespace partita

#endif // PARTITA_ANALYSIS_LIVENESS_H
