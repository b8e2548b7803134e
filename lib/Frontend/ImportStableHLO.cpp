//===- ImportStableHLO.cpp - Programs JAX lowered, into partita -----------===//
//
// The StableHLO, CHLO and Shardy dialects are not linked in: their ops
// arrive as unregistered operations whose inherent attributes are a
// dictionary, and their dialect attributes (`#stablehlo.dot<…>`,
// `#sdy.sharding<…>`) as opaque attributes. The importer reads what it needs
// from their printed text — the printed forms are the stable, documented
// syntax — and builds partita ops in place of each op, keeping its location.
//
// Each op kind has one conversion in `conversions()`; an op without one is
// reported (all of them, then a count) and left in place.
//
//===----------------------------------------------------------------------===//
#include "partita/Frontend/ImportStableHLO.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Transforms/InlineCalls.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <limits>
#include <optional>

using namespace mlir;

namespace partita {

namespace {

/// The printed form of an attribute.
std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// An op's inherent attribute `name` (unregistered ops keep their
/// properties as a dictionary) or its discardable attribute.
Attribute property(Operation *op, StringRef name) {
  if (auto dict =
          dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    if (Attribute attr = dict.get(name))
      return attr;
  return op->getAttr(name);
}

/// The integers of `key = [1, 2]` in an attribute's text (empty if absent).
SmallVector<int64_t> intList(StringRef text, StringRef key) {
  SmallVector<int64_t> values;
  size_t at = text.find((key + " = [").str());
  if (at == StringRef::npos)
    return values;
  StringRef rest = text.drop_front(at + key.size() + 4);
  rest = rest.take_until([](char c) { return c == ']'; });
  SmallVector<StringRef> parts;
  rest.split(parts, ',', -1, false);
  for (StringRef part : parts) {
    int64_t value = 0;
    if (!part.trim().getAsInteger(10, value))
      values.push_back(value);
  }
  return values;
}

/// Integers of a dense array or an array of integer attributes.
std::optional<SmallVector<int64_t>> integers(Attribute attr) {
  if (auto dense = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(dense.asArrayRef());
  if (auto elements = dyn_cast_or_null<DenseIntElementsAttr>(attr)) {
    SmallVector<int64_t> values;
    for (const APInt &value : elements)
      values.push_back(value.getSExtValue());
    return values;
  }
  return std::nullopt;
}

RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

class Importer {
public:
  explicit Importer(ModuleOp module)
      : module(module), context(module.getContext()), builder(context) {}

  LogicalResult run();

private:
  using Conversion =
      std::function<FailureOr<SmallVector<Value>>(Importer &, Operation *)>;
  static const llvm::StringMap<Conversion> &conversions();

  /// An error at `op`, counted.
  InFlightDiagnostic fail(Operation *op) {
    ++failures;
    return op->emitError();
  }
  FailureOr<SmallVector<Value>> reject(Operation *op, const Twine &message) {
    fail(op) << message;
    return failure();
  }

  void importMeshes();
  ShardingAttr importSharding(Operation *where, Attribute sdy, Type type,
                              StringRef what);
  void importFunctionAttributes(func::FuncOp function);
  void importBlock(Block &block);

  // Conversions of single op kinds.
  FailureOr<SmallVector<Value>> constant(Operation *op);
  FailureOr<SmallVector<Value>> iota(Operation *op);
  FailureOr<SmallVector<Value>> compare(Operation *op);
  FailureOr<SmallVector<Value>> dotGeneral(Operation *op);
  FailureOr<SmallVector<Value>> reduce(Operation *op);
  FailureOr<SmallVector<Value>> broadcastInDim(Operation *op);
  FailureOr<SmallVector<Value>> transpose(Operation *op);
  FailureOr<SmallVector<Value>> slice(Operation *op);
  FailureOr<SmallVector<Value>> concatenate(Operation *op);
  FailureOr<SmallVector<Value>> pad(Operation *op);
  FailureOr<SmallVector<Value>> shardingConstraint(Operation *op);
  FailureOr<SmallVector<Value>> argReduce(Operation *op,
                                          ArrayRef<int64_t> dims);
  FailureOr<SmallVector<Value>> reduceWindow(Operation *op);
  FailureOr<SmallVector<Value>> gather(Operation *op);
  FailureOr<SmallVector<Value>> whileLoop(Operation *op);

  template <typename OpTy>
  static Conversion unary() {
    return [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{OpTy::create(self.builder, op->getLoc(),
                                             op->getResult(0).getType(),
                                             op->getOperand(0))};
    };
  }
  template <typename OpTy>
  static Conversion binary() {
    return [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{OpTy::create(
          self.builder, op->getLoc(), op->getResult(0).getType(),
          op->getOperand(0), op->getOperand(1))};
    };
  }

  /// A splat constant of `type` holding `value`.
  Value splat(Location loc, RankedTensorType type, double value);

  ModuleOp module;
  MLIRContext *context;
  OpBuilder builder;
  int failures = 0;
  /// sdy mesh names already converted.
  llvm::StringMap<bool> meshes;
};

const llvm::StringMap<Importer::Conversion> &Importer::conversions() {
  static const llvm::StringMap<Conversion> table = [] {
    llvm::StringMap<Conversion> t;
    t["stablehlo.abs"] = unary<AbsOp>();
    t["stablehlo.negate"] = unary<NegOp>();
    t["stablehlo.sign"] = unary<SignOp>();
    t["stablehlo.exponential"] = unary<ExpOp>();
    t["stablehlo.log"] = unary<LogOp>();
    t["stablehlo.log_plus_one"] = unary<Log1pOp>();
    t["stablehlo.tanh"] = unary<TanhOp>();
    t["stablehlo.logistic"] = unary<LogisticOp>();
    t["stablehlo.sqrt"] = unary<SqrtOp>();
    t["stablehlo.rsqrt"] = unary<RsqrtOp>();
    t["stablehlo.sine"] = unary<SinOp>();
    t["stablehlo.cosine"] = unary<CosOp>();
    t["stablehlo.floor"] = unary<FloorOp>();
    t["stablehlo.not"] = unary<NotOp>();
    t["chlo.erf"] = unary<ErfOp>();
    t["stablehlo.convert"] = unary<ConvertOp>();
    t["stablehlo.reshape"] = unary<ReshapeOp>();
    t["stablehlo.add"] = binary<AddOp>();
    t["stablehlo.subtract"] = binary<SubOp>();
    t["stablehlo.multiply"] = binary<MulOp>();
    t["stablehlo.divide"] = binary<DivOp>();
    t["stablehlo.remainder"] = binary<RemOp>();
    t["stablehlo.maximum"] = binary<MaxOp>();
    t["stablehlo.minimum"] = binary<MinOp>();
    t["stablehlo.power"] = binary<PowOp>();
    t["stablehlo.and"] = binary<AndOp>();
    t["stablehlo.or"] = binary<OrOp>();
    t["stablehlo.xor"] = binary<XorOp>();
    t["stablehlo.exponential_minus_one"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      auto type = tensorOf(op->getResult(0));
      Value e = ExpOp::create(self.builder, op->getLoc(), type,
                              op->getOperand(0));
      return SmallVector<Value>{SubOp::create(self.builder, op->getLoc(), type,
                                              e,
                                              self.splat(op->getLoc(), type,
                                                         1.0))};
    };
    t["stablehlo.select"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      // StableHLO allows one scalar predicate for all elements.
      Value predicate = op->getOperand(0);
      auto type = tensorOf(op->getResult(0));
      if (tensorOf(predicate).getRank() == 0 && type.getRank() > 0)
        predicate = BroadcastOp::create(
            self.builder, op->getLoc(),
            RankedTensorType::get(type.getShape(), self.builder.getI1Type()),
            predicate, self.builder.getDenseI64ArrayAttr({}));
      return SmallVector<Value>{SelectOp::create(
          self.builder, op->getLoc(), type, predicate, op->getOperand(1),
          op->getOperand(2))};
    };
    t["stablehlo.optimization_barrier"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      auto barrier = OptimizationBarrierOp::create(
          self.builder, op->getLoc(), op->getResultTypes(), op->getOperands());
      return SmallVector<Value>(barrier->getResults());
    };
    t["chlo.square"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      Value x = op->getOperand(0);
      return SmallVector<Value>{
          MulOp::create(self.builder, op->getLoc(), x.getType(), x, x)};
    };
    t["stablehlo.is_finite"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      // |x| < inf: false for infinities and (unordered) NaN.
      Location loc = op->getLoc();
      Value x = op->getOperand(0);
      auto type = tensorOf(x);
      Value magnitude = AbsOp::create(self.builder, loc, type, x);
      Value infinity =
          self.splat(loc, type, std::numeric_limits<double>::infinity());
      return SmallVector<Value>{CompareOp::create(
          self.builder, loc, op->getResult(0).getType(), CompareDirection::LT,
          magnitude, infinity)};
    };
    t["stablehlo.clamp"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      // clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi may be scalars.
      Location loc = op->getLoc();
      auto type = tensorOf(op->getResult(0));
      auto whole = [&](Value bound) -> Value {
        if (tensorOf(bound).getShape() == type.getShape())
          return bound;
        return BroadcastOp::create(self.builder, loc, type, bound,
                                   self.builder.getDenseI64ArrayAttr({}));
      };
      Value low = MaxOp::create(self.builder, loc, type, op->getOperand(1),
                                whole(op->getOperand(0)));
      return SmallVector<Value>{MinOp::create(self.builder, loc, type, low,
                                              whole(op->getOperand(2)))};
    };
    t["stablehlo.dynamic_slice"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      std::optional<SmallVector<int64_t>> sizes =
          integers(property(op, "slice_sizes"));
      if (!sizes)
        return self.reject(op, "stablehlo.dynamic_slice without slice_sizes");
      return SmallVector<Value>{DynamicSliceOp::create(
          self.builder, op->getLoc(), op->getResult(0).getType(),
          op->getOperand(0), op->getOperands().drop_front(),
          self.builder.getDenseI64ArrayAttr(*sizes))};
    };
    t["stablehlo.dynamic_update_slice"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{DynamicUpdateSliceOp::create(
          self.builder, op->getLoc(), op->getResult(0).getType(),
          op->getOperand(0), op->getOperand(1),
          op->getOperands().drop_front(2))};
    };
    t["stablehlo.constant"] = &Importer::constant;
    t["stablehlo.iota"] = &Importer::iota;
    t["stablehlo.compare"] = &Importer::compare;
    t["stablehlo.dot_general"] = &Importer::dotGeneral;
    t["stablehlo.reduce"] = &Importer::reduce;
    t["stablehlo.broadcast_in_dim"] = &Importer::broadcastInDim;
    t["stablehlo.transpose"] = &Importer::transpose;
    t["stablehlo.slice"] = &Importer::slice;
    t["stablehlo.concatenate"] = &Importer::concatenate;
    t["stablehlo.pad"] = &Importer::pad;
    t["sdy.sharding_constraint"] = &Importer::shardingConstraint;
    t["stablehlo.reduce_window"] = &Importer::reduceWindow;
    t["stablehlo.gather"] = &Importer::gather;
    t["stablehlo.while"] = &Importer::whileLoop;
    return t;
  }();
  return table;
}

Value Importer::splat(Location loc, RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute scalar;
  if (auto floating = dyn_cast<FloatType>(element))
    scalar = FloatAttr::get(floating, value);
  else
    scalar = IntegerAttr::get(element, static_cast<int64_t>(value));
  return ConstantOp::create(builder, loc, type,
                            DenseElementsAttr::get(type, scalar));
}

FailureOr<SmallVector<Value>> Importer::constant(Operation *op) {
  auto value = dyn_cast_or_null<ElementsAttr>(property(op, "value"));
  if (!value)
    return reject(op, "stablehlo.constant without a dense value");
  return SmallVector<Value>{ConstantOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), value)};
}

FailureOr<SmallVector<Value>> Importer::iota(Operation *op) {
  auto dim = dyn_cast_or_null<IntegerAttr>(property(op, "iota_dimension"));
  if (!dim)
    return reject(op, "stablehlo.iota without an iota_dimension");
  return SmallVector<Value>{IotaOp::create(builder, op->getLoc(),
                                           op->getResult(0).getType(),
                                           dim.getInt())};
}

FailureOr<SmallVector<Value>> Importer::compare(Operation *op) {
  Attribute direction = property(op, "comparison_direction");
  std::string text = direction ? printed(direction) : "";
  std::optional<CompareDirection> kind;
  for (auto [name, value] :
       {std::pair{" EQ", CompareDirection::EQ}, {" NE", CompareDirection::NE},
        {" LT", CompareDirection::LT}, {" LE", CompareDirection::LE},
        {" GT", CompareDirection::GT}, {" GE", CompareDirection::GE}})
    if (text.find(name) != std::string::npos)
      kind = value;
  if (!kind)
    return reject(op, "stablehlo.compare with comparison_direction '" + text +
                          "'");
  if (Attribute type = property(op, "compare_type")) {
    std::string typeText = printed(type);
    if (typeText.find("TOTALORDER") != std::string::npos)
      return reject(op, "stablehlo.compare with compare_type TOTALORDER "
                        "(NaN ordering) is not supported");
  }
  return SmallVector<Value>{CompareOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), *kind,
      op->getOperand(0), op->getOperand(1))};
}

FailureOr<SmallVector<Value>> Importer::dotGeneral(Operation *op) {
  Attribute numbers = property(op, "dot_dimension_numbers");
  if (!numbers)
    return reject(op, "stablehlo.dot_general without dot_dimension_numbers");
  std::string text = printed(numbers);
  SmallVector<int64_t> lhsBatch = intList(text, "lhs_batching_dimensions");
  SmallVector<int64_t> rhsBatch = intList(text, "rhs_batching_dimensions");
  SmallVector<int64_t> lhsContract =
      intList(text, "lhs_contracting_dimensions");
  SmallVector<int64_t> rhsContract =
      intList(text, "rhs_contracting_dimensions");
  int64_t lhsRank = tensorOf(op->getOperand(0)).getRank();
  int64_t rhsRank = tensorOf(op->getOperand(1)).getRank();
  if (lhsBatch.size() != rhsBatch.size() ||
      lhsContract.size() != rhsContract.size() || lhsRank + rhsRank > 26)
    return reject(op, "stablehlo.dot_general with dimension numbers '" + text +
                          "' that do not pair up");
  // Letters: lhs dims a.., rhs free dims after; batch and contracting rhs
  // dims share the lhs letter they pair with.
  std::string lhs, rhs(rhsRank, ' '), out;
  char next = 'a';
  for (int64_t d = 0; d < lhsRank; ++d)
    lhs += next++;
  for (size_t i = 0; i < rhsBatch.size(); ++i)
    rhs[rhsBatch[i]] = lhs[lhsBatch[i]];
  for (size_t i = 0; i < rhsContract.size(); ++i)
    rhs[rhsContract[i]] = lhs[lhsContract[i]];
  for (char &c : rhs)
    if (c == ' ')
      c = next++;
  auto contains = [](ArrayRef<int64_t> list, int64_t d) {
    return llvm::is_contained(list, d);
  };
  for (int64_t d : lhsBatch)
    out += lhs[d];
  for (int64_t d = 0; d < lhsRank; ++d)
    if (!contains(lhsBatch, d) && !contains(lhsContract, d))
      out += lhs[d];
  for (int64_t d = 0; d < rhsRank; ++d)
    if (!contains(rhsBatch, d) && !contains(rhsContract, d))
      out += rhs[d];
  std::string spec = lhs + "," + rhs + "->" + out;
  return SmallVector<Value>{EinsumOp::create(
      builder, op->getLoc(), op->getResult(0).getType(),
      builder.getStringAttr(spec),
      ValueRange{op->getOperand(0), op->getOperand(1)})};
}

FailureOr<SmallVector<Value>> Importer::broadcastInDim(Operation *op) {
  std::optional<SmallVector<int64_t>> dims =
      integers(property(op, "broadcast_dimensions"));
  if (!dims)
    return reject(op, "stablehlo.broadcast_in_dim without "
                      "broadcast_dimensions");
  Value operand = op->getOperand(0);
  auto resultType = tensorOf(op->getResult(0));
  // Ours needs increasing dims: transpose the operand first when they are
  // not (StableHLO allows any order).
  SmallVector<int64_t> order(dims->size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  llvm::sort(order, [&](int64_t a, int64_t b) { return (*dims)[a] < (*dims)[b]; });
  SmallVector<int64_t> sorted;
  for (int64_t i : order)
    sorted.push_back((*dims)[i]);
  bool identity = llvm::equal(order, llvm::seq<int64_t>(0, order.size()));
  if (!identity) {
    auto type = tensorOf(operand);
    SmallVector<int64_t> shape;
    for (int64_t i : order)
      shape.push_back(type.getDimSize(i));
    operand = TransposeOp::create(
        builder, op->getLoc(),
        RankedTensorType::get(shape, type.getElementType()), operand,
        builder.getDenseI64ArrayAttr(order));
  }
  if (tensorOf(operand).getShape() == resultType.getShape())
    return SmallVector<Value>{operand};
  return SmallVector<Value>{BroadcastOp::create(
      builder, op->getLoc(), resultType, operand,
      builder.getDenseI64ArrayAttr(sorted))};
}

FailureOr<SmallVector<Value>> Importer::transpose(Operation *op) {
  std::optional<SmallVector<int64_t>> perm =
      integers(property(op, "permutation"));
  if (!perm)
    return reject(op, "stablehlo.transpose without a permutation");
  return SmallVector<Value>{TransposeOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      builder.getDenseI64ArrayAttr(*perm))};
}

FailureOr<SmallVector<Value>> Importer::slice(Operation *op) {
  std::optional<SmallVector<int64_t>> start =
      integers(property(op, "start_indices"));
  std::optional<SmallVector<int64_t>> limit =
      integers(property(op, "limit_indices"));
  std::optional<SmallVector<int64_t>> stride =
      integers(property(op, "strides"));
  if (!start || !limit || !stride)
    return reject(op, "stablehlo.slice without start, limit and strides");
  return SmallVector<Value>{SliceOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      builder.getDenseI64ArrayAttr(*start),
      builder.getDenseI64ArrayAttr(*limit),
      builder.getDenseI64ArrayAttr(*stride))};
}

FailureOr<SmallVector<Value>> Importer::concatenate(Operation *op) {
  auto dim = dyn_cast_or_null<IntegerAttr>(property(op, "dimension"));
  if (!dim)
    return reject(op, "stablehlo.concatenate without a dimension");
  return SmallVector<Value>{ConcatenateOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperands(),
      dim.getInt())};
}

FailureOr<SmallVector<Value>> Importer::pad(Operation *op) {
  std::optional<SmallVector<int64_t>> low =
      integers(property(op, "edge_padding_low"));
  std::optional<SmallVector<int64_t>> high =
      integers(property(op, "edge_padding_high"));
  std::optional<SmallVector<int64_t>> interior =
      integers(property(op, "interior_padding"));
  if (!low || !high)
    return reject(op, "stablehlo.pad without edge padding");
  if (interior && llvm::any_of(*interior, [](int64_t v) { return v != 0; }))
    return reject(op, "stablehlo.pad with interior padding is not supported");
  if (llvm::any_of(*low, [](int64_t v) { return v < 0; }) ||
      llvm::any_of(*high, [](int64_t v) { return v < 0; }))
    return reject(op, "stablehlo.pad with negative padding is not supported");
  return SmallVector<Value>{PadOp::create(
      builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0),
      op->getOperand(1), builder.getDenseI64ArrayAttr(*low),
      builder.getDenseI64ArrayAttr(*high))};
}

/// The reduction a reduce body computes: its one combining op applied to
/// the two block arguments.
std::optional<ReductionKind> reductionOfBody(Region &body) {
  if (!body.hasOneBlock())
    return std::nullopt;
  Block &block = body.front();
  if (block.getNumArguments() != 2 || block.getOperations().size() != 2)
    return std::nullopt;
  Operation &combine = block.front();
  if (combine.getNumOperands() != 2 ||
      !llvm::is_contained(combine.getOperands(), block.getArgument(0)) ||
      !llvm::is_contained(combine.getOperands(), block.getArgument(1)))
    return std::nullopt;
  StringRef name = combine.getName().getStringRef();
  if (name == "stablehlo.add")
    return ReductionKind::Sum;
  if (name == "stablehlo.maximum")
    return ReductionKind::Max;
  if (name == "stablehlo.minimum")
    return ReductionKind::Min;
  if (name == "stablehlo.and")
    return ReductionKind::And;
  if (name == "stablehlo.or")
    return ReductionKind::Or;
  return std::nullopt;
}

/// Whether `value` is a constant every element of which is the identity of
/// `kind` (so the init value changes nothing).
bool isIdentityOf(Value value, ReductionKind kind) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  auto elements = dyn_cast_or_null<DenseElementsAttr>(property(def, "value"));
  if (!elements || !elements.isSplat())
    return false;
  Type type = elements.getElementType();
  if (isa<FloatType>(type)) {
    APFloat v = elements.getSplatValue<APFloat>();
    switch (kind) {
    case ReductionKind::Sum:
      return v.isZero();
    case ReductionKind::Max:
      return v.isInfinity() && v.isNegative();
    case ReductionKind::Min:
      return v.isInfinity() && !v.isNegative();
    default:
      return false;
    }
  }
  APInt v = elements.getSplatValue<APInt>();
  unsigned width = v.getBitWidth();
  switch (kind) {
  case ReductionKind::Sum:
  case ReductionKind::Or:
    return v.isZero();
  case ReductionKind::Max:
    return width == 1 ? v.isZero() : v.isMinSignedValue();
  case ReductionKind::Min:
  case ReductionKind::And:
    return width == 1 ? v.isOne() : (kind == ReductionKind::And
                                         ? v.isAllOnes()
                                         : v.isMaxSignedValue());
  }
  return false;
}

FailureOr<SmallVector<Value>> Importer::reduce(Operation *op) {
  std::optional<SmallVector<int64_t>> dims =
      integers(property(op, "dimensions"));
  if (!dims || op->getNumRegions() != 1)
    return reject(op, "stablehlo.reduce without dimensions or a body");
  if (op->getNumOperands() == 4)
    return argReduce(op, *dims);
  if (op->getNumOperands() != 2)
    return reject(op, "stablehlo.reduce over " +
                          Twine(op->getNumOperands() / 2) +
                          " values at once is not supported");
  std::optional<ReductionKind> kind = reductionOfBody(op->getRegion(0));
  if (!kind)
    return reject(op, "stablehlo.reduce whose body is not one add, maximum, "
                      "minimum, and or or of its two arguments");
  Location loc = op->getLoc();
  auto resultType = tensorOf(op->getResult(0));
  Value reduced = ReduceOp::create(builder, loc, resultType, *kind,
                                   op->getOperand(0),
                                   builder.getDenseI64ArrayAttr(*dims));
  Value init = op->getOperand(1);
  if (isIdentityOf(init, *kind))
    return SmallVector<Value>{reduced};
  // Fold a non-identity init value in once.
  Value initWhole = resultType.getRank() == 0
                        ? init
                        : Value(BroadcastOp::create(
                              builder, loc, resultType, init,
                              builder.getDenseI64ArrayAttr({})));
  Value combined;
  switch (*kind) {
  case ReductionKind::Sum:
    combined = AddOp::create(builder, loc, resultType, reduced, initWhole);
    break;
  case ReductionKind::Max:
    combined = MaxOp::create(builder, loc, resultType, reduced, initWhole);
    break;
  case ReductionKind::Min:
    combined = MinOp::create(builder, loc, resultType, reduced, initWhole);
    break;
  case ReductionKind::And:
    combined = AndOp::create(builder, loc, resultType, reduced, initWhole);
    break;
  case ReductionKind::Or:
    combined = OrOp::create(builder, loc, resultType, reduced, initWhole);
    break;
  }
  return SmallVector<Value>{combined};
}

/// The iota dimension of `value` if an iota defines it.
std::optional<int64_t> iotaDimension(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || (def->getName().getStringRef() != "stablehlo.iota" &&
               !isa<IotaOp>(def)))
    return std::nullopt;
  if (auto iota = dyn_cast<IotaOp>(def))
    return iota.getDim();
  if (auto dim = dyn_cast_or_null<IntegerAttr>(property(def, "iota_dimension")))
    return dim.getInt();
  return std::nullopt;
}

FailureOr<SmallVector<Value>> Importer::argReduce(Operation *op,
                                                  ArrayRef<int64_t> dims) {
  // jnp.argmax/argmin: reduce (values, iota along the reduced dimension)
  // with a body that keeps the greater (lesser) value and, on ties, the
  // lower index.
  Value values = op->getOperand(0);
  std::optional<int64_t> iotaDim = iotaDimension(op->getOperand(1));
  if (dims.size() != 1 || !iotaDim || *iotaDim != dims[0])
    return reject(op, "a two-value stablehlo.reduce that is not an argmax "
                      "or argmin (values and an iota along the one reduced "
                      "dimension)");
  std::optional<CompareDirection> direction;
  op->getRegion(0).walk([&](Operation *inner) {
    if (inner->getName().getStringRef() != "stablehlo.compare" ||
        inner->getOperand(0) != op->getRegion(0).getArgument(0))
      return;
    std::string text = printed(property(inner, "comparison_direction"));
    if (text.find(" GT") != std::string::npos)
      direction = CompareDirection::GT;
    else if (text.find(" LT") != std::string::npos)
      direction = CompareDirection::LT;
  });
  if (!direction)
    return reject(op, "a two-value stablehlo.reduce whose body compares "
                      "neither greater nor less");
  Location loc = op->getLoc();
  auto valueType = tensorOf(values);
  if (*direction == CompareDirection::LT)
    values = NegOp::create(builder, loc, valueType, values);
  Value index = ArgmaxOp::create(builder, loc, op->getResult(1).getType(),
                                 values, dims[0]);
  Value extreme = ReduceOp::create(
      builder, loc, op->getResult(0).getType(),
      *direction == CompareDirection::GT ? ReductionKind::Max
                                         : ReductionKind::Min,
      op->getOperand(0), builder.getDenseI64ArrayAttr(dims));
  return SmallVector<Value>{extreme, index};
}

FailureOr<SmallVector<Value>> Importer::reduceWindow(Operation *op) {
  // jnp.cumsum: a sum over a window as long as one dimension, padded by
  // length - 1 on one side, stride 1.
  std::optional<SmallVector<int64_t>> window =
      integers(property(op, "window_dimensions"));
  auto padding = dyn_cast_or_null<DenseIntElementsAttr>(property(op, "padding"));
  std::optional<SmallVector<int64_t>> strides =
      integers(property(op, "window_strides"));
  auto type = tensorOf(op->getResult(0));
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  std::optional<int64_t> dim;
  bool reverse = false, matches = window && padding && op->getNumOperands() == 2 &&
                                  kind && *kind == ReductionKind::Sum &&
                                  isIdentityOf(op->getOperand(1), *kind);
  SmallVector<int64_t> pads;
  if (padding)
    for (const APInt &value : padding)
      pads.push_back(value.getSExtValue());
  for (int64_t d = 0; matches && d < type.getRank(); ++d) {
    int64_t size = type.getDimSize(d);
    if ((*window)[d] == 1 && pads[2 * d] == 0 && pads[2 * d + 1] == 0)
      continue;
    if (dim || (*window)[d] != size ||
        !((pads[2 * d] == size - 1 && pads[2 * d + 1] == 0) ||
          (pads[2 * d] == 0 && pads[2 * d + 1] == size - 1)))
      matches = false;
    dim = d;
    reverse = pads[2 * d] == 0 && size > 1;
  }
  if (strides && llvm::any_of(*strides, [](int64_t v) { return v != 1; }))
    matches = false;
  if (!matches || !dim)
    return reject(op, "stablehlo.reduce_window other than the cumulative "
                      "sum jnp.cumsum writes is not supported");
  return SmallVector<Value>{CumsumOp::create(builder, op->getLoc(), type,
                                             op->getOperand(0), *dim,
                                             reverse)};
}

FailureOr<SmallVector<Value>> Importer::gather(Operation *op) {
  // Row lookups (`table[tokens]`, jnp.take on axis 0): one index per row,
  // whole rows.
  Attribute numbers = property(op, "dimension_numbers");
  std::optional<SmallVector<int64_t>> sizes =
      integers(property(op, "slice_sizes"));
  std::string text = numbers ? printed(numbers) : "";
  Value table = op->getOperand(0), indices = op->getOperand(1);
  auto tableType = tensorOf(table), indexType = tensorOf(indices);
  int64_t batchRank = indexType.getRank() - 1;
  bool rowLookup =
      sizes && indexType.getRank() >= 1 &&
      indexType.getDimSize(batchRank) == 1 &&
      intList(text, "collapsed_slice_dims") == SmallVector<int64_t>{0} &&
      intList(text, "start_index_map") == SmallVector<int64_t>{0} &&
      text.find("index_vector_dim = " + std::to_string(batchRank)) !=
          std::string::npos &&
      text.find("operand_batching_dims") == std::string::npos &&
      (*sizes)[0] == 1;
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup = (*sizes)[d] == tableType.getDimSize(d);
  SmallVector<int64_t> offsets = intList(text, "offset_dims");
  for (int64_t d = 1; rowLookup && d < tableType.getRank(); ++d)
    rowLookup = static_cast<int64_t>(offsets.size()) == tableType.getRank() - 1 &&
                offsets[d - 1] == batchRank + d - 1;
  if (!rowLookup)
    return reject(op, "stablehlo.gather other than a lookup of whole rows "
                      "by one index each (table[indices]) is not "
                      "supported");
  Location loc = op->getLoc();
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  return SmallVector<Value>{GatherOp::create(
      builder, loc, op->getResult(0).getType(), table, flat)};
}

/// The integer a constant (stablehlo or partita) holds, if any.
std::optional<int64_t> constantInteger(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto elements = dyn_cast_or_null<DenseIntElementsAttr>(property(def, "value"));
  if (!elements || !elements.isSplat())
    return std::nullopt;
  return elements.getSplatValue<APInt>().getSExtValue();
}

FailureOr<SmallVector<Value>> Importer::whileLoop(Operation *op) {
  // lax.scan / fori_loop with a static trip count: the condition compares
  // one carried counter with a constant, the body adds one to it.
  auto notCounted = [&]() {
    return reject(op, "stablehlo.while that is not a counted loop (lax.scan "
                      "or fori_loop with a static trip count: `counter < N` "
                      "with a constant N, the body adding 1)");
  };
  if (op->getNumRegions() != 2 || !op->getRegion(0).hasOneBlock() ||
      !op->getRegion(1).hasOneBlock())
    return notCounted();
  Block &cond = op->getRegion(0).front();
  Block &body = op->getRegion(1).front();
  Operation *condReturn = cond.getTerminator();
  Operation *compare =
      condReturn && condReturn->getNumOperands() == 1
          ? condReturn->getOperand(0).getDefiningOp()
          : nullptr;
  if (!compare || compare->getName().getStringRef() != "stablehlo.compare" ||
      printed(property(compare, "comparison_direction")).find(" LT") ==
          std::string::npos)
    return notCounted();
  auto counter = dyn_cast<BlockArgument>(compare->getOperand(0));
  std::optional<int64_t> limit = constantInteger(compare->getOperand(1));
  if (!counter || counter.getOwner() != &cond || !limit)
    return notCounted();
  unsigned k = counter.getArgNumber();
  std::optional<int64_t> start = constantInteger(op->getOperand(k));
  Operation *bodyReturn = body.getTerminator();
  Operation *step = bodyReturn && bodyReturn->getNumOperands() > k
                        ? bodyReturn->getOperand(k).getDefiningOp()
                        : nullptr;
  bool addsOne =
      step && step->getName().getStringRef() == "stablehlo.add" &&
      ((step->getOperand(0) == body.getArgument(k) &&
        constantInteger(step->getOperand(1)) == 1) ||
       (step->getOperand(1) == body.getArgument(k) &&
        constantInteger(step->getOperand(0)) == 1));
  if (!start || !addsOne)
    return notCounted();
  int64_t trips = std::max<int64_t>(0, *limit - *start);
  auto loop = LoopOp::create(builder, op->getLoc(), op->getResultTypes(),
                             op->getOperands(), trips);
  Block *loopBody = new Block();
  loop.getBody().push_back(loopBody);
  loopBody->addArgument(
      RankedTensorType::get({}, builder.getI32Type()), op->getLoc());
  for (Value operand : op->getOperands())
    loopBody->addArgument(operand.getType(), operand.getLoc());
  // Move the body over; the carried arguments follow the iteration number.
  loopBody->getOperations().splice(loopBody->end(), body.getOperations());
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    body.getArgument(i).replaceAllUsesWith(loopBody->getArgument(i + 1));
  Operation *terminator = loopBody->getTerminator();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(terminator);
  YieldOp::create(builder, terminator->getLoc(), terminator->getOperands());
  terminator->erase();
  importBlock(*loopBody);
  return SmallVector<Value>(loop.getResults());
}

FailureOr<SmallVector<Value>> Importer::shardingConstraint(Operation *op) {
  ShardingAttr sharding = importSharding(op, property(op, "sharding"),
                                         op->getOperand(0).getType(),
                                         "the constraint");
  if (!sharding)
    return failure();
  return SmallVector<Value>{ShardingConstraintOp::create(
      builder, op->getLoc(), op->getOperand(0), sharding)};
}

ShardingAttr Importer::importSharding(Operation *where, Attribute sdy,
                                      Type type, StringRef what) {
  if (!sdy) {
    fail(where) << "missing sharding";
    return nullptr;
  }
  std::string text = printed(sdy);
  const std::string prefix = "#sdy.sharding<";
  if (text.rfind(prefix, 0) != 0) {
    fail(where) << "unsupported sharding attribute " << text;
    return nullptr;
  }
  std::string body = text.substr(prefix.size());
  // Explicitly replicated and unreduced axes say nothing ours cannot infer.
  for (const char *clause : {", replicated={", ", unreduced={"}) {
    size_t at = body.find(clause);
    if (at != std::string::npos) {
      size_t close = body.find('}', at);
      body.erase(at, close - at + 1);
    }
  }
  Attribute parsed = parseAttribute("#partita.sharding<" + body, context);
  auto sharding = dyn_cast_or_null<ShardingAttr>(parsed);
  if (!sharding) {
    fail(where) << "cannot read the sharding " << text;
    return nullptr;
  }
  // Checked against its mesh now, so that a bad axis is reported with the
  // other problems of the module.
  if (failed(verifyShardingFor(where, sharding, type, what,
                               [&]() { return fail(where); })))
    return nullptr;
  return sharding;
}

void Importer::importMeshes() {
  for (Operation &op : llvm::make_early_inc_range(*module.getBody())) {
    if (op.getName().getStringRef() != "sdy.mesh")
      continue;
    auto name = dyn_cast_or_null<StringAttr>(property(&op, "sym_name"));
    Attribute mesh = property(&op, "mesh");
    std::string text = mesh ? printed(mesh) : "";
    const std::string prefix = "#sdy.mesh<";
    if (!name || text.rfind(prefix, 0) != 0) {
      fail(&op) << "unsupported mesh " << text;
      continue;
    }
    auto parsed = dyn_cast_or_null<MeshAttr>(
        parseAttribute("#partita.mesh<" + text.substr(prefix.size()),
                       context));
    if (!parsed) {
      fail(&op) << "cannot read the mesh " << text;
      continue;
    }
    builder.setInsertionPoint(&op);
    MeshOp::create(builder, op.getLoc(), name.getValue(), parsed);
    meshes[name.getValue()] = true;
    op.erase();
  }
}

void Importer::importFunctionAttributes(func::FuncOp function) {
  auto convert = [&](DictionaryAttr attrs, Type type,
                     const std::string &what) -> DictionaryAttr {
    if (!attrs)
      return attrs;
    NamedAttrList kept;
    for (NamedAttribute attr : attrs) {
      StringRef name = attr.getName().getValue();
      if (name == "sdy.sharding") {
        if (ShardingAttr sharding =
                importSharding(function, attr.getValue(), type, what))
          kept.append(PartitaDialect::kShardingAttrName, sharding);
        continue;
      }
      // JAX's bookkeeping (result names, layouts, donation hints).
      if (name.starts_with("jax.") || name.starts_with("mhlo.") ||
          name.starts_with("tf."))
        continue;
      kept.append(attr);
    }
    return kept.getDictionary(context);
  };
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    function.setArgAttrs(i, convert(function.getArgAttrDict(i),
                                    function.getArgument(i).getType(),
                                    "argument " + std::to_string(i)));
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    function.setResultAttrs(i, convert(function.getResultAttrDict(i),
                                       function.getResultTypes()[i],
                                       "result " + std::to_string(i)));
}

void Importer::importBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    StringRef name = op.getName().getStringRef();
    if (op.getName().isRegistered())
      continue; // func.return, func.call, partita ops.
    auto conversion = conversions().find(name);
    if (conversion == conversions().end()) {
      fail(&op) << "unsupported op '" << name << "'";
      continue;
    }
    builder.setInsertionPoint(&op);
    FailureOr<SmallVector<Value>> results = conversion->second(*this, &op);
    if (failed(results))
      continue;
    if (results->size() != op.getNumResults()) {
      fail(&op) << "the import of '" << name << "' made "
                << results->size() << " values for " << op.getNumResults();
      continue;
    }
    // An op-level sharding (`sdy.sharding = #sdy.sharding_per_value<[<…>]>`)
    // of a single result becomes the new op's.
    if (Attribute perValue = op.getDiscardableAttr("sdy.sharding")) {
      std::string text = printed(perValue);
      const std::string prefix = "#sdy.sharding_per_value<[<";
      const std::string suffix = ">]>";
      ShardingAttr sharding;
      if (text.rfind(prefix, 0) == 0 && results->size() == 1 &&
          text.find(">, <") == std::string::npos)
        sharding = dyn_cast_or_null<ShardingAttr>(parseAttribute(
            "#partita.sharding<" +
                text.substr(prefix.size(),
                            text.size() - prefix.size() - suffix.size()) +
                ">",
            context));
      Operation *def = (*results)[0].getDefiningOp();
      if (!sharding || !def) {
        fail(&op) << "unsupported op sharding " << text;
        continue;
      }
      if (failed(verifyShardingFor(&op, sharding, (*results)[0].getType(),
                                   "the result",
                                   [&]() { return fail(&op); })))
        continue;
      def->setAttr(PartitaDialect::kShardingAttrName, sharding);
    }
    for (auto [from, to] : llvm::zip(op.getResults(), *results))
      from.replaceAllUsesWith(to);
    op.erase();
  }
}

LogicalResult Importer::run() {
  importMeshes();
  for (auto function : module.getOps<func::FuncOp>()) {
    importFunctionAttributes(function);
    for (Block &block : function.getBody())
      importBlock(block);
  }
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (!op.getName().isRegistered())
      fail(&op) << "unsupported op '" << op.getName().getStringRef() << "'";
  // JAX's module attributes (partition counts) have no meaning here.
  SmallVector<StringAttr> jaxAttributes;
  for (NamedAttribute attr : module->getAttrs())
    if (attr.getName().getValue().starts_with("mhlo."))
      jaxAttributes.push_back(attr.getName());
  for (StringAttr name : jaxAttributes)
    module->removeAttr(name);
  if (failures == 0) {
    // Private functions JAX emits (helpers, scan bodies) are inlined, as
    // the runtime inlines every call anyway.
    inlineCalls(module);
    SmallVector<func::FuncOp> unused;
    for (auto function : module.getOps<func::FuncOp>())
      if (function.isPrivate() &&
          !SymbolTable::symbolKnownUseEmpty(function, module))
        continue;
      else if (function.isPrivate())
        unused.push_back(function);
    for (func::FuncOp function : unused)
      function.erase();
  }
  if (failures > 0) {
    module.emitError() << failures
                       << (failures == 1 ? " op or attribute"
                                         : " ops or attributes")
                       << " of the StableHLO module could not be imported";
    return failure();
  }
  return success();
}

} // namespace

bool looksLikeStableHLO(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    StringRef dialect = op->getName().getDialectNamespace();
    if (dialect == "stablehlo" || dialect == "chlo" || dialect == "sdy" ||
        dialect == "mhlo") {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

LogicalResult importStableHLO(ModuleOp module) {
  return Importer(module).run();
}

} // namespace partita
