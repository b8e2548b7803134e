//===- Liveness.h - When each buffer of a function is alive -----*- C++ -*-===//
//
// One liveness analysis for the memory report and, later, the CPU runtime's
// buffer plan: each tensor value of a function is a buffer alive from its
// definition to its last use, in program order (a value used inside a loop
// body it is defined outside of stays alive until the loop ends).
//
// These refinements match what the runtime's buffer plan does:
//  * an argument marked `partita.donated` is given up by the caller, so it
//    dies at its last use like any other value (other arguments are held by
//    the caller for the whole call);
//  * an elementwise op whose operand dies at it (same type as the result)
//    may write its result over that operand: the operand's range ends one
//    point before the op, so the two never count twice;
//  * in a module marked `partita.async_collectives`, a collective is in
//    flight from its op to its wait (collectiveWaitPoint(): just before the
//    first use of its result, or for a reduce_scatter the next
//    reduce_scatter when that comes first): its operand and result stay
//    alive until the wait, except that an all_reduce whose operand dies at
//    it writes in place, always sharing the operand's storage;
//  * a loop's yield holds a copy of every yielded value (the runtime moves
//    them aside before they become the next carries): one buffer per
//    yielded value, alive at the yield; and the carries themselves stay
//    alive until the yield, where they are written again.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_ANALYSIS_LIVENESS_H
#define PARTITA_ANALYSIS_LIVENESS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace partita {

/// One buffer and the program points [begin, end] it is alive at. For the
/// copy a loop makes of a yielded value, `value` is null and `yieldCopy` is
/// the yield's operand.
struct LiveBuffer {
  mlir::Value value;
  mlir::OpOperand *yieldCopy = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t bytes = 0;
  /// For the result of an elementwise op: the operand whose storage it may
  /// take (that operand's range ends the point before). A planner must then
  /// place the two at the same address or apart, never partly overlapping:
  /// the kernel reads each element before writing the same index only.
  mlir::Value inPlaceOf;
  /// With `inPlaceOf`: the two must share their storage (an asynchronous
  /// all_reduce in place reads its operand until its wait), never apart.
  bool sharesStorage = false;
};

/// The buffers of a function and the peak of their total size.
struct BufferLiveness {
  /// Arguments first, then results of ops in program order.
  std::vector<LiveBuffer> buffers;
  /// Number of program points (the entry, then ops in pre-order).
  int64_t points = 0;
  /// Largest total size of the buffers alive at one point, and where.
  int64_t peakBytes = 0;
  int64_t peakPoint = 0;
};

/// Whether `op` computes each result element from the operand elements at
/// the same index only, with every operand of the result's type, so that the
/// result may overwrite an operand in place (unary and binary elementwise
/// ops, select on its value operands, and a reshape, whose result is its
/// operand's bytes; never collectives, whose peers read a device's input
/// while it writes its output).
bool mayWriteInPlace(mlir::Operation *op);

/// Whether `op` is a collective that moves data (not all_slice) in a module
/// marked `partita.async_collectives`: it runs asynchronously.
bool isAsyncCollective(mlir::Operation *op);

/// Where an asynchronous collective is waited for: just before this op of
/// its block, the first that uses its result (through an op nested in it,
/// too), or the block's terminator when none does; for a reduce_scatter,
/// before the next reduce_scatter of the block when that comes first (its
/// operand, a whole gradient, is held until the wait).
mlir::Operation *collectiveWaitPoint(mlir::Operation *collective);

/// Bytes of a statically shaped tensor type (i1 counts one byte).
int64_t tensorBytes(mlir::Type type);

/// Liveness of every tensor buffer of `function`.
BufferLiveness analyzeLiveness(mlir::func::FuncOp function);

} // namespace partita

#endif // PARTITA_ANALYSIS_LIVENESS_H
