//===- Instruction.h - The runtime's instruction set ------------*- C++ -*-===//
//
// What an Executable's instructions say, independent of MLIR: an op code
// (one per tensor op of the partita dialect and per collective, listed in
// Ops.def), operand and result buffer slots, and the op's attributes
// flattened into integers and a string. The compiler lowers each op to one
// Instruction; backends run them (kernels in lib/Runtime/CPU and
// lib/Runtime/CUDA).
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
//   fused: a chain of f32 elementwise ops (Fused.h has the encoding).
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

/// One code per tensor op of the dialect, per collective, and the loop;
/// the list is Ops.def. Values are part of the Executable format: append,
/// never renumber.
///
/// Collectives (run by a Communicator, not by kernels): text = the group's
/// mesh axes joined by ','; ints: all_gather/all_slice {dim}; all_reduce
/// {kind}; reduce_scatter {kind, dim}; all_to_all {split_dim, concat_dim};
/// collective_permute {source, target, source, target, ...}.
///
/// Loop, a counted loop run by the interpreter: its body is the `ints[1]`
/// instructions that follow it. operands = initial values, results = final
/// values; ints = {trip_count, body_length, iteration-number slot (an i32
/// scalar), carried slots..., yielded slots..., copy slots...}: at the end
/// of an iteration every yielded value is copied to its copy slot, then
/// every copy to its carried slot (a yielded value may share bytes with
/// another carry).
///
/// Wait, the end of an asynchronous collective: ints = {k}, where the
/// collective is the instruction k places earlier, in the same stretch of
/// the stream (the same loop body, or the top level). A collective that a
/// wait names is started where it stands and may still be moving data
/// until the wait: its operand must not be written and its result not read
/// in between. operands = {the collective's result slot} and, unless the
/// collective runs in place, its operand slot (so the buffer plan's checks
/// see both alive until the wait). A collective no wait names completes
/// where it stands. docs/Runtime.md, "Overlapping communication".
enum class OpCode : uint16_t {
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  Name = Code,
#include "partita/Runtime/Program/Ops.def"
};

/// The number of op codes: the valid codes are 0 to numOpCodes - 1.
inline constexpr uint16_t numOpCodes = 0
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results) +1
#include "partita/Runtime/Program/Ops.def"
    ;

/// Who runs an op (the Family column of Ops.def).
enum class OpFamily {
  /// A tensor op with a kernel of its own.
  Dedicated,
  /// An elementwise op of one operand; one kernel selects the op inside.
  ElementwiseUnary,
  /// An elementwise op of two operands; one kernel selects the op inside.
  ElementwiseBinary,
  /// Results are the operands' bytes, unchanged (reshape,
  /// optimization_barrier).
  Copy,
  /// Run by a Communicator.
  Collective,
  /// Run by the interpreter (loop).
  Control,
};

/// True for the codes of Ops.def; an Executable file holds only these.
inline bool isValidOpCode(uint16_t code) { return code < numOpCodes; }

/// The family of a valid op code.
OpFamily opFamily(OpCode code);

/// True for the collective op codes.
inline bool isCollective(OpCode code) {
  return isValidOpCode(static_cast<uint16_t>(code)) &&
         opFamily(code) == OpFamily::Collective;
}

/// Operand and result counts a kernel requires; -1 where it varies.
struct OpArity {
  int operands;
  int results;
};

/// The arity of a valid op code.
OpArity opArity(OpCode code);

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

/// The mesh axes of a collective instruction, from its text ("data,model";
/// empty names dropped).
std::vector<std::string> collectiveAxes(const Instruction &inst);

} // namespace partita

#endif // PARTITA_RUNTIME_INSTRUCTION_H
