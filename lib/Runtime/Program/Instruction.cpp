//===- Instruction.cpp - The runtime's instruction set --------------------===//
//
// Op code names, families and arities (from Ops.def) and buffer sizes.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Program/Instruction.h"

namespace partita {

namespace {

/// True when Ops.def numbers its rows 0, 1, 2, ... in order, so that
/// numOpCodes bounds the valid codes and no code is taken twice.
constexpr bool opCodesAreDense() {
  uint16_t next = 0;
  bool dense = true;
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  dense = dense && (Code) == next++;
#include "partita/Runtime/Program/Ops.def"
  return dense;
}
static_assert(opCodesAreDense(), "Ops.def codes must be 0, 1, 2, ... in order");
// Spot checks of the Executable format's numbering.
static_assert(static_cast<uint16_t>(OpCode::OptimizationBarrier) == 46 &&
                  static_cast<uint16_t>(OpCode::AllGather) == 47 &&
                  static_cast<uint16_t>(OpCode::Loop) == 53,
              "op codes are part of the Executable format");

} // namespace

const char *opCodeName(OpCode code) {
  switch (code) {
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  case OpCode::Name:                                                           \
    return Printed;
#include "partita/Runtime/Program/Ops.def"
  }
  return "<unknown op code>";
}

OpFamily opFamily(OpCode code) {
  switch (code) {
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  case OpCode::Name:                                                           \
    return OpFamily::Family;
#include "partita/Runtime/Program/Ops.def"
  }
  return OpFamily::Dedicated;
}

OpArity opArity(OpCode code) {
  switch (code) {
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  case OpCode::Name:                                                           \
    return {Operands, Results};
#include "partita/Runtime/Program/Ops.def"
  }
  return {-1, -1};
}

int64_t TensorType::numElements() const { return numElementsOf(shape); }

int64_t TensorType::bytes() const { return numElements() * dtypeSize(dtype); }

std::vector<std::string> collectiveAxes(const Instruction &inst) {
  std::vector<std::string> axes;
  size_t start = 0;
  while (start <= inst.text.size()) {
    size_t comma = inst.text.find(',', start);
    if (comma == std::string::npos)
      comma = inst.text.size();
    if (comma > start)
      axes.push_back(inst.text.substr(start, comma - start));
    start = comma + 1;
  }
  return axes;
}

} // namespace partita
