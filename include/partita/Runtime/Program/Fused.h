//===- Fused.h - Chains of elementwise ops as one instruction ---*- C++ -*-===//
//
// A fused instruction (OpCode::Fused) evaluates a chain of f32 elementwise
// ops in one pass over its elements, tile by tile, instead of one pass and
// one full-size temporary per op (docs/Runtime.md, "Fusion"). It may start
// with a GEMM (the head: an einsum whose product the chain reads, computed
// block by block so that the chain runs on each block while it is in the
// cache) and end with reductions of the chain's values. The compiler forms
// them from the instruction stream (lib/Codegen/Fusion.cpp); this header is
// its encoding, shared by the compiler, the CPU and CUDA kernels, and
// checked before anything runs.
//
//   text = "" or the head's einsum spec ("bd,df->bf")
//   ints = { E, (inner, size) x E,              external operands
//            S, (op, kindA, a, kindB, b) x S,   steps
//            R, step x R,                       element results
//            [Q, N, (kind, step, inner, size) x Q] }  reductions (Q > 0)
//   operands = [head lhs, head rhs,] external operand 0 .. E-1
//   results  = [head product,] element result 0 .. R-1, reduction 0 .. Q-1
//
// N is the chain's element count: the head product's and every element
// result's (written in the reduction section, where neither may exist).
// External operand e (f32, `size` elements) gives element i of the chain
// the value operand[(i / inner) % size]: a full-size operand has inner 1
// and size N, a scalar size 1, an operand broadcast along leading and
// trailing dimensions the product of the trailing ones as `inner`. A step
// applies an elementwise op (a unary one ignores its second reference) to
// references of four kinds: an external operand, an earlier step, an f32
// constant (its bits in the low 32 bits of the value) or the head's
// product. Element result r is step `step` of the r-th entry. Reduction q
// (kind: ReductionCode Sum, Max or Min) combines step `step`'s element i
// into element (i / inner) % size of its result (f32, `size` elements), in
// element order: the order of the unfused reduce's memory-order walk when
// the dimensions it keeps are one contiguous block, so fused and unfused
// programs give the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PROGRAM_FUSED_H
#define PARTITA_RUNTIME_PROGRAM_FUSED_H

#include "partita/Runtime/Program/Instruction.h"

#include <cstdint>
#include <vector>

namespace partita {

/// What a step's reference names.
enum class FusedRefKind : int64_t {
  Operand = 0,
  Step = 1,
  Constant = 2,
  Head = 3
};

struct FusedRef {
  FusedRefKind kind = FusedRefKind::Operand;
  int64_t value = 0;
};

struct FusedStep {
  OpCode op;
  FusedRef a, b;
};

struct FusedOperand {
  int64_t inner = 1, size = 1;
};

struct FusedReduction {
  ReductionCode kind = ReductionCode::Sum;
  int64_t step = 0;
  int64_t inner = 1, size = 1;
};

struct FusedProgram {
  /// The chain's element count (N).
  int64_t count = 0;
  /// Whether a GEMM (the instruction's text) computes the head product.
  bool head = false;
  std::vector<FusedOperand> operands;
  std::vector<FusedStep> steps;
  std::vector<int64_t> results;
  std::vector<FusedReduction> reductions;

  /// Where the instruction's operand and result lists place each part.
  size_t firstExternal() const { return head ? 2 : 0; }
  size_t firstElementResult() const { return head ? 1 : 0; }
  size_t firstReductionResult() const {
    return firstElementResult() + results.size();
  }
};

/// The most steps, external operands (with the head's product) and results
/// (element results and reductions) a fused instruction may have (the CUDA
/// kernel takes the whole program as its argument).
inline constexpr int64_t kMaxFusedSteps = 32;
inline constexpr int64_t kMaxFusedOperands = 32;
inline constexpr int64_t kMaxFusedResults = 32;

/// True for the ops a fused instruction may apply (f32 unary and binary
/// elementwise ops).
bool isFusibleOp(OpCode op);

/// The encoding of `program`, for Instruction::ints.
std::vector<int64_t> encodeFused(const FusedProgram &program);

/// `inst`'s fused program, checked against its operand and result types:
/// every count, reference and op in range, every operand f32 with `size`
/// elements, every element result (and the head's product) f32 with N
/// elements, every reduction's result f32 with `size` elements, N a
/// multiple of every operand's and reduction's inner * size, the head's
/// operands f32.
Expected<FusedProgram> decodeFused(const Instruction &inst,
                                   const std::vector<TensorType> &operandTypes,
                                   const std::vector<TensorType> &resultTypes);

/// An f32 constant reference's value.
float fusedConstant(const FusedRef &ref);

/// For the buffer plan's check: whether fused instruction `inst` may write
/// result slot `born` over the bytes of slot `dying` (same offset and
/// size), which dies there: an element result over an external operand
/// (each tile reads before it writes) or over the head's product (each
/// block of the product is read before the chain's results of that block
/// are written). Never over the head's operands, which later blocks read,
/// and never a reduction's result, which every tile updates.
bool fusedWritesInPlace(const Instruction &inst, int32_t dying, int32_t born);

/// Whether `born` is one of fused instruction `inst`'s reduction results,
/// which are written after everything the instruction reads has been read:
/// they may take any bytes of slots that die there.
bool fusedWritesLast(const Instruction &inst, int32_t born);

} // namespace partita

#endif // PARTITA_RUNTIME_PROGRAM_FUSED_H
