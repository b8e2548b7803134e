//===- Fused.h - Chains of elementwise ops as one instruction ---*- C++ -*-===//
//
// A fused instruction (OpCode::Fused) evaluates a chain of f32 elementwise
// ops in one pass over its elements, tile by tile, instead of one pass and
// one full-size temporary per op (docs/Runtime.md, "Fusion"). The compiler
// forms them from the instruction stream (lib/Codegen/Fusion.cpp); this
// header is its encoding in Instruction::ints, shared by the compiler, the
// CPU and CUDA kernels, and checked before anything runs.
//
//   ints = { E, (inner, size) x E,              external operands
//            S, (op, kindA, a, kindB, b) x S,   steps
//            R, step x R }                      results
//
// Every result has the instruction's element count N. External operand e
// (inst.operands[e], f32, `size` elements) gives element i of the chain the
// value operand[(i / inner) % size]: a full-size operand has inner 1 and
// size N, a scalar size 1, an operand broadcast along leading and trailing
// dimensions the product of the trailing ones as `inner`. A step applies an
// elementwise op (a unary one ignores its second reference) to references
// of three kinds: an external operand, an earlier step, or an f32 constant
// (its bits in the low 32 bits of the value). Result r is step
// `step` of the r-th result entry.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PROGRAM_FUSED_H
#define PARTITA_RUNTIME_PROGRAM_FUSED_H

#include "partita/Runtime/Program/Instruction.h"

#include <cstdint>
#include <vector>

namespace partita {

/// What a step's reference names.
enum class FusedRefKind : int64_t { Operand = 0, Step = 1, Constant = 2 };

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

struct FusedProgram {
  std::vector<FusedOperand> operands;
  std::vector<FusedStep> steps;
  std::vector<int64_t> results;
};

/// The most steps, external operands and results a fused instruction may
/// have (the CUDA kernel takes the whole program as its argument).
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
/// elements, every result f32 with `count` elements, `count` a multiple of
/// every operand's inner * size.
Expected<FusedProgram> decodeFused(const Instruction &inst,
                                   const std::vector<TensorType> &operandTypes,
                                   const std::vector<TensorType> &resultTypes);

/// An f32 constant reference's value.
float fusedConstant(const FusedRef &ref);

} // namespace partita

#endif // PARTITA_RUNTIME_PROGRAM_FUSED_H
