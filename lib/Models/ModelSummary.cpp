//===- ModelSummary.cpp - Parameters and FLOPs from the IR ----------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;
using namespace partita;

namespace {

int64_t elementsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

/// 2 * the product of every index size (one multiply and one add per point
/// of the iteration space); a one-operand einsum moves or sums, 1 per point.
int64_t einsumFlops(EinsumOp op) {
  std::string spec = op.getSpec().str();
  std::string inputs = spec.substr(0, spec.find("->"));
  std::map<char, int64_t> sizes;
  size_t operand = 0, dim = 0;
  for (char c : inputs) {
    if (c == ',') {
      ++operand;
      dim = 0;
      continue;
    }
    auto type = cast<RankedTensorType>(op.getOperand(operand).getType());
    if (dim < static_cast<size_t>(type.getRank()))
      sizes[c] = type.getDimSize(dim);
    ++dim;
  }
  int64_t points = 1;
  for (const auto &entry : sizes)
    points *= entry.second;
  return op.getNumOperands() > 1 ? 2 * points : points;
}

bool isArithmetic(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, RemOp, NegOp,
             AbsOp, ExpOp, LogOp, Log1pOp, TanhOp, LogisticOp, SqrtOp, RsqrtOp,
             ErfOp, SinOp, CosOp>(op);
}

void count(Block &block, int64_t times, ModelSummary &summary);

/// Adds `op`'s FLOPs, `times` over, to `summary` (a loop's body its trip
/// count more times).
void countOp(Operation &op, int64_t times, ModelSummary &summary) {
  if (auto loop = dyn_cast<LoopOp>(op)) {
    count(loop.getBody().front(),
          times * static_cast<int64_t>(loop.getTripCount()), summary);
    return;
  }
  if (auto einsum = dyn_cast<EinsumOp>(op))
    summary.matmulFlops += times * einsumFlops(einsum);
  else if (isArithmetic(&op))
    summary.vectorFlops += times * elementsOf(op.getResult(0).getType());
  else if (isa<ReduceOp, CumsumOp>(op))
    summary.vectorFlops += times * elementsOf(op.getOperand(0).getType());
  for (Region &region : op.getRegions())
    for (Block &inner : region)
      count(inner, times, summary);
}

void count(Block &block, int64_t times, ModelSummary &summary) {
  for (Operation &op : block)
    countOp(op, times, summary);
}

} // namespace

int64_t partita::opFlops(Operation *op) {
  ModelSummary summary;
  countOp(*op, 1, summary);
  return summary.matmulFlops + summary.vectorFlops;
}

ModelSummary partita::summarizeModel(ModuleOp module) {
  ModelSummary summary;
  func::FuncOp entry;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && (!entry || function.isPublic()))
      entry = function;
  if (!entry)
    return summary;
  for (BlockArgument arg : entry.getArguments()) {
    auto role = entry.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                                 PartitaDialect::kRoleAttrName);
    if (!role || role.getValue() != Role::Param)
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    summary.parameters += type.getNumElements();
    summary.parameterBytes +=
        type.getNumElements() *
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  }
  count(entry.getBody().front(), 1, summary);
  return summary;
}
