//===- RemakeValuesTest.cpp - fused chains' ops, both sides agree ---------===//
//
// The compiler copies cheap values next to the ops a fused chain takes
// (isFusedChainOp, by dialect op name) and the runtime's fusion takes the
// op codes isFusibleOp names: for every op of the runtime's table the two
// must agree, or copies would be made for chains that never form.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/Utils/RemakeValues.h"
#include "partita/Runtime/Program/Fused.h"

#include <catch2/catch.hpp>

using namespace partita;

TEST_CASE("remake: the compiler's fused-chain ops are the runtime's",
          "[codegen]") {
  int fusible = 0;
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  if (*(DialectOp)) {                                                          \
    INFO(DialectOp);                                                           \
    CHECK(isFusedChainOp(DialectOp) == isFusibleOp(OpCode::Name));             \
    fusible += isFusibleOp(OpCode::Name);                                      \
  }
#include "partita/Runtime/Program/Ops.def"
  CHECK(fusible == 22);
  CHECK_FALSE(isFusedChainOp("partita.compare"));
}
