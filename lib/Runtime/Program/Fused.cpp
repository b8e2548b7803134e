//===- Fused.cpp - The encoding of fused elementwise chains ---------------===//

#include "partita/Runtime/Program/Fused.h"

#include <cstring>

using namespace partita;

bool partita::isFusibleOp(OpCode op) {
  switch (op) {
  case OpCode::Neg:
  case OpCode::Abs:
  case OpCode::Sign:
  case OpCode::Exp:
  case OpCode::Log:
  case OpCode::Log1p:
  case OpCode::Tanh:
  case OpCode::Logistic:
  case OpCode::Sqrt:
  case OpCode::Rsqrt:
  case OpCode::Erf:
  case OpCode::Sin:
  case OpCode::Cos:
  case OpCode::Floor:
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
  case OpCode::Rem:
  case OpCode::Max:
  case OpCode::Min:
  case OpCode::Pow:
    return true;
  default:
    return false;
  }
}

std::vector<int64_t> partita::encodeFused(const FusedProgram &program) {
  std::vector<int64_t> ints;
  ints.push_back(static_cast<int64_t>(program.operands.size()));
  for (const FusedOperand &operand : program.operands) {
    ints.push_back(operand.inner);
    ints.push_back(operand.size);
  }
  ints.push_back(static_cast<int64_t>(program.steps.size()));
  for (const FusedStep &step : program.steps) {
    ints.push_back(static_cast<int64_t>(step.op));
    ints.push_back(static_cast<int64_t>(step.a.kind));
    ints.push_back(step.a.value);
    ints.push_back(static_cast<int64_t>(step.b.kind));
    ints.push_back(step.b.value);
  }
  ints.push_back(static_cast<int64_t>(program.results.size()));
  ints.insert(ints.end(), program.results.begin(), program.results.end());
  return ints;
}

float partita::fusedConstant(const FusedRef &ref) {
  auto bits = static_cast<uint32_t>(ref.value);
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

Expected<FusedProgram>
partita::decodeFused(const Instruction &inst,
                     const std::vector<TensorType> &operandTypes,
                     const std::vector<TensorType> &resultTypes) {
  const std::vector<int64_t> &ints = inst.ints;
  size_t at = 0;
  auto next = [&](int64_t &value) {
    if (at >= ints.size())
      return false;
    value = ints[at++];
    return true;
  };
  auto malformed = [](const std::string &why) {
    return Status::error("fused: " + why);
  };
  FusedProgram program;
  int64_t count = 0;
  if (!next(count) || count < 0 ||
      count != static_cast<int64_t>(operandTypes.size()))
    return malformed("the operand count does not match the operands");
  if (count > kMaxFusedOperands ||
      static_cast<int64_t>(resultTypes.size()) > kMaxFusedResults)
    return malformed("more than " + std::to_string(kMaxFusedOperands) +
                     " operands or " + std::to_string(kMaxFusedResults) +
                     " results");
  if (resultTypes.empty())
    return malformed("no results");
  int64_t elements = resultTypes[0].numElements();
  for (const TensorType &type : resultTypes)
    if (type.dtype != DType::F32 || type.numElements() != elements)
      return malformed("results must be f32 of one element count");
  for (int64_t e = 0; e < count; ++e) {
    FusedOperand operand;
    if (!next(operand.inner) || !next(operand.size))
      return malformed("truncated operand list");
    const TensorType &type = operandTypes[e];
    if (type.dtype != DType::F32 || operand.inner < 1 || operand.size < 1 ||
        operand.size != type.numElements() ||
        operand.inner > elements / operand.size + 1 ||
        elements % (operand.inner * operand.size) != 0)
      return malformed("operand " + std::to_string(e) +
                       " does not fit the results");
    program.operands.push_back(operand);
  }
  int64_t steps = 0;
  if (!next(steps) || steps < 1 || steps > kMaxFusedSteps)
    return malformed("between 1 and " + std::to_string(kMaxFusedSteps) +
                     " steps expected");
  for (int64_t s = 0; s < steps; ++s) {
    int64_t op = 0;
    FusedStep step{OpCode::Add, {}, {}};
    int64_t kinds[2] = {0, 0};
    if (!next(op) || !next(kinds[0]) || !next(step.a.value) ||
        !next(kinds[1]) || !next(step.b.value))
      return malformed("truncated step list");
    if (op < 0 || !isValidOpCode(static_cast<uint16_t>(op)) ||
        !isFusibleOp(static_cast<OpCode>(op)))
      return malformed("step " + std::to_string(s) +
                       " is not a fusible op");
    step.op = static_cast<OpCode>(op);
    FusedRef *refs[2] = {&step.a, &step.b};
    for (int k = 0; k < 2; ++k) {
      FusedRef &ref = *refs[k];
      if (kinds[k] == static_cast<int64_t>(FusedRefKind::Operand)) {
        ref.kind = FusedRefKind::Operand;
        if (ref.value < 0 || ref.value >= count)
          return malformed("step " + std::to_string(s) +
                           " reads a missing operand");
      } else if (kinds[k] == static_cast<int64_t>(FusedRefKind::Step)) {
        ref.kind = FusedRefKind::Step;
        if (ref.value < 0 || ref.value >= s)
          return malformed("step " + std::to_string(s) +
                           " reads a step that is not before it");
      } else if (kinds[k] == static_cast<int64_t>(FusedRefKind::Constant)) {
        ref.kind = FusedRefKind::Constant;
      } else {
        return malformed("step " + std::to_string(s) +
                         " has an unknown reference kind");
      }
    }
    program.steps.push_back(step);
  }
  int64_t results = 0;
  if (!next(results) ||
      results != static_cast<int64_t>(resultTypes.size()))
    return malformed("the result count does not match the results");
  for (int64_t r = 0; r < results; ++r) {
    int64_t step = 0;
    if (!next(step) || step < 0 || step >= steps)
      return malformed("result " + std::to_string(r) + " names no step");
    program.results.push_back(step);
  }
  if (at != ints.size())
    return malformed("trailing values");
  return program;
}
