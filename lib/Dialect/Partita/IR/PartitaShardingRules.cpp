//===- PartitaShardingRules.cpp - Each op's sharding rule -----------------===//
//
// The per-op half of the sharding knowledge: for every tensor op, which
// factor each operand and result dimension maps to, what kind of factor it
// is, and how partial values pass. Propagation and partitioning read these
// through ShardingRuleOpInterface and never look at op kinds themselves.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Sharding/Einsum.h"

using namespace mlir;
using namespace partita;

namespace {

std::vector<int64_t> shapeOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return {type.getShape().begin(), type.getShape().end()};
}

/// Factors for a rank-0 tensor (no dimensions).
TensorFactors scalar() { return {}; }

/// Elementwise rule over the op's result shape with its operand count, and
/// partial values passing as `flow` says.
OpShardingRule elementwise(Operation *op, PartialFlow flow = PartialFlow::None,
                           std::vector<int> partialOperands = {},
                           std::vector<PartialKind> kinds = {
                               PartialKind::Sum}) {
  OpShardingRule rule = elementwiseRule(shapeOf(op->getResult(0)),
                                        static_cast<int>(op->getNumOperands()),
                                        static_cast<int>(op->getNumResults()));
  rule.partialFlow = flow;
  if (flow != PartialFlow::None) {
    rule.partialOperands = std::move(partialOperands);
    rule.partialKinds = std::move(kinds);
  }
  return rule;
}

const std::vector<PartialKind> kAllKinds = {PartialKind::Sum, PartialKind::Max,
                                            PartialKind::Min};

/// Makes `rule` pass partial values of `kinds` through its first operand.
void passThroughOperand0(OpShardingRule &rule,
                         std::vector<PartialKind> kinds = kAllKinds) {
  rule.partialFlow = PartialFlow::Single;
  rule.partialOperands = {0};
  rule.partialKinds = std::move(kinds);
}

/// Rule for ops that keep most dimensions and constrain some: dimension `d`
/// of the operand and of the result share a pass-through factor when
/// `keeps(d)`; otherwise each gets its own need-replication factor.
template <typename Keeps>
OpShardingRule sameRankRule(const std::vector<int64_t> &operand,
                            const std::vector<int64_t> &result, Keeps keeps) {
  OpShardingRule rule;
  TensorFactors in, out;
  for (size_t d = 0; d < operand.size(); ++d) {
    if (keeps(d)) {
      int factor = rule.addFactor(operand[d]);
      in.push_back({factor});
      out.push_back({factor});
    } else {
      in.push_back({rule.addFactor(operand[d], FactorType::NeedReplication)});
      out.push_back({rule.addFactor(result[d], FactorType::NeedReplication)});
    }
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  return rule;
}

/// Appends a rank-0 operand (no factors) `count` times.
void addScalarOperands(OpShardingRule &rule, size_t count) {
  for (size_t i = 0; i < count; ++i)
    rule.operands.push_back(scalar());
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and elementwise ops
//===----------------------------------------------------------------------===//

OpShardingRule ConstantOp::getShardingRule() { return elementwise(*this); }
OpShardingRule IotaOp::getShardingRule() { return elementwise(*this); }

// Linear in their single operand: partial sums pass.
OpShardingRule NegOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Single, {0});
}

// Nonlinear unary ops: no partial values.
OpShardingRule AbsOp::getShardingRule() { return elementwise(*this); }
OpShardingRule SignOp::getShardingRule() { return elementwise(*this); }
OpShardingRule ExpOp::getShardingRule() { return elementwise(*this); }
OpShardingRule LogOp::getShardingRule() { return elementwise(*this); }
OpShardingRule Log1pOp::getShardingRule() { return elementwise(*this); }
OpShardingRule TanhOp::getShardingRule() { return elementwise(*this); }
OpShardingRule LogisticOp::getShardingRule() { return elementwise(*this); }
OpShardingRule SqrtOp::getShardingRule() { return elementwise(*this); }
OpShardingRule RsqrtOp::getShardingRule() { return elementwise(*this); }
OpShardingRule ErfOp::getShardingRule() { return elementwise(*this); }
OpShardingRule SinOp::getShardingRule() { return elementwise(*this); }
OpShardingRule CosOp::getShardingRule() { return elementwise(*this); }
OpShardingRule FloorOp::getShardingRule() { return elementwise(*this); }
OpShardingRule NotOp::getShardingRule() { return elementwise(*this); }
OpShardingRule ConvertOp::getShardingRule() { return elementwise(*this); }

// x + y and x - y are linear in (x, y) together: both partial the same way.
OpShardingRule AddOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Joint, {0, 1});
}
OpShardingRule SubOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Joint, {0, 1});
}
// x * y is linear in each operand while the other is whole; x / y in x.
OpShardingRule MulOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Single, {0, 1});
}
OpShardingRule DivOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Single, {0});
}
// max of candidates is a candidate of the max (likewise min).
OpShardingRule MaxOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Joint, {0, 1}, {PartialKind::Max});
}
OpShardingRule MinOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Joint, {0, 1}, {PartialKind::Min});
}
OpShardingRule RemOp::getShardingRule() { return elementwise(*this); }
OpShardingRule PowOp::getShardingRule() { return elementwise(*this); }
OpShardingRule AndOp::getShardingRule() { return elementwise(*this); }
OpShardingRule OrOp::getShardingRule() { return elementwise(*this); }
OpShardingRule XorOp::getShardingRule() { return elementwise(*this); }
OpShardingRule ShiftLeftOp::getShardingRule() { return elementwise(*this); }
OpShardingRule ShiftRightLogicalOp::getShardingRule() {
  return elementwise(*this);
}
OpShardingRule ShiftRightArithmeticOp::getShardingRule() {
  return elementwise(*this);
}
OpShardingRule BitcastConvertOp::getShardingRule() {
  return elementwise(*this);
}
OpShardingRule CompareOp::getShardingRule() { return elementwise(*this); }
// Selecting between two partial sums gives a partial sum.
OpShardingRule SelectOp::getShardingRule() {
  return elementwise(*this, PartialFlow::Joint, {1, 2});
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

OpShardingRule EinsumOp::getShardingRule() {
  Expected<EinsumSpec> spec =
      parseEinsumSpec(getSpec().str(), static_cast<int>(getOperands().size()));
  std::vector<std::vector<int64_t>> shapes;
  for (Value operand : getOperands())
    shapes.push_back(shapeOf(operand));
  // The verifier guarantees a valid spec.
  return spec ? einsumRule(*spec, shapes) : OpShardingRule();
}

OpShardingRule ReduceOp::getShardingRule() {
  std::vector<int64_t> shape = shapeOf(getOperand());
  ArrayRef<int64_t> reduced = getDims();
  ReductionKind kind = getKind();
  PartialKind partial = toPartialKind(kind);
  OpShardingRule rule;
  TensorFactors in, out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (llvm::is_contained(reduced, static_cast<int64_t>(d))) {
      // and/or have no partial form: those dimensions stay whole.
      in.push_back({rule.addFactor(shape[d], partial == PartialKind::None
                                                 ? FactorType::NeedReplication
                                                 : FactorType::Reduction)});
    } else {
      int factor = rule.addFactor(shape[d]);
      in.push_back({factor});
      out.push_back({factor});
    }
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  if (partial != PartialKind::None) {
    rule.reductionKind = partial;
    passThroughOperand0(rule, {partial});
  }
  return rule;
}

OpShardingRule ArgmaxOp::getShardingRule() {
  std::vector<int64_t> shape = shapeOf(getOperand());
  OpShardingRule rule;
  TensorFactors in, out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) == static_cast<int64_t>(getDim())) {
      in.push_back({rule.addFactor(shape[d], FactorType::NeedReplication)});
    } else {
      int factor = rule.addFactor(shape[d]);
      in.push_back({factor});
      out.push_back({factor});
    }
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  return rule;
}

OpShardingRule TopKOp::getShardingRule() {
  std::vector<int64_t> shape = shapeOf(getOperand());
  int64_t dim = static_cast<int64_t>(getDim());
  OpShardingRule rule =
      sameRankRule(shape, shapeOf(getValues()),
                   [&](size_t d) { return static_cast<int64_t>(d) != dim; });
  // Indices are laid out like values.
  rule.results.push_back(rule.results[0]);
  return rule;
}

OpShardingRule CumsumOp::getShardingRule() {
  std::vector<int64_t> shape = shapeOf(getOperand());
  int64_t dim = static_cast<int64_t>(getDim());
  OpShardingRule rule;
  TensorFactors mapping;
  for (size_t d = 0; d < shape.size(); ++d)
    mapping.push_back({rule.addFactor(
        shape[d], static_cast<int64_t>(d) == dim ? FactorType::NeedReplication
                                                 : FactorType::PassThrough)});
  rule.operands.push_back(mapping);
  rule.results.push_back(mapping);
  passThroughOperand0(rule, {PartialKind::Sum});
  return rule;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpShardingRule BroadcastOp::getShardingRule() {
  std::vector<int64_t> in = shapeOf(getOperand()), out = shapeOf(getResult());
  ArrayRef<int64_t> dims = getDims();
  OpShardingRule rule;
  TensorFactors inMap(in.size()), outMap(out.size());
  for (size_t r = 0; r < out.size(); ++r) {
    const int64_t *source = llvm::find(dims, static_cast<int64_t>(r));
    if (source != dims.end() && in[source - dims.begin()] == out[r]) {
      int factor = rule.addFactor(out[r]);
      inMap[source - dims.begin()] = {factor};
      outMap[r] = {factor};
    } else if (out[r] > 1) {
      // A new or expanded dimension: each device can broadcast its block.
      outMap[r] = {rule.addFactor(out[r])};
    }
  }
  rule.operands.push_back(std::move(inMap));
  rule.results.push_back(std::move(outMap));
  passThroughOperand0(rule);
  return rule;
}

OpShardingRule ReshapeOp::getShardingRule() {
  return reshapeRule(shapeOf(getOperand()), shapeOf(getResult()));
}

OpShardingRule TransposeOp::getShardingRule() {
  std::vector<int64_t> in = shapeOf(getOperand());
  ArrayRef<int64_t> perm = getPerm();
  OpShardingRule rule;
  TensorFactors inMap, outMap;
  for (int64_t size : in)
    inMap.push_back({rule.addFactor(size)});
  for (int64_t source : perm)
    outMap.push_back(inMap[source]);
  rule.operands.push_back(std::move(inMap));
  rule.results.push_back(std::move(outMap));
  passThroughOperand0(rule);
  return rule;
}

OpShardingRule SliceOp::getShardingRule() {
  std::vector<int64_t> in = shapeOf(getOperand());
  OpShardingRule rule = sameRankRule(in, shapeOf(getResult()), [&](size_t d) {
    return getStart()[d] == 0 && getLimit()[d] == in[d] && getStride()[d] == 1;
  });
  passThroughOperand0(rule);
  return rule;
}

OpShardingRule DynamicSliceOp::getShardingRule() {
  std::vector<int64_t> in = shapeOf(getOperand());
  OpShardingRule rule = sameRankRule(in, shapeOf(getResult()), [&](size_t d) {
    return getSizes()[d] == in[d];
  });
  addScalarOperands(rule, getStartIndices().size());
  passThroughOperand0(rule);
  return rule;
}

OpShardingRule DynamicUpdateSliceOp::getShardingRule() {
  std::vector<int64_t> in = shapeOf(getOperand()),
                       update = shapeOf(getUpdate());
  OpShardingRule rule;
  TensorFactors inMap, updateMap;
  for (size_t d = 0; d < in.size(); ++d) {
    if (update[d] == in[d]) {
      int factor = rule.addFactor(in[d]);
      inMap.push_back({factor});
      updateMap.push_back({factor});
    } else {
      inMap.push_back({rule.addFactor(in[d], FactorType::NeedReplication)});
      updateMap.push_back(
          {rule.addFactor(update[d], FactorType::NeedReplication)});
    }
  }
  rule.operands = {inMap, updateMap};
  addScalarOperands(rule, getStartIndices().size());
  rule.results = {inMap};
  rule.partialFlow = PartialFlow::Joint;
  rule.partialOperands = {0, 1};
  rule.partialKinds = {PartialKind::Sum};
  return rule;
}

OpShardingRule ConcatenateOp::getShardingRule() {
  std::vector<int64_t> out = shapeOf(getResult());
  int64_t dim = static_cast<int64_t>(getDim());
  OpShardingRule rule;
  std::vector<int> shared(out.size(), -1);
  for (size_t d = 0; d < out.size(); ++d)
    if (static_cast<int64_t>(d) != dim)
      shared[d] = rule.addFactor(out[d]);
  auto mapping = [&](const std::vector<int64_t> &shape) {
    TensorFactors result;
    for (size_t d = 0; d < shape.size(); ++d)
      result.push_back(
          {shared[d] >= 0
               ? shared[d]
               : rule.addFactor(shape[d], FactorType::NeedReplication)});
    return result;
  };
  for (Value input : getInputs())
    rule.operands.push_back(mapping(shapeOf(input)));
  rule.results.push_back(mapping(out));
  rule.partialFlow = PartialFlow::Joint;
  for (size_t i = 0; i < getInputs().size(); ++i)
    rule.partialOperands.push_back(static_cast<int>(i));
  rule.partialKinds = {PartialKind::Sum};
  return rule;
}

OpShardingRule PadOp::getShardingRule() {
  OpShardingRule rule =
      sameRankRule(shapeOf(getOperand()), shapeOf(getResult()), [&](size_t d) {
        return getLow()[d] == 0 && getHigh()[d] == 0;
      });
  rule.operands.push_back(scalar());
  return rule;
}

namespace {
/// The factors of a row lookup: the table's rows (of type `rows`), then
/// those it shares with its rows (gather's result, scatter_add's updates):
/// one per index dimension, of type `positions`, then one per row
/// dimension of the table past the first.
void addRowLookupFactors(OpShardingRule &rule,
                         const std::vector<int64_t> &table,
                         const std::vector<int64_t> &indices, FactorType rows,
                         FactorType positions, TensorFactors &tableMap,
                         TensorFactors &indexMap, TensorFactors &rowsMap) {
  tableMap.push_back({rule.addFactor(table[0], rows)});
  for (int64_t size : indices) {
    int factor = rule.addFactor(size, positions);
    indexMap.push_back({factor});
    rowsMap.push_back({factor});
  }
  for (size_t d = 1; d < table.size(); ++d) {
    int factor = rule.addFactor(table[d]);
    tableMap.push_back({factor});
    rowsMap.push_back({factor});
  }
}
} // namespace

OpShardingRule GatherOp::getShardingRule() {
  std::vector<int64_t> table = shapeOf(getTable()),
                       indices = shapeOf(getIndices());
  OpShardingRule rule;
  TensorFactors tableMap, indexMap, resultMap;
  // Rows split over some axes: each device looks up the rows it holds
  // (zeros for the others) and the results are summed over those axes, as
  // Megatron's vocabulary-parallel embedding does (the partitioner rebases
  // the indices: Partitioner::localizeRowLookup).
  addRowLookupFactors(rule, table, indices, FactorType::Reduction,
                      FactorType::PassThrough, tableMap, indexMap, resultMap);
  rule.operands = {tableMap, indexMap};
  rule.results = {resultMap};
  passThroughOperand0(rule, {PartialKind::Sum});
  return rule;
}

namespace {
/// True when `value` is all zeros by construction: a zero splat constant,
/// or a broadcast of one (how JAX writes the table of `.at[].add` and of
/// an embedding's gradient).
bool isZeros(Value value) {
  for (int hops = 0; hops < 4 && value; ++hops) {
    if (auto broadcast = value.getDefiningOp<BroadcastOp>()) {
      value = broadcast.getOperand();
      continue;
    }
    auto constant = value.getDefiningOp<ConstantOp>();
    auto dense =
        constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    if (!dense || !dense.isSplat())
      return false;
    Attribute element = dense.getSplatValue<Attribute>();
    if (auto f = dyn_cast<FloatAttr>(element))
      return f.getValue().isZero();
    if (auto i = dyn_cast<IntegerAttr>(element))
      return i.getValue().isZero();
    return false;
  }
  return false;
}
} // namespace

OpShardingRule ScatterAddOp::getShardingRule() {
  std::vector<int64_t> table = shapeOf(getTable()),
                       indices = shapeOf(getIndices());
  OpShardingRule rule;
  TensorFactors tableMap, indexMap, updateMap;
  // Index positions are summed into the table. Into a table of zeros (an
  // embedding's gradient), each device adds its own positions' rows and
  // the tables are summed over the split axes, with the other gradients
  // (docs/Partitioning.md, "Row lookups"). Into any other table, every
  // device would add the whole table to its part of the updates, so the
  // positions stay whole.
  bool zeros = isZeros(getTable());
  FactorType positions =
      zeros ? FactorType::Reduction : FactorType::NeedReplication;
  addRowLookupFactors(rule, table, indices, FactorType::NeedReplication,
                      positions, tableMap, indexMap, updateMap);
  rule.operands = {tableMap, indexMap, updateMap};
  rule.results = {tableMap};
  // Linear in the table and the updates jointly; into zeros, linear in the
  // updates alone (a partial gradient scatters into a partial table).
  rule.partialFlow = zeros ? PartialFlow::Single : PartialFlow::Joint;
  rule.partialOperands = zeros ? std::vector<int>{2} : std::vector<int>{0, 2};
  rule.partialKinds = {PartialKind::Sum};
  return rule;
}

//===----------------------------------------------------------------------===//
// Control and sharding ops
//===----------------------------------------------------------------------===//

namespace {
OpShardingRule identityOver(ValueRange values) {
  std::vector<std::vector<int64_t>> shapes;
  for (Value value : values)
    shapes.push_back(shapeOf(value));
  return identityRule(shapes);
}
} // namespace

// Carried values keep one sharding from the operands through the body to the
// results; propagation ties the body's arguments and yields in as well.
OpShardingRule LoopOp::getShardingRule() { return identityOver(getInits()); }

OpShardingRule OptimizationBarrierOp::getShardingRule() {
  return identityOver(getOperands());
}

OpShardingRule LogicalConstraintOp::getShardingRule() {
  return identityOver(getInput());
}

OpShardingRule ShardingConstraintOp::getShardingRule() {
  OpShardingRule rule = identityOver(getInput());
  rule.partialFlow = PartialFlow::None;
  rule.partialOperands.clear();
  rule.partialKinds.clear();
  return rule;
}

// A reshard cuts the graph: its result's sharding is given, unrelated to
// its input's, so no factor is shared.
OpShardingRule ReshardOp::getShardingRule() {
  std::vector<int64_t> shape = shapeOf(getInput());
  OpShardingRule rule;
  TensorFactors in, out;
  for (int64_t size : shape) {
    in.push_back({rule.addFactor(size)});
    out.push_back({rule.addFactor(size)});
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  return rule;
}
