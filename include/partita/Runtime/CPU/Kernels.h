//===- Kernels.h - CPU kernels for every runtime op code --------*- C++ -*-===//
//
// The CPU backend's arithmetic: one entry point that runs an Instruction on
// host buffers. This is the numerical reference of Partita — every other
// backend is compared against it — so the kernels favour exact, documented
// semantics (the op descriptions in PartitaTensorOps.td) over speed, except
// for einsum, which lowers to a batched GEMM (OpenBLAS when built with it, a
// built-in cache-blocked kernel otherwise), and the elementwise ops and
// reductions, written as contiguous loops the compiler can vectorize.
//
// Element types: f64, f32, f16 and bf16 (f16/bf16 are stored as 16-bit
// patterns, computed in f32 and rounded to nearest even on store; NaN is
// preserved), i64, i32, i16, i8, u8 and bool (one byte, 0 or 1) where the op
// makes sense. Unsupported combinations and malformed attributes or shapes
// return a Status naming the op; no input makes a kernel crash.
//
// Aliasing: a result buffer may be the same buffer as an operand only for
// the elementwise ops (same-index reads and writes), for the table of
// scatter_add, the operand of dynamic_update_slice, and for reshape, convert
// between equal dtypes and optimization_barrier. Otherwise results must not
// overlap operands.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_CPU_KERNELS_H
#define PARTITA_RUNTIME_CPU_KERNELS_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Runtime/Program/Instruction.h"

#include <cstdint>
#include <vector>

namespace partita {
namespace cpu {

/// Everything one kernel invocation reads and writes. Operand and result
/// pointers may be null only for buffers with zero elements.
struct KernelCall {
  const Instruction &inst;
  const std::vector<TensorType> &operandTypes;
  const std::vector<const void *> &operands;
  const std::vector<TensorType> &resultTypes;
  const std::vector<void *> &results;
  /// The Executable's constants; needed by `constant` only.
  const std::vector<HostArray> *constantPool = nullptr;
};

/// Runs `call.inst` on host buffers; fails (without touching memory beyond
/// the given buffers) on unsupported dtypes, bad attributes or mismatched
/// shapes, with a message that starts with the op's name.
Status runKernel(const KernelCall &call);

/// Same as above, arguments spelled out.
Status runKernel(const Instruction &inst,
                 const std::vector<TensorType> &operandTypes,
                 const std::vector<const void *> &operands,
                 const std::vector<TensorType> &resultTypes,
                 const std::vector<void *> &results,
                 const std::vector<HostArray> *constantPool = nullptr);

/// Which GEMM einsum uses.
enum class GemmImplementation {
  /// OpenBLAS when the runtime was built with it, else the built-in kernel;
  /// the environment variable PARTITA_GEMM=builtin picks the built-in one
  /// (to check that a result does not hang on OpenBLAS's kernels).
  Default,
  /// Always the built-in cache-blocked kernel (tests, benchmarks).
  Builtin,
};

/// Selects the GEMM for subsequent einsum calls (process-wide; meant for
/// tests and benchmarks, not to be flipped while kernels run).
void setGemmImplementation(GemmImplementation implementation);

/// The current selection.
GemmImplementation gemmImplementation();

/// True when the runtime was built with OpenBLAS.
bool haveOpenBlas();

/// Row-major single-precision GEMM, C[m, n] = sum_k op(A)[m, k] op(B)[k, n],
/// with op(X) = X or X^T; `lda`, `ldb`, `ldc` are row strides of A, B, C as
/// stored. Goes through the selected implementation (exposed for the GEMM
/// benchmark and for other CPU code).
void gemmF32(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
             int64_t ldc);

/// Double-precision variant of gemmF32.
void gemmF64(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const double *a, int64_t lda, const double *b, int64_t ldb,
             double *c, int64_t ldc);

} // namespace cpu
} // namespace partita

#endif // PARTITA_RUNTIME_CPU_KERNELS_H
