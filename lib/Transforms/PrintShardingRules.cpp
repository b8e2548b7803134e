//===- PrintShardingRules.cpp - Show each op's sharding rule --------------===//
//
// A test pass: makes the per-op rules visible to FileCheck and checks each
// one against the op's actual shapes.
//
//===----------------------------------------------------------------------===//

#include "partita/Transforms/Passes.h"

namespace partita {
#define GEN_PASS_DEF_PRINTSHARDINGRULESPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

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

struct PrintShardingRulesPass
    : public partita::impl::PrintShardingRulesPassBase<PrintShardingRulesPass> {
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
