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
// This file holds the driver (run, importBlock, function attributes), the
// conversion table, the helpers the conversions share, and the entry points
// of StableHLOToPartita.h.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "partita/Conversion/StableHLOToPartita.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <optional>

namespace partita {
namespace stablehlo_import {

/// The printed form of an attribute.
std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

Attribute parseAttributeText(const std::string &text, MLIRContext *context,
                             std::string *why) {
  std::string message;
  ScopedDiagnosticHandler quiet(context, [&](Diagnostic &diagnostic) {
    if (message.empty())
      message = diagnostic.str();
    return success();
  });
  Attribute parsed = parseAttribute(text, context);
  if (!parsed && why)
    *why = message;
  return parsed;
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

const llvm::StringMap<Importer::Conversion> &Importer::conversions() {
  static const llvm::StringMap<Conversion> table = [] {
    llvm::StringMap<Conversion> t;
    addOneToOneConversions(t);
    addComposedElementwiseConversions(t);
    addRoundingConversions(t);
    addSelectionConversions(t);
    addTensorConversions(t);
    addControlFlowConversions(t);
    addShardingConversions(t);
    return t;
  }();
  return table;
}

void Importer::addOneToOneConversions(llvm::StringMap<Conversion> &t) {
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
  // jax.random's threefry (dropout, initializers) and its bits-to-floats.
  t["stablehlo.shift_left"] = binary<ShiftLeftOp>();
  t["stablehlo.shift_right_logical"] = binary<ShiftRightLogicalOp>();
  t["stablehlo.shift_right_arithmetic"] = binary<ShiftRightArithmeticOp>();
}

void Importer::addComposedElementwiseConversions(
    llvm::StringMap<Conversion> &t) {
  t["stablehlo.bitcast_convert"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    auto from = tensorOf(op->getOperand(0));
    auto to = tensorOf(op->getResult(0));
    if (from.getShape() != to.getShape() ||
        !from.getElementType().isIntOrFloat() ||
        !to.getElementType().isIntOrFloat() ||
        from.getElementType().getIntOrFloatBitWidth() !=
            to.getElementType().getIntOrFloatBitWidth() ||
        to.getElementType().isInteger(1)) {
      self.fail(op) << "stablehlo.bitcast_convert between element types "
                       "of different widths (or of i1) is not supported: "
                    << from << " -> " << to;
      return failure();
    }
    return SmallVector<Value>{BitcastConvertOp::create(
        self.builder, op->getLoc(), to, op->getOperand(0))};
  };
  t["stablehlo.exponential_minus_one"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    auto type = tensorOf(op->getResult(0));
    Value e =
        ExpOp::create(self.builder, op->getLoc(), type, op->getOperand(0));
    return SmallVector<Value>{
        SubOp::create(self.builder, op->getLoc(), type, e,
                      self.splat(op->getLoc(), type, 1.0))};
  };
  t["chlo.square"] = [](Importer &self,
                        Operation *op) -> FailureOr<SmallVector<Value>> {
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
    return SmallVector<Value>{
        CompareOp::create(self.builder, loc, op->getResult(0).getType(),
                          CompareDirection::LT, magnitude, infinity)};
  };
  t["stablehlo.cbrt"] = [](Importer &self,
                           Operation *op) -> FailureOr<SmallVector<Value>> {
    // sign(x) |x|^(1/3).
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    auto type = tensorOf(x);
    Value root = PowOp::create(self.builder, loc, type,
                               AbsOp::create(self.builder, loc, type, x),
                               self.splat(loc, type, 1.0 / 3.0));
    return SmallVector<Value>{
        MulOp::create(self.builder, loc, type,
                      SignOp::create(self.builder, loc, type, x), root)};
  };
}

void Importer::addRoundingConversions(llvm::StringMap<Conversion> &t) {
  // Rounding, from floor: ceil(x) = -floor(-x). To nearest: with t the
  // integer part toward the rounding's base and d = |x - t| (exact), 1
  // more (away from t) where d > 1/2, or d = 1/2 and the tie goes that
  // way: always for ties away from zero (lax.round's default), where t
  // is odd for ties to even (jnp.round).
  t["stablehlo.ceil"] = [](Importer &self,
                           Operation *op) -> FailureOr<SmallVector<Value>> {
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    auto type = tensorOf(x);
    Value down = FloorOp::create(self.builder, loc, type,
                                 NegOp::create(self.builder, loc, type, x));
    return SmallVector<Value>{NegOp::create(self.builder, loc, type, down)};
  };
  t["stablehlo.round_nearest_afz"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    return self.roundToNearest(op, /*tiesToEven=*/false);
  };
  t["stablehlo.round_nearest_even"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    return self.roundToNearest(op, /*tiesToEven=*/true);
  };
}

void Importer::addSelectionConversions(llvm::StringMap<Conversion> &t) {
  t["stablehlo.select"] = [](Importer &self,
                             Operation *op) -> FailureOr<SmallVector<Value>> {
    // StableHLO allows one scalar predicate for all elements.
    Value predicate = op->getOperand(0);
    auto type = tensorOf(op->getResult(0));
    if (tensorOf(predicate).getRank() == 0 && type.getRank() > 0)
      predicate = BroadcastOp::create(
          self.builder, op->getLoc(),
          RankedTensorType::get(type.getShape(), self.builder.getI1Type()),
          predicate, self.builder.getDenseI64ArrayAttr({}));
    return SmallVector<Value>{SelectOp::create(self.builder, op->getLoc(), type,
                                               predicate, op->getOperand(1),
                                               op->getOperand(2))};
  };
  t["stablehlo.clamp"] = [](Importer &self,
                            Operation *op) -> FailureOr<SmallVector<Value>> {
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
    return SmallVector<Value>{
        MinOp::create(self.builder, loc, type, low, whole(op->getOperand(2)))};
  };
}

void Importer::addTensorConversions(llvm::StringMap<Conversion> &t) {
  t["chlo.top_k"] = [](Importer &self,
                       Operation *op) -> FailureOr<SmallVector<Value>> {
    // The k largest along the last dimension, largest first.
    auto k = dyn_cast_or_null<IntegerAttr>(property(op, "k"));
    if (!k || op->getNumResults() != 2)
      return self.reject(op, "chlo.top_k without k");
    int64_t last = tensorOf(op->getOperand(0)).getRank() - 1;
    auto topK = TopKOp::create(
        self.builder, op->getLoc(), op->getResult(0).getType(),
        op->getResult(1).getType(), op->getOperand(0), last, k.getInt());
    return SmallVector<Value>{topK.getValues(), topK.getIndices()};
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
        op->getOperand(0), op->getOperand(1), op->getOperands().drop_front(2))};
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
  t["stablehlo.reduce_window"] = &Importer::reduceWindow;
  t["stablehlo.gather"] = &Importer::gather;
  t["stablehlo.scatter"] = &Importer::scatter;
  t["stablehlo.sort"] = &Importer::sort;
  t["stablehlo.reverse"] = &Importer::reverse;
  t["stablehlo.convolution"] = &Importer::convolution;
  t["stablehlo.select_and_scatter"] = &Importer::selectAndScatter;
}

void Importer::addControlFlowConversions(llvm::StringMap<Conversion> &t) {
  t["stablehlo.optimization_barrier"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    auto barrier = OptimizationBarrierOp::create(
        self.builder, op->getLoc(), op->getResultTypes(), op->getOperands());
    return SmallVector<Value>(barrier->getResults());
  };
  t["stablehlo.while"] = &Importer::whileLoop;
  t["stablehlo.case"] = &Importer::caseOp;
  t["stablehlo.composite"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    // jax.lax.composite: a call of its decomposition, inlined with the
    // other calls.
    auto callee =
        dyn_cast_or_null<FlatSymbolRefAttr>(property(op, "decomposition"));
    auto function =
        callee ? self.module.lookupSymbol<func::FuncOp>(callee.getAttr())
               : func::FuncOp();
    if (!function ||
        TypeRange(function.getFunctionType().getInputs()) !=
            TypeRange(op->getOperandTypes()) ||
        TypeRange(function.getFunctionType().getResults()) !=
            TypeRange(op->getResultTypes()))
      return self.reject(op, "stablehlo.composite without a decomposition "
                             "function of its operand and result types");
    auto call = func::CallOp::create(self.builder, op->getLoc(), function,
                                     op->getOperands());
    return SmallVector<Value>(call.getResults());
  };
}

void Importer::addShardingConversions(llvm::StringMap<Conversion> &t) {
  t["sdy.sharding_constraint"] = &Importer::shardingConstraint;
  t["stablehlo.custom_call"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    // GSPMD's sharding constraint: custom_call @Sharding.
    auto target =
        dyn_cast_or_null<StringAttr>(property(op, "call_target_name"));
    if (!target || target.getValue() != "Sharding" || op->getNumOperands() != 1)
      return self.reject(op, "stablehlo.custom_call @" +
                                 (target ? target.getValue() : "?") +
                                 " is not supported");
    ShardingAttr sharding =
        self.importGspmdSharding(op, op->getDiscardableAttr("mhlo.sharding"),
                                 op->getOperand(0).getType(), "the constraint");
    if (!sharding)
      return failure();
    return SmallVector<Value>{ShardingConstraintOp::create(
        self.builder, op->getLoc(), op->getOperand(0), sharding)};
  };
  t["sdy.manual_computation"] = &Importer::manualComputation;
  t["stablehlo.partition_id"] = &Importer::partitionId;
  t["stablehlo.replica_id"] =
      [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
    // JAX's SPMD programs run one replica: its id is 0.
    return SmallVector<Value>{
        self.splat(op->getLoc(), tensorOf(op->getResult(0)), 0)};
  };
  for (const char *name : {"stablehlo.all_reduce", "stablehlo.all_gather",
                           "stablehlo.reduce_scatter", "stablehlo.all_to_all",
                           "stablehlo.collective_permute"})
    t[name] = &Importer::collective;
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

FailureOr<SmallVector<Value>> Importer::roundToNearest(Operation *op,
                                                       bool tiesToEven) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto type = tensorOf(x);
  auto mask = RankedTensorType::get(type.getShape(), builder.getI1Type());
  // Ties to even: t = floor(x), the step +1. Away from zero: t = trunc(x)
  // = sign(x) floor(|x|), the step sign(x).
  Value base, step;
  if (tiesToEven) {
    base = FloorOp::create(builder, loc, type, x);
    step = splat(loc, type, 1.0);
  } else {
    step = SignOp::create(builder, loc, type, x);
    base = MulOp::create(builder, loc, type, step,
                         FloorOp::create(builder, loc, type,
                                         AbsOp::create(builder, loc, type, x)));
  }
  Value distance = AbsOp::create(builder, loc, type,
                                 SubOp::create(builder, loc, type, x, base));
  Value half = splat(loc, type, 0.5);
  Value beyond = CompareOp::create(builder, loc, mask, CompareDirection::GT,
                                   distance, half);
  Value tie = CompareOp::create(builder, loc, mask, CompareDirection::EQ,
                                distance, half);
  if (tiesToEven) {
    Value odd = CompareOp::create(
        builder, loc, mask, CompareDirection::NE,
        RemOp::create(builder, loc, type, base, splat(loc, type, 2.0)),
        splat(loc, type, 0.0));
    tie = AndOp::create(builder, loc, mask, tie, odd);
  }
  Value away = OrOp::create(builder, loc, mask, beyond, tie);
  Value moved = AddOp::create(builder, loc, type, base, step);
  return SmallVector<Value>{
      SelectOp::create(builder, loc, type, away, moved, base)};
}

namespace {
/// Operand and result counts of the converted ops whose counts are fixed
/// (the conversions read them without counting); the others check theirs.
std::optional<std::pair<unsigned, unsigned>> fixedArity(StringRef name) {
  static const llvm::StringMap<std::pair<unsigned, unsigned>> table = [] {
    llvm::StringMap<std::pair<unsigned, unsigned>> t;
    for (const char *unary : {"stablehlo.abs",
                              "stablehlo.negate",
                              "stablehlo.sign",
                              "stablehlo.exponential",
                              "stablehlo.log",
                              "stablehlo.log_plus_one",
                              "stablehlo.tanh",
                              "stablehlo.logistic",
                              "stablehlo.sqrt",
                              "stablehlo.rsqrt",
                              "stablehlo.sine",
                              "stablehlo.cosine",
                              "stablehlo.floor",
                              "stablehlo.not",
                              "chlo.erf",
                              "stablehlo.convert",
                              "stablehlo.reshape",
                              "stablehlo.exponential_minus_one",
                              "chlo.square",
                              "stablehlo.is_finite",
                              "stablehlo.broadcast_in_dim",
                              "stablehlo.transpose",
                              "stablehlo.slice",
                              "sdy.sharding_constraint",
                              "stablehlo.bitcast_convert",
                              "stablehlo.ceil",
                              "stablehlo.round_nearest_even",
                              "stablehlo.round_nearest_afz",
                              "stablehlo.cbrt"})
      t[unary] = {1, 1};
    for (const char *binary :
         {"stablehlo.add", "stablehlo.subtract", "stablehlo.multiply",
          "stablehlo.divide", "stablehlo.remainder", "stablehlo.maximum",
          "stablehlo.minimum", "stablehlo.power", "stablehlo.and",
          "stablehlo.or", "stablehlo.xor", "stablehlo.shift_left",
          "stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic",
          "stablehlo.compare", "stablehlo.dot_general", "stablehlo.pad",
          "stablehlo.gather"})
      t[binary] = {2, 1};
    t["stablehlo.select"] = {3, 1};
    t["stablehlo.clamp"] = {3, 1};
    t["stablehlo.constant"] = {0, 1};
    t["stablehlo.iota"] = {0, 1};
    t["chlo.top_k"] = {1, 2};
    return t;
  }();
  auto it = table.find(name);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}
} // namespace

namespace {
/// The JAX constructs that usually write an op the importer does not take,
/// for its error message.
StringRef usualWriter(StringRef name) {
  static const llvm::StringMap<StringRef> table = {
      {"stablehlo.convolution",
       "nnx.Conv, flax.linen.Conv and lax.conv_general_dilated"},
      {"stablehlo.select_and_scatter", "the gradient of max pooling"},
      {"stablehlo.rng_bit_generator", "jax.random with the 'rbg' generator"},
      {"stablehlo.fft", "jnp.fft"},
      {"stablehlo.atan2", "jnp.arctan2 and jnp.angle"},
      {"stablehlo.cholesky", "jnp.linalg.cholesky"},
      {"stablehlo.triangular_solve", "jax.scipy.linalg.solve_triangular"},
      {"stablehlo.composite", "jax.lax.composite"},
      {"stablehlo.infeed", "host callbacks"},
      {"stablehlo.outfeed", "host callbacks"},
      {"stablehlo.send", "host callbacks"},
      {"stablehlo.recv", "host callbacks"},
  };
  auto it = table.find(name);
  return it == table.end() ? StringRef() : it->second;
}
} // namespace

void Importer::importBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    StringRef name = op.getName().getStringRef();
    if (op.getName().isRegistered())
      continue; // func.return, func.call, partita ops.
    auto conversion = conversions().find(name);
    if (conversion == conversions().end()) {
      InFlightDiagnostic error = fail(&op);
      error << "unsupported op '" << name << "'";
      if (StringRef writer = usualWriter(name); !writer.empty())
        error << " (JAX writes it for " << writer << ")";
      continue;
    }
    // What every conversion takes for granted: ranked tensors in and out,
    // and the op's operand and result counts (found by fuzzing the
    // importer: a dot_general read past its operand's dimensions).
    auto notTensor = [](Type type) { return !isa<RankedTensorType>(type); };
    if (llvm::any_of(op.getOperandTypes(), notTensor) ||
        llvm::any_of(op.getResultTypes(), notTensor)) {
      fail(&op) << "'" << name
                << "' with an operand or result that is not a ranked tensor";
      continue;
    }
    if (auto arity = fixedArity(name);
        arity && (op.getNumOperands() != arity->first ||
                  op.getNumResults() != arity->second)) {
      fail(&op) << "'" << name << "' with " << op.getNumOperands()
                << " operand(s) and " << op.getNumResults()
                << " result(s); it has " << arity->first << " and "
                << arity->second;
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
        sharding = dyn_cast_or_null<ShardingAttr>(parseAttributeText(
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

namespace {
/// `type` with unsigned integers replaced by the signless integer of their
/// width (partita's integers are signless; JAX writes uint32 for step
/// counters and random bits).
Type signless(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.isSignless()
               ? type
               : IntegerType::get(type.getContext(), integer.getWidth());
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(signless(tensor.getElementType()));
  if (auto function = dyn_cast<FunctionType>(type)) {
    SmallVector<Type> inputs, results;
    for (Type input : function.getInputs())
      inputs.push_back(signless(input));
    for (Type result : function.getResults())
      results.push_back(signless(result));
    return FunctionType::get(type.getContext(), inputs, results);
  }
  return type;
}

/// Retypes every value of `module` with signless integers (bit for bit:
/// docs/JAX.md says where unsigned and signed arithmetic differ).
void signlessIntegers(ModuleOp module) {
  module.walk([](Operation *op) {
    for (Value result : op->getResults())
      result.setType(signless(result.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          argument.setType(signless(argument.getType()));
    if (auto function = dyn_cast<func::FuncOp>(op))
      function.setFunctionType(
          cast<FunctionType>(signless(function.getFunctionType())));
  });
}
} // namespace

namespace {
/// Erases the ops whose results nothing uses and that have no effects, as
/// XLA does before partitioning: JAX leaves some (a shard_map loop's last
/// ppermute whose result is dropped), and each would be a collective.
void eraseDeadOps(ModuleOp module) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> dead;
    module.walk<WalkOrder::PostOrder>([&](Operation *op) {
      // Ops with regions stay (erasing one would free the ops listed
      // inside it).
      if (op->getNumResults() > 0 && op->getNumRegions() == 0 &&
          isOpTriviallyDead(op))
        dead.push_back(op);
    });
    for (Operation *op : llvm::reverse(dead))
      if (isOpTriviallyDead(op)) {
        op->erase();
        changed = true;
      }
  }
}
} // namespace

LogicalResult Importer::run() {
  signlessIntegers(module);
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
    eraseDeadOps(module);
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

} // namespace stablehlo_import

using namespace mlir;

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
  return stablehlo_import::Importer(module).run();
}

} // namespace partita
