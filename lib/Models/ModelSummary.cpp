//===- ModelSummary.cpp - Parameters and FLOPs from the IR ----------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <map>

using namespace mlir;
using namespace partita;

namespace {

/// Counts saturate at INT64_MAX instead of wrapping: a model too large to
/// count (--d-model 1000000000) is reported as such, not as a small or
/// negative number.
int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product;
  return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
}

int64_t elementsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t elements = 1;
  for (int64_t size : tensor.getShape())
    elements = saturatingMul(elements, size);
  return elements;
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
    points = saturatingMul(points, entry.second);
  return op.getNumOperands() > 1 ? saturatingMul(2, points) : points;
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
          saturatingMul(times, static_cast<int64_t>(loop.getTripCount())),
          summary);
    return;
  }
  if (auto einsum = dyn_cast<EinsumOp>(op))
    summary.matmulFlops = saturatingAdd(
        summary.matmulFlops, saturatingMul(times, einsumFlops(einsum)));
  else if (isArithmetic(&op))
    summary.vectorFlops = saturatingAdd(
        summary.vectorFlops,
        saturatingMul(times, elementsOf(op.getResult(0).getType())));
  else if (isa<ReduceOp, CumsumOp>(op))
    summary.vectorFlops = saturatingAdd(
        summary.vectorFlops,
        saturatingMul(times, elementsOf(op.getOperand(0).getType())));
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
  return saturatingAdd(summary.matmulFlops, summary.vectorFlops);
}

bool ModelSummary::saturated() const {
  return parameters == INT64_MAX || parameterBytes == INT64_MAX ||
         matmulFlops == INT64_MAX || vectorFlops == INT64_MAX ||
         saturatingAdd(matmulFlops, vectorFlops) == INT64_MAX;
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
    int64_t elements = elementsOf(type);
    summary.parameters = saturatingAdd(summary.parameters, elements);
    summary.parameterBytes = saturatingAdd(
        summary.parameterBytes,
        saturatingMul(elements, std::max<int64_t>(
                                    1, type.getElementTypeBitWidth() / 8)));
  }
  count(entry.getBody().front(), 1, summary);
  return summary;
}
