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
#include "partita/Conversion/StableHLOToPartita.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"
#include "partita/Sharding/Mesh.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
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
  FailureOr<SmallVector<Value>> scatter(Operation *op);
  FailureOr<SmallVector<Value>>
  takeAlongLastAxis(Operation *op, const std::string &text,
                    const std::optional<SmallVector<int64_t>> &sizes);
  /// one_hot[b..., k, e] = (indices[b..., k, 0] == e) in `element`.
  Value oneHot(Location loc, Value indices, int64_t width, Type element);
  FailureOr<SmallVector<Value>> whileLoop(Operation *op);
  FailureOr<SmallVector<Value>> manualComputation(Operation *op);
  FailureOr<SmallVector<Value>> collective(Operation *op);
  /// The mesh axes (in order) whose groups are `groups` (device ids), or
  /// none after an error.
  std::optional<SmallVector<std::string>>
  axesOfGroups(Operation *op, const std::vector<std::vector<int64_t>> &groups);

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
  /// The mesh of the manual computation being imported (collectives inside
  /// it are over its axes).
  FlatSymbolRefAttr manualMesh;
  /// GSPMD shardings (`mhlo.sharding` strings) name no mesh: they are
  /// expressed on one made for them, @gspmd_mesh, whose axes are the prime
  /// factors of the device count.
  FlatSymbolRefAttr gspmdMesh;
  std::vector<int64_t> gspmdFactors;
  ShardingAttr importGspmdSharding(Operation *where, Attribute text, Type type,
                                   StringRef what);
  void makeGspmdMesh();
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
    t["chlo.top_k"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      // The k largest along the last dimension, largest first.
      auto k = dyn_cast_or_null<IntegerAttr>(property(op, "k"));
      if (!k || op->getNumResults() != 2)
        return self.reject(op, "chlo.top_k without k");
      int64_t last = tensorOf(op->getOperand(0)).getRank() - 1;
      auto topK = TopKOp::create(self.builder, op->getLoc(),
                                 op->getResult(0).getType(),
                                 op->getResult(1).getType(), op->getOperand(0),
                                 last, k.getInt());
      return SmallVector<Value>{topK.getValues(), topK.getIndices()};
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
    t["stablehlo.custom_call"] =
        [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      // GSPMD's sharding constraint: custom_call @Sharding.
      auto target =
          dyn_cast_or_null<StringAttr>(property(op, "call_target_name"));
      if (!target || target.getValue() != "Sharding" ||
          op->getNumOperands() != 1)
        return self.reject(op, "stablehlo.custom_call @" +
                                   (target ? target.getValue() : "?") +
                                   " is not supported");
      ShardingAttr sharding = self.importGspmdSharding(
          op, op->getDiscardableAttr("mhlo.sharding"),
          op->getOperand(0).getType(), "the constraint");
      if (!sharding)
        return failure();
      return SmallVector<Value>{ShardingConstraintOp::create(
          self.builder, op->getLoc(), op->getOperand(0), sharding)};
    };
    t["stablehlo.reduce_window"] = &Importer::reduceWindow;
    t["stablehlo.gather"] = &Importer::gather;
    t["stablehlo.scatter"] = &Importer::scatter;
    t["stablehlo.while"] = &Importer::whileLoop;
    t["sdy.manual_computation"] = &Importer::manualComputation;
    for (const char *name :
         {"stablehlo.all_reduce", "stablehlo.all_gather",
          "stablehlo.reduce_scatter", "stablehlo.all_to_all",
          "stablehlo.collective_permute"})
      t[name] = &Importer::collective;
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
    return takeAlongLastAxis(op, text, sizes);
  Location loc = op->getLoc();
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  return SmallVector<Value>{GatherOp::create(
      builder, loc, op->getResult(0).getType(), table, flat)};
}

FailureOr<SmallVector<Value>> Importer::scatter(Operation *op) {
  // Two additive scatters JAX's gradients write:
  //  * rows: table[indices[i...]] += updates[i...] (the adjoint of a row
  //    gather: embeddings) -> partita.scatter_add;
  //  * one element per batch row: out[b..., idx[b..., k]] += upd[b..., k]
  //    (the adjoint of top_k) -> a one-hot einsum, exact for sums.
  Attribute numbers = property(op, "scatter_dimension_numbers");
  std::string text = numbers ? printed(numbers) : "";
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  if (op->getNumOperands() != 3 || !kind || *kind != ReductionKind::Sum)
    return reject(op, "stablehlo.scatter other than a sum into one array");
  Value operand = op->getOperand(0), indices = op->getOperand(1),
        updates = op->getOperand(2);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices),
       updateType = tensorOf(updates);
  int64_t indexRank = indexType.getRank();
  bool trailingIndex =
      indexRank >= 1 && indexType.getDimSize(indexRank - 1) == 1 &&
      text.find("index_vector_dim = " + std::to_string(indexRank - 1)) !=
          std::string::npos;
  Location loc = op->getLoc();
  auto flatIndexType = RankedTensorType::get(
      indexType.getShape().drop_back(), indexType.getElementType());
  SmallVector<int64_t> batching = intList(text, "input_batching_dims");
  SmallVector<int64_t> inserted = intList(text, "inserted_window_dims");
  SmallVector<int64_t> toOperand = intList(text, "scatter_dims_to_operand_dims");
  if (trailingIndex && batching.empty() && inserted == SmallVector<int64_t>{0} &&
      toOperand == SmallVector<int64_t>{0}) {
    Value flat = ReshapeOp::create(builder, loc, flatIndexType, indices);
    return SmallVector<Value>{ScatterAddOp::create(
        builder, loc, operandType, operand, flat, updates)};
  }
  int64_t batch = static_cast<int64_t>(batching.size());
  bool perRow =
      trailingIndex && operandType.getRank() == batch + 1 &&
      intList(text, "scatter_indices_batching_dims") == batching &&
      inserted == SmallVector<int64_t>{batch} &&
      toOperand == SmallVector<int64_t>{batch} &&
      indexRank == batch + 2 && updateType.getRank() == batch + 1;
  for (int64_t d = 0; perRow && d < batch; ++d)
    perRow = batching[d] == d;
  if (!perRow)
    return reject(op, "stablehlo.scatter other than rows of a table or one "
                      "element per batch row is not supported");
  // out += sum_k upd[b..., k] * one_hot[b..., k, e].
  Value hot = oneHot(loc, indices, operandType.getDimSize(batch),
                     updateType.getElementType());
  std::string letters = "abcdefghij";
  std::string b = letters.substr(0, batch);
  std::string spec = b + "k," + b + "ke->" + b + "e";
  Value added = EinsumOp::create(builder, loc, operandType,
                                 builder.getStringAttr(spec),
                                 ValueRange{updates, hot});
  return SmallVector<Value>{
      AddOp::create(builder, loc, operandType, operand, added)};
}

Value Importer::oneHot(Location loc, Value indices, int64_t width,
                       Type element) {
  auto indexType = tensorOf(indices);
  auto flatType = RankedTensorType::get(indexType.getShape().drop_back(),
                                        indexType.getElementType());
  SmallVector<int64_t> hotShape(flatType.getShape());
  hotShape.push_back(width);
  auto hotIndexType =
      RankedTensorType::get(hotShape, indexType.getElementType());
  Value flat = ReshapeOp::create(builder, loc, flatType, indices);
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < flatType.getRank(); ++d)
    keep.push_back(d);
  Value spread = BroadcastOp::create(builder, loc, hotIndexType, flat,
                                     builder.getDenseI64ArrayAttr(keep));
  Value positions = IotaOp::create(builder, loc, hotIndexType,
                                   static_cast<int64_t>(hotShape.size()) - 1);
  Value hit = CompareOp::create(
      builder, loc, RankedTensorType::get(hotShape, builder.getI1Type()),
      CompareDirection::EQ, spread, positions);
  return ConvertOp::create(builder, loc,
                           RankedTensorType::get(hotShape, element), hit);
}

FailureOr<SmallVector<Value>> Importer::takeAlongLastAxis(
    Operation *op, const std::string &text,
    const std::optional<SmallVector<int64_t>> &sizes) {
  // jnp.take_along_axis on the last axis: out[b..., k] =
  // x[b..., idx[b..., k]], a batched one-element gather -> a one-hot einsum
  // (exact for finite values).
  Value operand = op->getOperand(0), indices = op->getOperand(1);
  auto operandType = tensorOf(operand), indexType = tensorOf(indices);
  auto resultType = tensorOf(op->getResult(0));
  int64_t batch = operandType.getRank() - 1;
  SmallVector<int64_t> batching = intList(text, "operand_batching_dims");
  bool matches =
      sizes && isa<FloatType>(operandType.getElementType()) && batch <= 9 &&
      static_cast<int64_t>(batching.size()) == batch &&
      intList(text, "start_indices_batching_dims") == batching &&
      intList(text, "collapsed_slice_dims") == SmallVector<int64_t>{batch} &&
      intList(text, "start_index_map") == SmallVector<int64_t>{batch} &&
      intList(text, "offset_dims").empty() &&
      indexType.getRank() == batch + 2 &&
      indexType.getDimSize(batch + 1) == 1 &&
      text.find("index_vector_dim = " + std::to_string(batch + 1)) !=
          std::string::npos &&
      llvm::all_of(*sizes, [](int64_t v) { return v == 1; });
  for (int64_t d = 0; matches && d < batch; ++d)
    matches = batching[d] == d;
  if (!matches)
    return reject(op, "stablehlo.gather other than whole rows by one index "
                      "each (table[indices]) or one element per row "
                      "(take_along_axis on the last axis) is not supported");
  Location loc = op->getLoc();
  Value hot = oneHot(loc, indices, operandType.getDimSize(batch),
                     operandType.getElementType());
  std::string b = std::string("abcdefghi").substr(0, batch);
  std::string spec = b + "e," + b + "ke->" + b + "k";
  return SmallVector<Value>{EinsumOp::create(builder, loc, resultType,
                                             builder.getStringAttr(spec),
                                             ValueRange{operand, hot})};
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

/// The `<@mesh, [...]>` items of `#sdy.sharding_per_value<[...]>` as
/// partita shardings, or none if one cannot be read.
std::optional<SmallVector<Attribute>> shardingList(Attribute attr,
                                                   MLIRContext *context) {
  std::string text = printed(attr);
  SmallVector<Attribute> shardings;
  size_t at = text.find('[');
  if (at == std::string::npos)
    return std::nullopt;
  int depth = 0;
  size_t start = std::string::npos;
  for (size_t i = at + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<' && depth++ == 0)
      start = i + 1;
    else if (c == '>' && --depth == 0) {
      auto sharding = dyn_cast_or_null<ShardingAttr>(parseAttribute(
          "#partita.sharding<" + text.substr(start, i - start) + ">",
          context));
      if (!sharding)
        return std::nullopt;
      shardings.push_back(sharding);
    }
  }
  return shardings;
}

/// The quoted names of `#sdy<manual_axes{"data", "model"}>`.
SmallVector<std::string> quotedNames(Attribute attr) {
  std::string text = printed(attr);
  SmallVector<std::string> names;
  for (size_t at = text.find('"'); at != std::string::npos;) {
    size_t end = text.find('"', at + 1);
    if (end == std::string::npos)
      break;
    names.push_back(text.substr(at + 1, end - at - 1));
    at = text.find('"', end + 1);
  }
  return names;
}

FailureOr<SmallVector<Value>> Importer::manualComputation(Operation *op) {
  std::optional<SmallVector<Attribute>> ins =
      shardingList(property(op, "in_shardings"), context);
  std::optional<SmallVector<Attribute>> outs =
      shardingList(property(op, "out_shardings"), context);
  SmallVector<std::string> axes = quotedNames(property(op, "manual_axes"));
  if (!ins || !outs || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock())
    return reject(op, "sdy.manual_computation whose shardings cannot be "
                      "read");
  FlatSymbolRefAttr mesh;
  for (Attribute sharding : llvm::concat<Attribute>(*ins, *outs))
    mesh = cast<ShardingAttr>(sharding).getMesh();
  if (!mesh)
    return reject(op, "sdy.manual_computation with no operand or result");
  SmallVector<StringRef> axisRefs(axes.begin(), axes.end());
  auto manual = ManualComputationOp::create(
      builder, op->getLoc(), op->getResultTypes(), op->getOperands(),
      builder.getArrayAttr(*ins), builder.getArrayAttr(*outs),
      builder.getStrArrayAttr(axisRefs));
  Block &source = op->getRegion(0).front();
  Block *body = new Block();
  manual.getBody().push_back(body);
  for (BlockArgument argument : source.getArguments())
    argument.replaceAllUsesWith(
        body->addArgument(argument.getType(), argument.getLoc()));
  body->getOperations().splice(body->end(), source.getOperations());
  Operation *terminator = body->getTerminator();
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(terminator);
    YieldOp::create(builder, terminator->getLoc(), terminator->getOperands());
  }
  terminator->erase();
  FlatSymbolRefAttr outer = manualMesh;
  manualMesh = mesh;
  importBlock(*body);
  manualMesh = outer;
  return SmallVector<Value>(manual.getResults());
}

/// The rows of a replica_groups or source_target_pairs attribute.
std::vector<std::vector<int64_t>> integerRows(Attribute attr) {
  std::vector<std::vector<int64_t>> rows;
  auto elements = dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!elements || elements.getType().getRank() != 2)
    return rows;
  int64_t width = elements.getType().getDimSize(1);
  int64_t index = 0;
  for (const APInt &value : elements) {
    if (index++ % width == 0)
      rows.emplace_back();
    rows.back().push_back(value.getSExtValue());
  }
  return rows;
}

std::optional<SmallVector<std::string>>
Importer::axesOfGroups(Operation *op,
                       const std::vector<std::vector<int64_t>> &groups) {
  // Looked up in the module: symbol lookups stop at unregistered ops with
  // a region (an all_reduce with its body), which might be symbol tables.
  auto meshOp =
      manualMesh ? module.lookupSymbol<MeshOp>(manualMesh.getAttr()) : MeshOp();
  if (!meshOp) {
    fail(op) << "a collective outside a manual computation (shard_map)";
    return std::nullopt;
  }
  Mesh mesh = meshOp.getMesh().toMesh();
  // Every ordered set of axes, fewest first.
  std::vector<std::vector<std::string>> candidates;
  int rank = mesh.rank();
  for (int mask = 1; mask < (1 << rank); ++mask) {
    std::vector<std::string> names;
    for (int a = 0; a < rank; ++a)
      if (mask & (1 << a))
        names.push_back(mesh.axes()[a].name);
    std::sort(names.begin(), names.end());
    do
      candidates.push_back(names);
    while (std::next_permutation(names.begin(), names.end()));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto &a, const auto &b) {
                     return a.size() < b.size();
                   });
  for (const std::vector<std::string> &axes : candidates) {
    bool matches = !groups.empty();
    for (const std::vector<int64_t> &group : groups) {
      if (group.empty() || group.front() < 0 ||
          group.front() >= mesh.numDevices()) {
        matches = false;
        break;
      }
      Expected<CollectiveGroup> resolved =
          resolveGroup(mesh, group.front(), axes);
      matches &= resolved && resolved->members == group;
      if (!matches)
        break;
    }
    if (matches)
      return SmallVector<std::string>(axes.begin(), axes.end());
  }
  std::string text;
  for (const std::vector<int64_t> &group : groups) {
    text += text.empty() ? "[" : ", [";
    for (size_t i = 0; i < group.size(); ++i)
      text += (i ? ", " : "") + std::to_string(group[i]);
    text += "]";
  }
  fail(op) << "replica groups " << text << " are not the groups of any "
           << "mesh axes of " << mesh.toString();
  return std::nullopt;
}

FailureOr<SmallVector<Value>> Importer::collective(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return reject(op, name + " over several values at once is not supported");
  Location loc = op->getLoc();
  Type type = op->getResult(0).getType();
  Value operand = op->getOperand(0);
  if (name == "stablehlo.collective_permute") {
    std::vector<std::vector<int64_t>> pairs =
        integerRows(property(op, "source_target_pairs"));
    // The axes whose groups contain every pair, with the same positions in
    // every group.
    auto meshOp = manualMesh
                      ? module.lookupSymbol<MeshOp>(manualMesh.getAttr())
                      : MeshOp();
    if (!meshOp)
      return reject(op, "a collective outside a manual computation "
                        "(shard_map)");
    Mesh mesh = meshOp.getMesh().toMesh();
    std::vector<std::vector<int64_t>> all;
    for (int64_t d = 0; d < mesh.numDevices(); ++d)
      all.push_back({d});
    std::optional<SmallVector<std::string>> found;
    SmallVector<int64_t> positions;
    for (int size = 1; size <= mesh.rank() && !found; ++size) {
      std::vector<std::string> names;
      for (const MeshAxis &axis : mesh.axes())
        names.push_back(axis.name);
      std::sort(names.begin(), names.end());
      // Ordered choices of `size` axes.
      std::vector<std::vector<std::string>> choices;
      do {
        std::vector<std::string> choice(names.begin(), names.begin() + size);
        if (std::find(choices.begin(), choices.end(), choice) ==
            choices.end())
          choices.push_back(choice);
      } while (std::next_permutation(names.begin(), names.end()));
      for (const std::vector<std::string> &axes : choices) {
        std::map<std::vector<int64_t>, std::set<std::pair<int64_t, int64_t>>>
            byGroup;
        bool ok = !pairs.empty();
        for (const std::vector<int64_t> &pair : pairs) {
          Expected<CollectiveGroup> source = resolveGroup(mesh, pair[0], axes);
          Expected<CollectiveGroup> target = resolveGroup(mesh, pair[1], axes);
          if (!source || !target || source->members != target->members) {
            ok = false;
            break;
          }
          byGroup[source->members].insert(
              {source->position, target->position});
        }
        if (!ok)
          continue;
        // Every group must make the same moves (groups with no pair at all
        // are allowed only if no group has one).
        std::set<std::vector<int64_t>> groups;
        for (int64_t d = 0; d < mesh.numDevices(); ++d)
          groups.insert(resolveGroup(mesh, d, axes)->members);
        const auto &first = byGroup.begin()->second;
        ok = byGroup.size() == groups.size();
        for (const auto &entry : byGroup)
          ok &= entry.second == first;
        if (!ok)
          continue;
        found = SmallVector<std::string>(axes.begin(), axes.end());
        for (const auto &[s, t] : first) {
          positions.push_back(s);
          positions.push_back(t);
        }
        break;
      }
    }
    if (!found)
      return reject(op, "source_target_pairs that are not the same "
                        "permutation within the groups of some mesh axes");
    SmallVector<StringRef> refs(found->begin(), found->end());
    return SmallVector<Value>{CollectivePermuteOp::create(
        builder, loc, type, operand, manualMesh,
        builder.getStrArrayAttr(refs),
        builder.getDenseI64ArrayAttr(positions))};
  }

  std::vector<std::vector<int64_t>> groups =
      integerRows(property(op, "replica_groups"));
  std::optional<SmallVector<std::string>> axes = axesOfGroups(op, groups);
  if (!axes)
    return failure();
  SmallVector<StringRef> refs(axes->begin(), axes->end());
  ArrayAttr axesAttr = builder.getStrArrayAttr(refs);
  auto dimension = [&](StringRef key) -> std::optional<int64_t> {
    if (auto attr = dyn_cast_or_null<IntegerAttr>(property(op, key)))
      return attr.getInt();
    return std::nullopt;
  };
  if (name == "stablehlo.all_gather") {
    std::optional<int64_t> dim = dimension("all_gather_dim");
    if (!dim)
      return reject(op, "stablehlo.all_gather without all_gather_dim");
    return SmallVector<Value>{
        AllGatherOp::create(builder, loc, type, operand, manualMesh, axesAttr,
                            builder.getI64IntegerAttr(*dim))};
  }
  if (name == "stablehlo.all_to_all") {
    std::optional<int64_t> split = dimension("split_dimension");
    std::optional<int64_t> concat = dimension("concat_dimension");
    if (!split || !concat)
      return reject(op, "stablehlo.all_to_all without split and concat "
                        "dimensions");
    return SmallVector<Value>{AllToAllOp::create(
        builder, loc, type, operand, manualMesh, axesAttr,
        builder.getI64IntegerAttr(*split), builder.getI64IntegerAttr(*concat))};
  }
  std::optional<ReductionKind> kind =
      op->getNumRegions() == 1 ? reductionOfBody(op->getRegion(0))
                               : std::nullopt;
  if (!kind)
    return reject(op, name + " whose body is not one add, maximum, minimum, "
                             "and or or");
  auto kindAttr = ReductionKindAttr::get(context, *kind);
  if (name == "stablehlo.all_reduce")
    return SmallVector<Value>{AllReduceOp::create(
        builder, loc, type, kindAttr, operand, manualMesh, axesAttr)};
  std::optional<int64_t> dim = dimension("scatter_dimension");
  if (!dim)
    return reject(op, "stablehlo.reduce_scatter without scatter_dimension");
  return SmallVector<Value>{
      ReduceScatterOp::create(builder, loc, type, kindAttr, operand,
                              manualMesh, axesAttr,
                              builder.getI64IntegerAttr(*dim))};
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

/// A GSPMD sharding string: `{replicated}` or `{devices=[t...]<ids>
/// [last_tile_dim_replicate]}` with ids an explicit list or an iota
/// `<=[dims]` or `<=[dims]T(perm)`.
struct GspmdSharding {
  bool replicated = false;
  std::vector<int64_t> tile;
  bool lastTileReplicates = false;
  /// The device at each tile position, row-major.
  std::vector<int64_t> devices;
};

std::optional<std::vector<int64_t>> parseIntegerList(StringRef text) {
  std::vector<int64_t> values;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, false);
  for (StringRef part : parts) {
    int64_t value = 0;
    if (part.trim().getAsInteger(10, value))
      return std::nullopt;
    values.push_back(value);
  }
  return values;
}

std::optional<GspmdSharding> parseGspmd(StringRef text) {
  GspmdSharding sharding;
  text = text.trim();
  if (!text.consume_front("{") || !text.consume_back("}"))
    return std::nullopt;
  text = text.trim();
  if (text == "replicated") {
    sharding.replicated = true;
    return sharding;
  }
  if (!text.consume_front("devices=["))
    return std::nullopt;
  auto [tileText, rest] = text.split(']');
  std::optional<std::vector<int64_t>> tile = parseIntegerList(tileText);
  if (!tile)
    return std::nullopt;
  sharding.tile = *tile;
  int64_t total = 1;
  for (int64_t t : sharding.tile)
    total *= t;
  rest = rest.trim();
  if (rest.consume_back("last_tile_dim_replicate")) {
    sharding.lastTileReplicates = true;
    rest = rest.trim();
  }
  if (rest.consume_front("<=[")) {
    auto [dimsText, after] = rest.split(']');
    std::optional<std::vector<int64_t>> dims = parseIntegerList(dimsText);
    if (!dims)
      return std::nullopt;
    std::vector<int64_t> perm(dims->size());
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    after = after.trim();
    if (after.consume_front("T(")) {
      std::optional<std::vector<int64_t>> parsed =
          parseIntegerList(after.take_until([](char c) { return c == ')'; }));
      if (!parsed || parsed->size() != dims->size())
        return std::nullopt;
      perm = *parsed;
      after = after.drop_until([](char c) { return c == ')'; }).drop_front();
    }
    if (!after.trim().empty())
      return std::nullopt;
    // devices = transpose(iota(dims), perm), flattened.
    std::vector<int64_t> transposed;
    for (int64_t p : perm)
      transposed.push_back((*dims)[p]);
    std::vector<int64_t> strides(dims->size(), 1);
    for (int64_t d = static_cast<int64_t>(dims->size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * (*dims)[d + 1];
    for (int64_t i = 0; i < total; ++i) {
      int64_t rem = i, id = 0;
      for (int64_t d = static_cast<int64_t>(transposed.size()) - 1; d >= 0;
           --d) {
        id += (rem % transposed[d]) * strides[perm[d]];
        rem /= transposed[d];
      }
      sharding.devices.push_back(id);
    }
  } else {
    std::optional<std::vector<int64_t>> ids = parseIntegerList(rest);
    if (!ids)
      return std::nullopt;
    sharding.devices = *ids;
  }
  if (static_cast<int64_t>(sharding.devices.size()) != total)
    return std::nullopt;
  return sharding;
}

void Importer::makeGspmdMesh() {
  if (gspmdMesh)
    return;
  int64_t devices = 1;
  if (auto partitions =
          dyn_cast_or_null<IntegerAttr>(module->getAttr("mhlo.num_partitions")))
    devices = partitions.getInt();
  for (int64_t n = devices, p = 2; n > 1;) {
    if (n % p == 0) {
      gspmdFactors.push_back(p);
      n /= p;
    } else {
      ++p;
    }
  }
  if (gspmdFactors.empty())
    gspmdFactors.push_back(1);
  SmallVector<MeshAxisAttr> axes;
  for (size_t a = 0; a < gspmdFactors.size(); ++a)
    axes.push_back(MeshAxisAttr::get(
        context, StringAttr::get(context, "a" + std::to_string(a)),
        gspmdFactors[a]));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  MeshOp::create(builder, module.getLoc(), "gspmd_mesh",
                 MeshAttr::get(context, axes, {}));
  gspmdMesh = FlatSymbolRefAttr::get(context, "gspmd_mesh");
}

ShardingAttr Importer::importGspmdSharding(Operation *where, Attribute attr,
                                           Type type, StringRef what) {
  auto text = dyn_cast_or_null<StringAttr>(attr);
  std::optional<GspmdSharding> parsed =
      text ? parseGspmd(text.getValue()) : std::nullopt;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!parsed || !tensor) {
    fail(where) << "unsupported GSPMD sharding of " << what << ": "
                << (text ? text.getValue() : StringRef("(not a string)"));
    return nullptr;
  }
  makeGspmdMesh();
  int64_t rank = tensor.getRank();
  Sharding sharding = Sharding::replicated(static_cast<int>(rank));
  if (!parsed->replicated) {
    int64_t tensorDims = static_cast<int64_t>(parsed->tile.size()) -
                         (parsed->lastTileReplicates ? 1 : 0);
    int64_t total = 1;
    for (int64_t factor : gspmdFactors)
      total *= factor;
    if (tensorDims != rank ||
        static_cast<int64_t>(parsed->devices.size()) != total) {
      fail(where) << "GSPMD sharding of " << what << " " << text.getValue()
                  << " does not fit a rank-" << rank << " tensor on "
                  << total << " devices";
      return nullptr;
    }
    // Find an order of the mesh axes whose row-major enumeration is the
    // tile assignment, and whose factors group into the tile dimensions.
    int axesCount = static_cast<int>(gspmdFactors.size());
    std::vector<int> order(axesCount);
    for (int a = 0; a < axesCount; ++a)
      order[a] = a;
    std::vector<int64_t> meshStrides(axesCount, 1);
    for (int a = axesCount - 2; a >= 0; --a)
      meshStrides[a] = meshStrides[a + 1] * gspmdFactors[a + 1];
    bool found = false;
    do {
      bool same = true;
      for (int64_t i = 0; same && i < total; ++i) {
        int64_t rem = i, id = 0;
        for (int k = axesCount - 1; k >= 0; --k) {
          int64_t size = gspmdFactors[order[k]];
          id += (rem % size) * meshStrides[order[k]];
          rem /= size;
        }
        same = id == parsed->devices[i];
      }
      if (!same)
        continue;
      // Group consecutive axes of `order` into tile dimensions.
      std::vector<std::vector<std::string>> dims(parsed->tile.size());
      size_t next = 0;
      bool aligned = true;
      for (size_t d = 0; aligned && d < parsed->tile.size(); ++d) {
        int64_t product = 1;
        while (product < parsed->tile[d] && next < order.size()) {
          product *= gspmdFactors[order[next]];
          dims[d].push_back("a" + std::to_string(order[next++]));
        }
        aligned = product == parsed->tile[d];
      }
      if (!aligned || next != order.size())
        continue;
      for (int64_t d = 0; d < rank; ++d)
        sharding.dims[d].axes = dims[d];
      found = true;
      break;
    } while (std::next_permutation(order.begin(), order.end()));
    if (!found) {
      fail(where) << "GSPMD sharding of " << what << " " << text.getValue()
                  << " is not a split over the prime-factor axes of "
                  << total << " devices";
      return nullptr;
    }
  }
  ShardingAttr result = ShardingAttr::fromSharding(context, gspmdMesh, sharding);
  if (failed(verifyShardingFor(where, result, type, what,
                               [&]() { return fail(where); })))
    return nullptr;
  return result;
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
      if (name == "mhlo.sharding") {
        if (ShardingAttr sharding =
                importGspmdSharding(function, attr.getValue(), type, what))
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
