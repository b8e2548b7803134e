//===- TestPrintShardingRules.cpp - Show each op's sharding rule ----------===//
//
// A test pass: makes the per-op rules visible to FileCheck and checks each
// one against the op's actual shapes. Emits a remark at each op that
// implements ShardingRuleOpInterface with the text of its rule: the factors
// of each operand and result dimension, factor sizes and types, the
// reduction kind and how partial values pass; a rule that does not fit the
// op's shapes is an error.
//
// Example remark for `partita.einsum "bd,df->bf"` on 8x16 and 16x32:
// `([i, j], [j, k]) -> ([i, k]) {i=8, j=16 reduction, k=32} reduction=sum
// partial=single(0, 1) sum`
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace partita;

namespace {

std::vector<std::vector<int64_t>> shapesOf(ValueRange values) {
  std::vector<std::vector<int64_t>> shapes;
  for (Value value : values) {
    auto type = cast<RankedTensorType>(value.getType());
    shapes.emplace_back(type.getShape().begin(), type.getShape().end());
  }
  return shapes;
}

/// Prints every op's sharding rule as a remark, and checks it.
struct TestPrintShardingRulesPass
    : public PassWrapper<TestPrintShardingRulesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintShardingRulesPass)

  StringRef getArgument() const final { return "partita-print-sharding-rules"; }
  StringRef getDescription() const final {
    return "Prints every op's sharding rule as a remark (for tests)";
  }

  void runOnOperation() override {
    bool failedCheck = false;
    getOperation()->walk([&](ShardingRuleOpInterface op) {
      OpShardingRule rule = op.getShardingRule();
      Status status = rule.validate(shapesOf(op->getOperands()),
                                    shapesOf(op->getResults()));
      if (!status.ok()) {
        op->emitError() << "sharding rule does not fit the op: "
                        << status.message();
        failedCheck = true;
        return;
      }
      op->emitRemark() << rule.toString();
    });
    if (failedCheck)
      signalPassFailure();
  }
};

} // namespace

namespace partita {
namespace test {
void registerTestPrintShardingRulesPass() {
  PassRegistration<TestPrintShardingRulesPass>();
}
} // namespace test
} // namespace partita
