//===- GradientRules.cpp - Each op's reverse-mode gradient rule -----------===//
//
// One rule per op kind, registered once in a table keyed by the op's
// TypeID (docs/Autodiff.md lists them); the reverse sweep in Autodiff.cpp
// looks each op's rule up and calls it.
//
// Why here and not with the ops in the dialect, as their sharding rules
// are: a sharding rule is plain data about the op (factors of its
// dimensions) that every pass reads, whereas a gradient rule is a piece of
// the autodiff transformation. It emits ops through the autodiff emitter
// (AutodiffEmitter.h) and reads and writes the sweep's adjoints, and both
// belong to lib/Transforms, a layer the dialect may not include
// (docs/Overview.md, tools/check-layers.sh). An op interface in the dialect
// would have to declare the sweep's state in dialect headers, and external
// models attached from here would work only in contexts whose registry
// someone remembered to extend; a table here needs neither.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"
#include "partita/Sharding/Einsum.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <map>
#include <type_traits>

using namespace mlir;
using namespace partita;
using namespace partita::autodiff;

GradientContext::GradientContext(Operation *op, OpBuilder &builder, Value g)
    : builder(builder), e{builder, op->getLoc()},
      y(op->getNumResults() == 1 ? op->getResult(0) : Value()), g(g) {}

GradientContext::~GradientContext() = default;

namespace {

/// Gradient rules by the TypeID of the op they differentiate.
class GradientRuleTable {
public:
  GradientRuleTable();

  const GradientRule *lookup(Operation *op) const {
    auto it = rules.find(op->getName().getTypeID());
    return it == rules.end() ? nullptr : &it->second;
  }

private:
  /// Registers `rule` for each of `OpTys`. The rule takes the op as its
  /// class and the context, and returns LogicalResult or nothing (success).
  template <typename... OpTys, typename Rule>
  void add(Rule rule) {
    (addOne<OpTys>(rule), ...);
  }

  template <typename OpTy, typename Rule>
  void addOne(Rule rule) {
    bool added =
        rules
            .try_emplace(
                TypeID::get<OpTy>(),
                [rule](Operation *op, GradientContext &c) -> LogicalResult {
                  if constexpr (std::is_void_v<decltype(rule(
                                    cast<OpTy>(op), c))>) {
                    rule(cast<OpTy>(op), c);
                    return success();
                  } else {
                    return rule(cast<OpTy>(op), c);
                  }
                })
            .second;
    assert(added && "two gradient rules for one op");
    (void)added;
  }

  void addElementwise();
  void addReductions();
  void addShapes();
  void addIndexing();
  void addLayoutAndBarriers();

  llvm::DenseMap<TypeID, GradientRule> rules;
};

/// One operand's letters, and every letter's size, of an einsum spec.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, int64_t> sizes;
};

FailureOr<EinsumSpec> parseSpec(EinsumOp op) {
  EinsumSpec spec;
  if (!splitEinsumTerms(op.getSpec().str(), spec.inputs, spec.output))
    return failure();
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    Shape shape = shapeOf(op.getOperand(i));
    if (shape.size() != spec.inputs[i].size())
      return failure();
    for (size_t d = 0; d < shape.size(); ++d)
      spec.sizes[spec.inputs[i][d]] = shape[d];
  }
  return spec;
}

bool hasRepeatedLetter(const std::string &letters) {
  for (size_t i = 0; i < letters.size(); ++i)
    if (letters.find(letters[i], i + 1) != std::string::npos)
      return true;
  return false;
}

/// d operand_i = einsum(g, other operands -> operand_i's letters that
/// appear elsewhere), broadcast over the letters only it has.
LogicalResult einsumRule(EinsumOp op, GradientContext &c) {
  FailureOr<EinsumSpec> spec = parseSpec(op);
  if (failed(spec))
    return c.fail("cannot read the einsum spec");
  for (size_t i = 0; i < spec->inputs.size(); ++i) {
    Value operand = op.getOperand(i);
    if (!isFloatTensor(operand))
      continue;
    const std::string &target = spec->inputs[i];
    if (hasRepeatedLetter(target))
      return c.fail("no gradient rule for an einsum with a repeated index "
                    "in one operand");
    std::string available = spec->output;
    std::string sources = spec->output;
    SmallVector<Value> operands = {c.g};
    for (size_t j = 0; j < spec->inputs.size(); ++j) {
      if (j == i)
        continue;
      sources += "," + spec->inputs[j];
      available += spec->inputs[j];
      operands.push_back(op.getOperand(j));
    }
    std::string kept;
    Shape keptShape;
    SmallVector<int64_t> keptDims;
    for (size_t d = 0; d < target.size(); ++d)
      if (available.find(target[d]) != std::string::npos) {
        kept += target[d];
        keptShape.push_back(spec->sizes[target[d]]);
        keptDims.push_back(static_cast<int64_t>(d));
      }
    Value partial = c.e.einsum(sources + "->" + kept, operands, keptShape);
    if (kept.size() != target.size())
      partial = c.e.broadcast(partial, shapeOf(operand), keptDims);
    c.accumulate(operand, partial);
  }
  return success();
}

/// max and min: g to the operand that wins (ties to the left), 0 to the
/// other.
auto winnerTakesAll(CompareDirection leftWins) {
  return [leftWins](Operation *op, GradientContext &c) {
    Emitter &e = c.e;
    Value left = e.compare(leftWins, op->getOperand(0), op->getOperand(1));
    Value zero = e.zerosLike(c.g);
    c.accumulate(op->getOperand(0), e.select(left, c.g, zero));
    c.accumulate(op->getOperand(1), e.select(left, zero, c.g));
  };
}

/// The ops whose gradient is a sharding constraint on g: the cotangent
/// keeps the value's layout (as JAX transposes with_sharding_constraint).
template <typename OpTy>
void constrainLikeInput(OpTy op, GradientContext &c) {
  c.accumulate(op.getInput(), c.builder.create<ShardingConstraintOp>(
                                  op->getLoc(), c.g, op.getSharding()));
}

GradientRuleTable::GradientRuleTable() {
  addElementwise();
  addReductions();
  addShapes();
  addIndexing();
  addLayoutAndBarriers();
  add<EinsumOp>(einsumRule);
  // Piecewise constant or integer: no gradient flows.
  add<CompareOp, ArgmaxOp, IotaOp, ConstantOp, FloorOp, SignOp, NotOp, AndOp,
      OrOp, XorOp, RemOp, ShiftLeftOp, ShiftRightLogicalOp,
      ShiftRightArithmeticOp, BitcastConvertOp>(
      [](Operation *, GradientContext &) {});
}

void GradientRuleTable::addElementwise() {
  add<AddOp>([](AddOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.g);
    c.accumulate(op->getOperand(1), c.g);
  });
  add<SubOp>([](SubOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.g);
    c.accumulate(op->getOperand(1), c.e.neg(c.g));
  });
  add<MulOp>([](MulOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.e.mul(c.g, op->getOperand(1)));
    c.accumulate(op->getOperand(1), c.e.mul(c.g, op->getOperand(0)));
  });
  add<DivOp>([](DivOp op, GradientContext &c) {
    Value b = op->getOperand(1);
    c.accumulate(op->getOperand(0), c.e.div(c.g, b));
    c.accumulate(b, c.e.neg(c.e.div(c.e.mul(c.g, c.y), b)));
  });
  add<MaxOp>(winnerTakesAll(CompareDirection::GE));
  add<MinOp>(winnerTakesAll(CompareDirection::LE));
  add<PowOp>([](PowOp op, GradientContext &c) {
    Emitter &e = c.e;
    Value a = op->getOperand(0), b = op->getOperand(1);
    Value one = e.splat(1, c.g.getType());
    c.accumulate(a, e.mul(e.mul(c.g, b), e.pow(a, e.sub(b, one))));
    c.accumulate(b, e.mul(e.mul(c.g, c.y), e.log(a)));
  });
  add<NegOp>([](NegOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.e.neg(c.g));
  });
  add<AbsOp>([](AbsOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0),
                 c.e.mul(c.g, c.e.sign(op->getOperand(0))));
  });
  add<ExpOp>([](ExpOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.e.mul(c.g, c.y));
  });
  add<LogOp>([](LogOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0), c.e.div(c.g, op->getOperand(0)));
  });
  add<Log1pOp>([](Log1pOp op, GradientContext &c) {
    Emitter &e = c.e;
    c.accumulate(op->getOperand(0),
                 e.div(c.g, e.add(op->getOperand(0),
                                  e.splat(1, c.g.getType()))));
  });
  add<TanhOp>([](TanhOp op, GradientContext &c) {
    Emitter &e = c.e;
    c.accumulate(op->getOperand(0),
                 e.mul(c.g, e.sub(e.splat(1, c.g.getType()),
                                  e.mul(c.y, c.y))));
  });
  add<LogisticOp>([](LogisticOp op, GradientContext &c) {
    Emitter &e = c.e;
    c.accumulate(op->getOperand(0),
                 e.mul(c.g, e.mul(c.y, e.sub(e.splat(1, c.g.getType()),
                                             c.y))));
  });
  add<SqrtOp>([](SqrtOp op, GradientContext &c) {
    Emitter &e = c.e;
    c.accumulate(op->getOperand(0),
                 e.div(e.mul(c.g, e.splat(0.5, c.g.getType())), c.y));
  });
  add<RsqrtOp>([](RsqrtOp op, GradientContext &c) {
    Emitter &e = c.e;
    c.accumulate(op->getOperand(0),
                 e.mul(e.mul(c.g, e.splat(-0.5, c.g.getType())),
                       e.mul(c.y, e.mul(c.y, c.y))));
  });
  add<ErfOp>([](ErfOp op, GradientContext &c) {
    Emitter &e = c.e;
    Value x = op->getOperand(0);
    c.accumulate(x, e.mul(e.mul(c.g, e.splat(2.0 / std::sqrt(M_PI),
                                             c.g.getType())),
                          e.exp(e.neg(e.mul(x, x)))));
  });
  add<SinOp>([](SinOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0),
                 c.e.mul(c.g, c.e.cos(op->getOperand(0))));
  });
  add<CosOp>([](CosOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0),
                 c.e.neg(c.e.mul(c.g, c.e.sin(op->getOperand(0)))));
  });
  add<SelectOp>([](SelectOp op, GradientContext &c) {
    Value zero = c.e.zerosLike(c.g);
    c.accumulate(op->getOperand(1), c.e.select(op->getOperand(0), c.g, zero));
    c.accumulate(op->getOperand(2), c.e.select(op->getOperand(0), zero, c.g));
  });
  add<ConvertOp>([](ConvertOp op, GradientContext &c) {
    Value x = op.getOperand();
    if (isFloatTensor(x))
      c.accumulate(x, c.e.convert(c.g, tensorTypeOf(x).getElementType()));
  });
}

void GradientRuleTable::addReductions() {
  add<ReduceOp>([](ReduceOp op, GradientContext &c) {
    Emitter &e = c.e;
    Value x = op.getOperand();
    ArrayRef<int64_t> dims = op.getDims();
    if (op.getKind() == ReductionKind::Sum) {
      c.accumulate(x, e.unreduce(c.g, x, dims));
    } else if (op.getKind() == ReductionKind::Max ||
               op.getKind() == ReductionKind::Min) {
      // Split among ties, as JAX does.
      Value hit = e.compare(CompareDirection::EQ, x, e.unreduce(c.y, x, dims));
      Value ones = e.convert(hit, tensorTypeOf(x).getElementType());
      Value count = e.unreduce(e.reduceSum(ones, dims), x, dims);
      c.accumulate(x, e.div(e.mul(e.unreduce(c.g, x, dims), ones), count));
    }
  });
  add<CumsumOp>([](CumsumOp op, GradientContext &c) {
    OpBuilder &b = c.builder;
    c.accumulate(op.getOperand(),
                 b.create<CumsumOp>(op->getLoc(), c.g.getType(), c.g,
                                    b.getI64IntegerAttr(op.getDim()),
                                    op.getReverse() ? UnitAttr()
                                                    : b.getUnitAttr()));
  });
  add<BroadcastOp>([](BroadcastOp op, GradientContext &c) {
    Value x = op.getOperand();
    Shape in = shapeOf(x), out = shapeOf(c.y);
    ArrayRef<int64_t> dims = op.getDims();
    SmallVector<int64_t> summed;
    for (int64_t d = 0; d < static_cast<int64_t>(out.size()); ++d) {
      auto at = llvm::find(dims, d);
      if (at == dims.end() || in[at - dims.begin()] != out[d])
        summed.push_back(d);
    }
    // Sum the new and expanded dimensions, then restore size-1 ones.
    c.accumulate(x, c.e.reshape(summed.empty() ? c.g
                                               : c.e.reduceSum(c.g, summed),
                                in));
  });
}

void GradientRuleTable::addShapes() {
  add<ReshapeOp>([](ReshapeOp op, GradientContext &c) {
    c.accumulate(op->getOperand(0),
                 c.e.reshape(c.g, shapeOf(op->getOperand(0))));
  });
  add<TransposeOp>([](TransposeOp op, GradientContext &c) {
    ArrayRef<int64_t> perm = op.getPerm();
    SmallVector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = static_cast<int64_t>(i);
    Value x = op->getOperand(0);
    c.accumulate(x, c.builder.create<TransposeOp>(op->getLoc(), x.getType(),
                                                  c.g, inverse));
  });
  add<SliceOp>([](SliceOp op, GradientContext &c) -> LogicalResult {
    if (llvm::any_of(op.getStride(), [](int64_t s) { return s != 1; }))
      return c.fail("no gradient rule for a strided slice");
    Shape in = shapeOf(op.getOperand());
    SmallVector<int64_t> low(op.getStart()), high;
    for (size_t d = 0; d < in.size(); ++d)
      high.push_back(in[d] - op.getLimit()[d]);
    Value zero = c.e.splat(
        0, RankedTensorType::get({}, tensorTypeOf(c.g).getElementType()));
    c.accumulate(op.getOperand(),
                 c.builder.create<PadOp>(op->getLoc(),
                                         op.getOperand().getType(), c.g, zero,
                                         low, high));
    return success();
  });
  add<ConcatenateOp>([](ConcatenateOp op, GradientContext &c) {
    int64_t dim = static_cast<int64_t>(op.getDim()), offset = 0;
    Shape out = shapeOf(c.y);
    for (Value input : op.getInputs()) {
      SmallVector<int64_t> start(out.size(), 0), limit(out);
      start[dim] = offset;
      limit[dim] = offset + shapeOf(input)[dim];
      offset = limit[dim];
      c.accumulate(input, c.e.slice(c.g, start, limit));
    }
  });
  add<PadOp>([](PadOp op, GradientContext &c) {
    Value x = op.getOperand();
    Shape in = shapeOf(x);
    SmallVector<int64_t> start(op.getLow()), limit;
    for (size_t d = 0; d < in.size(); ++d)
      limit.push_back(start[d] + in[d]);
    Value inner = c.e.slice(c.g, start, limit);
    c.accumulate(x, inner);
    if (isFloatTensor(op.getPaddingValue())) {
      SmallVector<int64_t> all;
      for (size_t d = 0; d < in.size(); ++d)
        all.push_back(static_cast<int64_t>(d));
      c.accumulate(op.getPaddingValue(),
                   c.e.sub(c.e.reduceSum(c.g, all), c.e.reduceSum(inner, all)));
    }
  });
}

void GradientRuleTable::addIndexing() {
  add<DynamicSliceOp>([](DynamicSliceOp op, GradientContext &c) {
    Value x = op.getOperand();
    c.accumulate(x, c.e.dynamicUpdateSlice(c.e.zerosLike(x), c.g,
                                           op.getStartIndices()));
  });
  add<DynamicUpdateSliceOp>([](DynamicUpdateSliceOp op, GradientContext &c) {
    ValueRange starts = op.getStartIndices();
    Value u = op.getUpdate();
    c.accumulate(op.getOperand(),
                 c.e.dynamicUpdateSlice(c.g, c.e.zerosLike(u), starts));
    c.accumulate(u, c.e.dynamicSlice(c.g, starts, shapeOf(u)));
  });
  add<GatherOp>([](GatherOp op, GradientContext &c) {
    Value table = op.getTable();
    c.accumulate(table, c.builder.create<ScatterAddOp>(
                            op->getLoc(), table.getType(),
                            c.e.zerosLike(table), op.getIndices(), c.g));
  });
  add<ScatterAddOp>([](ScatterAddOp op, GradientContext &c) {
    c.accumulate(op.getTable(), c.g);
    c.accumulate(op.getUpdates(),
                 c.builder.create<GatherOp>(op->getLoc(),
                                            op.getUpdates().getType(), c.g,
                                            op.getIndices()));
  });
  add<TopKOp>([](TopKOp op, GradientContext &c) -> LogicalResult {
    Value gv = c.adjoint(op.getValues());
    if (!gv)
      return success();
    Emitter &e = c.e;
    Value x = op.getOperand();
    Shape in = shapeOf(x), values = shapeOf(op.getValues());
    int64_t rank = static_cast<int64_t>(in.size());
    if (static_cast<int64_t>(op.getDim()) != rank - 1)
      return c.fail("no gradient rule for top_k along a dimension other "
                    "than the last");
    // d x[..., n] = sum_k g[..., k] * (indices[..., k] == n).
    Shape wide(values);
    wide.push_back(in.back());
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    Value indices = e.broadcast(op.getIndices(), wide, dims);
    Value positions = c.builder.create<IotaOp>(
        op->getLoc(),
        RankedTensorType::get(wide,
                              tensorTypeOf(op.getIndices()).getElementType()),
        static_cast<uint64_t>(rank));
    Value hot = e.convert(e.compare(CompareDirection::EQ, indices, positions),
                          tensorTypeOf(x).getElementType());
    std::string lead;
    for (int64_t d = 0; d + 1 < rank; ++d)
      lead += static_cast<char>('a' + d);
    c.accumulate(x, e.einsum(lead + "yz," + lead + "y->" + lead + "z",
                             ValueRange{hot, gv}, in));
    return success();
  });
}

void GradientRuleTable::addLayoutAndBarriers() {
  add<OptimizationBarrierOp>([](OptimizationBarrierOp op,
                                GradientContext &c) {
    for (auto [input, result] : llvm::zip(op.getOperands(), op.getResults()))
      c.accumulate(input, c.adjoint(result));
  });
  add<ShardingConstraintOp>(constrainLikeInput<ShardingConstraintOp>);
  // A reshard's cotangent is resharded the same way: a new value, so that
  // two reshards of one cotangent (g flows unchanged through an add) to
  // different layouts do not become two conflicting constraints on g.
  add<ReshardOp>([](ReshardOp op, GradientContext &c) {
    c.accumulate(op.getInput(), c.builder.create<ReshardOp>(
                                    op->getLoc(), c.g, op.getSharding()));
  });
  add<LogicalConstraintOp>([](LogicalConstraintOp op, GradientContext &c) {
    c.accumulate(op.getInput(), c.builder.create<LogicalConstraintOp>(
                                    op->getLoc(), c.g, op.getAxes(),
                                    op.getRoleAttr()));
  });
}

} // namespace

const GradientRule *partita::autodiff::lookupGradientRule(Operation *op) {
  static const GradientRuleTable table;
  return table.lookup(op);
}
