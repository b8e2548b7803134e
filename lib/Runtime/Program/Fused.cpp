//===- Fused.cpp - The encoding of fused elementwise chains ---------------===//

#include "partita/Runtime/Program/Fused.h"
#include "partita/Sharding/Einsum.h"

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
  if (!program.reductions.empty()) {
    ints.push_back(static_cast<int64_t>(program.reductions.size()));
    ints.push_back(program.count);
    for (const FusedReduction &reduction : program.reductions) {
      ints.push_back(static_cast<int64_t>(reduction.kind));
      ints.push_back(reduction.step);
      ints.push_back(reduction.inner);
      ints.push_back(reduction.size);
    }
  }
  return ints;
}

float partita::fusedConstant(const FusedRef &ref) {
  auto bits = static_cast<uint32_t>(ref.value);
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

namespace {

/// The failure of a fused instruction whose program is malformed for `why`.
Status malformed(const std::string &why) {
  return Status::error("fused: " + why);
}

/// A fused instruction's ints, read one value after another.
struct FusedInts {
  const std::vector<int64_t> &ints;
  size_t at = 0;

  /// Reads the next value into `value`; false when none is left.
  bool next(int64_t &value) {
    if (at >= ints.size())
      return false;
    value = ints[at++];
    return true;
  }
  /// True when every value has been read.
  bool done() const { return at >= ints.size(); }
};

/// Reads the external operand count, checked against the operands (after
/// the head's two) and the limits, and each operand's layout.
Status readFusedOperands(FusedInts &in,
                         const std::vector<TensorType> &operandTypes,
                         const std::vector<TensorType> &resultTypes,
                         FusedProgram &program) {
  size_t headOperands = program.firstExternal();
  if (operandTypes.size() < headOperands ||
      resultTypes.size() < headOperands / 2)
    return malformed("a head einsum needs two operands and a product");
  int64_t count = 0;
  if (!in.next(count) || count < 0 ||
      count != static_cast<int64_t>(operandTypes.size() - headOperands))
    return malformed("the operand count does not match the operands");
  if (count + (program.head ? 1 : 0) > kMaxFusedOperands ||
      static_cast<int64_t>(resultTypes.size() - headOperands / 2) >
          kMaxFusedResults)
    return malformed("more than " + std::to_string(kMaxFusedOperands) +
                     " operands or " + std::to_string(kMaxFusedResults) +
                     " results");
  // The operands' layouts are checked against N once it is known.
  for (int64_t e = 0; e < count; ++e) {
    FusedOperand operand;
    if (!in.next(operand.inner) || !in.next(operand.size))
      return malformed("truncated operand list");
    program.operands.push_back(operand);
  }
  return Status::success();
}

/// Sets the kind of `ref`, a reference of step `s`, from its encoding
/// `kind`, checking that it names something the step may read.
Status decodeFusedRef(FusedRef &ref, int64_t kind, int64_t s,
                      const FusedProgram &program) {
  if (kind == static_cast<int64_t>(FusedRefKind::Operand)) {
    ref.kind = FusedRefKind::Operand;
    if (ref.value < 0 ||
        ref.value >= static_cast<int64_t>(program.operands.size()))
      return malformed("step " + std::to_string(s) +
                       " reads a missing operand");
  } else if (kind == static_cast<int64_t>(FusedRefKind::Step)) {
    ref.kind = FusedRefKind::Step;
    if (ref.value < 0 || ref.value >= s)
      return malformed("step " + std::to_string(s) +
                       " reads a step that is not before it");
  } else if (kind == static_cast<int64_t>(FusedRefKind::Constant)) {
    ref.kind = FusedRefKind::Constant;
  } else if (kind == static_cast<int64_t>(FusedRefKind::Head)) {
    ref.kind = FusedRefKind::Head;
    if (!program.head)
      return malformed("step " + std::to_string(s) +
                       " reads the product of a missing head");
  } else {
    return malformed("step " + std::to_string(s) +
                     " has an unknown reference kind");
  }
  return Status::success();
}

/// Reads the step count and each step: a fusible op and its two checked
/// references.
Status readFusedSteps(FusedInts &in, FusedProgram &program) {
  int64_t steps = 0;
  if (!in.next(steps) || steps < 1 || steps > kMaxFusedSteps)
    return malformed("between 1 and " + std::to_string(kMaxFusedSteps) +
                     " steps expected");
  for (int64_t s = 0; s < steps; ++s) {
    int64_t op = 0;
    FusedStep step{OpCode::Add, {}, {}};
    int64_t kinds[2] = {0, 0};
    if (!in.next(op) || !in.next(kinds[0]) || !in.next(step.a.value) ||
        !in.next(kinds[1]) || !in.next(step.b.value))
      return malformed("truncated step list");
    if (op < 0 || !isValidOpCode(static_cast<uint16_t>(op)) ||
        !isFusibleOp(static_cast<OpCode>(op)))
      return malformed("step " + std::to_string(s) +
                       " is not a fusible op");
    step.op = static_cast<OpCode>(op);
    FusedRef *refs[2] = {&step.a, &step.b};
    for (int k = 0; k < 2; ++k)
      if (Status status = decodeFusedRef(*refs[k], kinds[k], s, program);
          !status.ok())
        return status;
    program.steps.push_back(step);
  }
  return Status::success();
}

/// Reads the element result count and the step each result is.
Status readFusedResults(FusedInts &in, FusedProgram &program) {
  int64_t steps = static_cast<int64_t>(program.steps.size());
  int64_t results = 0;
  if (!in.next(results) || results < 0)
    return malformed("the result count does not match the results");
  for (int64_t r = 0; r < results; ++r) {
    int64_t step = 0;
    if (!in.next(step) || step < 0 || step >= steps)
      return malformed("result " + std::to_string(r) + " names no step");
    program.results.push_back(step);
  }
  return Status::success();
}

/// Reads the reduction section when values follow the results: the
/// reduction count, N and each reduction. Without it N is left at -1.
Status readFusedReductions(FusedInts &in, FusedProgram &program) {
  int64_t steps = static_cast<int64_t>(program.steps.size());
  int64_t reductions = 0;
  program.count = -1;
  if (in.done())
    return Status::success();
  if (!in.next(reductions) || reductions < 1)
    return malformed("trailing values after the results");
  if (!in.next(program.count) || program.count < 0)
    return malformed("a reduction list without an element count");
  for (int64_t q = 0; q < reductions; ++q) {
    FusedReduction reduction;
    int64_t kind = 0;
    if (!in.next(kind) || !in.next(reduction.step) ||
        !in.next(reduction.inner) || !in.next(reduction.size))
      return malformed("truncated reduction list");
    if (kind != static_cast<int64_t>(ReductionCode::Sum) &&
        kind != static_cast<int64_t>(ReductionCode::Max) &&
        kind != static_cast<int64_t>(ReductionCode::Min))
      return malformed("reduction " + std::to_string(q) +
                       " is not a sum, max or min");
    reduction.kind = static_cast<ReductionCode>(kind);
    if (reduction.step < 0 || reduction.step >= steps)
      return malformed("reduction " + std::to_string(q) + " names no step");
    program.reductions.push_back(reduction);
  }
  return Status::success();
}

/// Checks the result types against the program: their count, and every
/// element result (and the head's product) f32 with N elements, setting N
/// from the first result when no reduction section gave it.
Status checkFusedResults(const std::vector<TensorType> &resultTypes,
                         FusedProgram &program) {
  size_t headOperands = program.firstExternal();
  int64_t results = static_cast<int64_t>(program.results.size());
  int64_t reductions = static_cast<int64_t>(program.reductions.size());
  if (static_cast<int64_t>(resultTypes.size()) !=
      static_cast<int64_t>(headOperands / 2) + results + reductions)
    return malformed("the result count does not match the results");
  if (program.count < 0) { // No reductions: N is the first result's.
    if (resultTypes.empty())
      return malformed("no results");
    program.count = resultTypes[0].numElements();
  }
  int64_t elements = program.count;
  for (size_t r = 0; r < resultTypes.size() - reductions; ++r)
    if (resultTypes[r].dtype != DType::F32 ||
        resultTypes[r].numElements() != elements)
      return malformed("results must be f32 of one element count");
  return Status::success();
}

/// Checks that every external operand and reduction result is f32 with
/// `size` elements and that its layout fits the chain's N elements.
Status checkFusedLayouts(const std::vector<TensorType> &operandTypes,
                         const std::vector<TensorType> &resultTypes,
                         const FusedProgram &program) {
  size_t headOperands = program.firstExternal();
  int64_t count = static_cast<int64_t>(program.operands.size());
  int64_t reductions = static_cast<int64_t>(program.reductions.size());
  int64_t elements = program.count;
  auto fits = [&](int64_t inner, int64_t size) {
    return inner >= 1 && size >= 1 && inner <= elements / size + 1 &&
           elements % (inner * size) == 0;
  };
  for (int64_t e = 0; e < count; ++e) {
    const FusedOperand &operand = program.operands[e];
    const TensorType &type = operandTypes[headOperands + e];
    if (type.dtype != DType::F32 || operand.size != type.numElements() ||
        !fits(operand.inner, operand.size))
      return malformed("operand " + std::to_string(e) +
                       " does not fit the results");
  }
  for (int64_t q = 0; q < reductions; ++q) {
    const FusedReduction &reduction = program.reductions[q];
    const TensorType &type = resultTypes[resultTypes.size() - reductions + q];
    if (type.dtype != DType::F32 || reduction.size != type.numElements() ||
        !fits(reduction.inner, reduction.size))
      return malformed("reduction " + std::to_string(q) +
                       " does not fit the chain");
  }
  return Status::success();
}

/// Checks the head of `inst`: f32 operands, and its einsum spec against
/// the operands and the product.
Status checkFusedHead(const Instruction &inst,
                      const std::vector<TensorType> &operandTypes,
                      const std::vector<TensorType> &resultTypes) {
  if (operandTypes[0].dtype != DType::F32 ||
      operandTypes[1].dtype != DType::F32)
    return malformed("the head's operands must be f32");
  // The spec against the operands and the product, checked here for
  // every backend (the CUDA einsum trusts its caller).
  Expected<EinsumSpec> spec = parseEinsumSpec(inst.text, 2);
  if (!spec)
    return malformed("the head's " + spec.status().message());
  Expected<std::vector<int64_t>> shape =
      einsumResultShape(*spec, {operandTypes[0].shape, operandTypes[1].shape});
  if (!shape)
    return malformed("the head's " + shape.status().message());
  if (*shape != resultTypes[0].shape)
    return malformed("the head's product does not have the spec's shape");
  return Status::success();
}

} // namespace

Expected<FusedProgram>
partita::decodeFused(const Instruction &inst,
                     const std::vector<TensorType> &operandTypes,
                     const std::vector<TensorType> &resultTypes) {
  FusedInts in{inst.ints};
  FusedProgram program;
  program.head = !inst.text.empty();
  if (Status status = readFusedOperands(in, operandTypes, resultTypes, program);
      !status.ok())
    return status;
  if (Status status = readFusedSteps(in, program); !status.ok())
    return status;
  if (Status status = readFusedResults(in, program); !status.ok())
    return status;
  if (Status status = readFusedReductions(in, program); !status.ok())
    return status;
  if (!in.done())
    return malformed("trailing values");
  if (Status status = checkFusedResults(resultTypes, program); !status.ok())
    return status;
  if (Status status = checkFusedLayouts(operandTypes, resultTypes, program);
      !status.ok())
    return status;
  if (program.head)
    if (Status status = checkFusedHead(inst, operandTypes, resultTypes);
        !status.ok())
      return status;
  return program;
}

namespace {
/// The counts of element results (R) and reductions (Q) of a fused
/// instruction, read from its ints without checking the rest.
bool fusedResultCounts(const Instruction &inst, size_t &results,
                       size_t &reductions) {
  const std::vector<int64_t> &ints = inst.ints;
  auto size = static_cast<int64_t>(ints.size());
  // Each count is checked against the list's length before it is scaled.
  if (ints.empty() || ints[0] < 0 || ints[0] > size)
    return false;
  size_t at = 1 + 2 * static_cast<size_t>(ints[0]);
  if (at >= ints.size() || ints[at] < 0 || ints[at] > size)
    return false;
  at += 1 + 5 * static_cast<size_t>(ints[at]);
  if (at >= ints.size() || ints[at] < 0 || ints[at] > size)
    return false;
  results = static_cast<size_t>(ints[at]);
  at += 1 + results;
  reductions = at < ints.size() && ints[at] > 0
                   ? static_cast<size_t>(ints[at])
                   : 0;
  return true;
}
} // namespace

bool partita::fusedWritesInPlace(const Instruction &inst, int32_t dying,
                                 int32_t born) {
  size_t results = 0, reductions = 0;
  if (!fusedResultCounts(inst, results, reductions))
    return false;
  bool head = !inst.text.empty();
  size_t first = head ? 1 : 0;
  bool elementResult = false;
  for (size_t r = first; r < first + results && r < inst.results.size(); ++r)
    elementResult |= inst.results[r] == born;
  if (!elementResult)
    return false;
  // The head's operands are read by every block of the GEMM, even when the
  // chain reads one of them as well.
  if (head && inst.operands.size() >= 2 &&
      (inst.operands[0] == dying || inst.operands[1] == dying))
    return false;
  if (head && !inst.results.empty() && inst.results[0] == dying)
    return true;
  for (size_t e = head ? 2 : 0; e < inst.operands.size(); ++e)
    if (inst.operands[e] == dying)
      return true;
  return false;
}

bool partita::fusedWritesLast(const Instruction &inst, int32_t born) {
  size_t results = 0, reductions = 0;
  if (inst.op != OpCode::Fused ||
      !fusedResultCounts(inst, results, reductions) ||
      inst.results.size() < reductions)
    return false;
  for (size_t r = inst.results.size() - reductions; r < inst.results.size();
       ++r)
    if (inst.results[r] == born)
      return true;
  return false;
}
