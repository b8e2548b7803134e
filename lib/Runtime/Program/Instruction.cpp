//===- Instruction.cpp - The runtime's instruction set --------------------===//
//
// Op code names (as in the dialect) and buffer sizes.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Program/Instruction.h"

namespace partita {

const char *opCodeName(OpCode code) {
  switch (code) {
  case OpCode::Constant:
    return "constant";
  case OpCode::Iota:
    return "iota";
  case OpCode::Neg:
    return "neg";
  case OpCode::Abs:
    return "abs";
  case OpCode::Sign:
    return "sign";
  case OpCode::Exp:
    return "exp";
  case OpCode::Log:
    return "log";
  case OpCode::Log1p:
    return "log1p";
  case OpCode::Tanh:
    return "tanh";
  case OpCode::Logistic:
    return "logistic";
  case OpCode::Sqrt:
    return "sqrt";
  case OpCode::Rsqrt:
    return "rsqrt";
  case OpCode::Erf:
    return "erf";
  case OpCode::Sin:
    return "sin";
  case OpCode::Cos:
    return "cos";
  case OpCode::Floor:
    return "floor";
  case OpCode::Not:
    return "not";
  case OpCode::Add:
    return "add";
  case OpCode::Sub:
    return "sub";
  case OpCode::Mul:
    return "mul";
  case OpCode::Div:
    return "div";
  case OpCode::Rem:
    return "rem";
  case OpCode::Max:
    return "max";
  case OpCode::Min:
    return "min";
  case OpCode::Pow:
    return "pow";
  case OpCode::And:
    return "and";
  case OpCode::Or:
    return "or";
  case OpCode::Xor:
    return "xor";
  case OpCode::Compare:
    return "compare";
  case OpCode::Select:
    return "select";
  case OpCode::Convert:
    return "convert";
  case OpCode::Einsum:
    return "einsum";
  case OpCode::Reduce:
    return "reduce";
  case OpCode::Argmax:
    return "argmax";
  case OpCode::TopK:
    return "top_k";
  case OpCode::Cumsum:
    return "cumsum";
  case OpCode::Broadcast:
    return "broadcast";
  case OpCode::Reshape:
    return "reshape";
  case OpCode::Transpose:
    return "transpose";
  case OpCode::Slice:
    return "slice";
  case OpCode::DynamicSlice:
    return "dynamic_slice";
  case OpCode::DynamicUpdateSlice:
    return "dynamic_update_slice";
  case OpCode::Concatenate:
    return "concatenate";
  case OpCode::Pad:
    return "pad";
  case OpCode::Gather:
    return "gather";
  case OpCode::ScatterAdd:
    return "scatter_add";
  case OpCode::OptimizationBarrier:
    return "optimization_barrier";
  case OpCode::AllGather:
    return "all_gather";
  case OpCode::AllSlice:
    return "all_slice";
  case OpCode::AllReduce:
    return "all_reduce";
  case OpCode::ReduceScatter:
    return "reduce_scatter";
  case OpCode::AllToAll:
    return "all_to_all";
  case OpCode::CollectivePermute:
    return "collective_permute";
  case OpCode::Loop:
    return "loop";
  }
  return "<unknown op code>";
}

int64_t TensorType::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

int64_t TensorType::bytes() const { return numElements() * dtypeSize(dtype); }

} // namespace partita
