//===- Instruction.h - The runtime's instruction set ------------*- C++ -*-===//
//
// What an Executable's instructions say, independent of MLIR: an op code
// (one per tensor op of the partita dialect and per collective), operand and
// result buffer slots, and the op's attributes flattened into integers and
// a string. The compiler lowers each op to one Instruction; backends run
// them (CPU kernels in lib/Runtime/CPU, later CUDA).
//
// Attribute conventions, by op (all dims are 0-based):
//   iota, argmax, cumsum, concatenate, all_gather, all_slice: ints = {dim}
//     (cumsum: {dim, reverse 0/1}; argmax: {dim}).
//   top_k: ints = {dim, k}.
//   reduce: ints = {kind, dims...}      (kind: ReductionCode).
//   compare: ints = {direction}          (CompareCode).
//   broadcast: ints = result dim of each operand dim.
//   transpose: ints = perm.
//   slice: ints = start..., limit..., stride... (3 × rank).
//   dynamic_slice: ints = sizes...; operands = {operand, start indices...}.
//   dynamic_update_slice: operands = {operand, update, start indices...}.
//   pad: ints = low..., high...; operands = {operand, padding value}.
//   einsum: text = spec ("bd,df->bf").
//   constant: ints = {index into the Executable's constant pool} (the
//     entry has the result's shape) or {index, 1} (a splat: the entry is
//     one element, written to every element of the result).
//   convert, reshape, elementwise ops, select, gather, scatter_add,
//   optimization_barrier: no attributes.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_INSTRUCTION_H
#define PARTITA_RUNTIME_INSTRUCTION_H

#include "partita/Runtime/IO/HostArray.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

/// One code per tensor op of the dialect. Values are part of the
/// Executable format: append, never renumber.
enum class OpCode : uint16_t {
  Constant = 0,
  Iota,
  // Unary elementwise.
  Neg,
  Abs,
  Sign,
  Exp,
  Log,
  Log1p,
  Tanh,
  Logistic,
  Sqrt,
  Rsqrt,
  Erf,
  Sin,
  Cos,
  Floor,
  Not,
  // Binary elementwise.
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Max,
  Min,
  Pow,
  And,
  Or,
  Xor,
  Compare,
  Select,
  Convert,
  Einsum,
  Reduce,
  Argmax,
  TopK,
  Cumsum,
  Broadcast,
  Reshape,
  Transpose,
  Slice,
  DynamicSlice,
  DynamicUpdateSlice,
  Concatenate,
  Pad,
  Gather,
  ScatterAdd,
  OptimizationBarrier,
  // Collectives (run by a Communicator, not by kernels). text = the group's
  // mesh axes joined by ','; ints: all_gather/all_slice {dim}; all_reduce
  // {kind}; reduce_scatter {kind, dim}; all_to_all {split_dim, concat_dim};
  // collective_permute {source, target, source, target, ...}.
  AllGather,
  AllSlice,
  AllReduce,
  ReduceScatter,
  AllToAll,
  CollectivePermute,
  // A counted loop, run by the interpreter: its body is the `ints[1]`
  // instructions that follow it. operands = initial values, results = final
  // values; ints = {trip_count, body_length, iteration-number slot (an i32
  // scalar), carried slots..., yielded slots..., copy slots...}: at the end
  // of an iteration every yielded value is copied to its copy slot, then
  // every copy to its carried slot (a yielded value may share bytes with
  // another carry).
  Loop,
};

/// True for the collective op codes.
inline bool isCollective(OpCode code) {
  return code >= OpCode::AllGather && code <= OpCode::CollectivePermute;
}

/// Reduction kinds (reduce, all_reduce, reduce_scatter).
enum class ReductionCode : int64_t { Sum = 0, Max, Min, And, Or };

/// Comparison predicates.
enum class CompareCode : int64_t { EQ = 0, NE, LT, LE, GT, GE };

/// Name of an op code ("einsum", ...), as in the dialect.
const char *opCodeName(OpCode code);

/// Shape and element type of a buffer.
struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  int64_t bytes() const;
};

/// One instruction.
struct Instruction {
  OpCode op = OpCode::Constant;
  std::vector<int32_t> operands; // buffer slots
  std::vector<int32_t> results;  // buffer slots
  std::vector<int64_t> ints;     // attributes (see the file comment)
  std::string text;              // attributes (einsum spec)
};

} // namespace partita

#endif // PARTITA_RUNTIME_INSTRUCTION_H
