//===- Propagate.cpp - Sharding propagation over a module -----------------===//
//
// Builds the IR-free propagation graph of partita/Sharding/Propagation.h from
// a module, runs it, and writes the shardings and their origins back.
//
// Graph: one tensor per SSA value (function arguments, op results, loop
// body arguments) and per function result; one op per operation with a
// sharding rule; identity edges for the places where one value flows into
// another without an op of its own (call arguments and results, returns,
// loop carries) and for manual_computation boundaries.
//
//===----------------------------------------------------------------------===//

#include "ReshardScale.h"
#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Sharding/Layout.h"
#include "partita/Sharding/Propagation.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace partita {
#define GEN_PASS_DEF_PROPAGATEPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

constexpr llvm::StringLiteral kOriginAttrName = "partita.origin";

int64_t elementBytes(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  unsigned bits = element.getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

/// Propagation (and every pass after it) works on statically shaped tensors
/// of integers and floats; anything else is refused where it appears.
bool isRankedTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         tensor.getElementType().isIntOrFloat();
}

constexpr const char *kRankedTensorsOnly =
    ": sharded programs take, compute and return statically shaped tensors "
    "of integers or floats (a scalar is tensor<T>)";

std::vector<int64_t> shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return {tensor.getShape().begin(), tensor.getShape().end()};
}

/// The module as a propagation problem, with the way back to the IR.
class GraphBuilder {
public:
  explicit GraphBuilder(ModuleOp module) : module(module) {}

  PropagationProblem problem;
  /// Tensor id of each SSA value.
  llvm::DenseMap<Value, int> tensorOf;
  /// Tensor ids of each function's results.
  llvm::DenseMap<Operation *, SmallVector<int>> functionResults;
  /// The operation of each graph op (null for edges).
  std::vector<Operation *> opOf;
  /// Where each annotation was written, for conflict messages.
  std::vector<Location> annotationLoc;
  /// Mesh named by the annotations.
  FlatSymbolRefAttr meshName;
  /// Tensors of arguments that hold model state (role param, grad or
  /// opt_state): sharded to be gathered where they are used (FSDP, ZeRO),
  /// so a gather of one is what was asked for, not a warning.
  llvm::DenseSet<int> modelState;
  SmallVector<Operation *> opsWithoutRule;

  LogicalResult build();

private:
  ModuleOp module;

  int newTensor(Type type, std::string name, Location loc) {
    PropagationTensor tensor;
    tensor.shape = shapeOf(type);
    tensor.elementBytes = elementBytes(type);
    tensor.sharding = Sharding::open(static_cast<int>(tensor.shape.size()));
    tensor.name = std::move(name);
    problem.tensors.push_back(std::move(tensor));
    annotationLoc.push_back(loc);
    return static_cast<int>(problem.tensors.size()) - 1;
  }

  int tensorFor(Value value, const std::string &name) {
    auto it = tensorOf.find(value);
    if (it != tensorOf.end())
      return it->second;
    int id = newTensor(value.getType(), name, value.getLoc());
    tensorOf[value] = id;
    return id;
  }

  LogicalResult annotate(int tensor, ShardingAttr sharding, Location loc,
                         Operation *anchor) {
    if (!meshName)
      meshName = sharding.getMesh();
    else if (meshName != sharding.getMesh())
      return anchor->emitError()
             << "propagation needs every sharding on one mesh; this one uses "
             << sharding.getMesh() << " but others use " << meshName;
    PropagationTensor &node = problem.tensors[tensor];
    node.sharding = sharding.toSharding();
    node.annotated = true;
    node.priority = sharding.getPriority().value_or(0);
    annotationLoc[tensor] = loc;
    return success();
  }

  void addOp(OpShardingRule rule, std::vector<int> operands,
             std::vector<int> results, std::string name, Operation *op) {
    problem.ops.push_back({std::move(rule), std::move(operands),
                           std::move(results), std::move(name)});
    opOf.push_back(op);
  }

  /// `from` flows unchanged into `to`.
  void addEdge(int from, int to, const std::string &name) {
    addOp(identityRule({problem.tensors[from].shape}), {from}, {to}, name,
          nullptr);
  }

  std::string valueName(Value value) { return describeValue(value); }

  LogicalResult buildFunction(func::FuncOp function);
  LogicalResult buildOp(Operation *op, func::FuncOp function);
};

LogicalResult GraphBuilder::build() {
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    // Arguments and result slots first, so calls can link to them.
    for (BlockArgument arg : function.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()))
        continue;
      int id = tensorFor(arg, valueName(arg));
      if (auto role = function.getArgAttrOfType<RoleAttr>(
              arg.getArgNumber(), PartitaDialect::kRoleAttrName);
          role && (role.getValue() == Role::Param ||
                   role.getValue() == Role::Grad ||
                   role.getValue() == Role::OptState))
        modelState.insert(id);
      if (auto sharding = function.getArgAttrOfType<ShardingAttr>(
              arg.getArgNumber(), PartitaDialect::kShardingAttrName))
        if (failed(annotate(id, sharding, arg.getLoc(), function)))
          return failure();
    }
    SmallVector<int> &results = functionResults[function];
    for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
      std::string name = "result " + std::to_string(index) + " of @" +
                         function.getSymName().str();
      if (!isRankedTensor(type))
        return function.emitError()
               << name << " has type " << type << kRankedTensorsOnly;
      int id = newTensor(type, name, function.getLoc());
      results.push_back(id);
      auto sharding = function.getResultAttrOfType<ShardingAttr>(
          index, PartitaDialect::kShardingAttrName);
      if (sharding &&
          failed(annotate(id, sharding, function.getLoc(), function)))
        return failure();
      problem.tensors[id].mustBeWhole = !sharding || !sharding.isPartial();
      // A result holding an argument's new value (a train step's
      // parameters, gradients and optimizer state) takes the argument's
      // layout, so it can be updated in place.
      if (auto aliases = function.getResultAttrOfType<IntegerAttr>(
              index, PartitaDialect::kAliasesAttrName))
        addEdge(tensorOf[function.getArgument(aliases.getInt())], id,
                name + " (new value of argument " +
                    std::to_string(aliases.getInt()) + ")");
    }
  }
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && failed(buildFunction(function)))
      return failure();
  return success();
}

LogicalResult GraphBuilder::buildFunction(func::FuncOp function) {
  WalkResult walk = function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == function.getOperation())
      return WalkResult::advance();
    if (failed(buildOp(op, function)))
      return WalkResult::interrupt();
    // Manual computations are written on local shapes: keep out.
    return isa<ManualComputationOp>(op) ? WalkResult::skip()
                                        : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult GraphBuilder::buildOp(Operation *op, func::FuncOp function) {
  for (Value value : op->getOperands())
    if (!isRankedTensor(value.getType()))
      return op->emitError() << "operand " << describeValue(value)
                             << " has type " << value.getType()
                             << kRankedTensorsOnly;
  for (Value value : op->getResults())
    if (!isRankedTensor(value.getType()))
      return op->emitError() << "result " << describeValue(value)
                             << " has type " << value.getType()
                             << kRankedTensorsOnly;
  auto operandIds = [&]() {
    std::vector<int> ids;
    for (Value operand : op->getOperands())
      ids.push_back(tensorFor(operand, valueName(operand)));
    return ids;
  };
  auto resultIds = [&]() {
    std::vector<int> ids;
    for (Value result : op->getResults())
      ids.push_back(tensorFor(result, valueName(result)));
    return ids;
  };
  // A broadcast of a value at most half its size is resharded at its
  // source (Partitioner::rebroadcast): its reshards cost that much less.
  if (isa<BroadcastOp>(op))
    problem.tensors[tensorFor(op->getResult(0), valueName(op->getResult(0)))]
        .reshardScale = reshardScaleOf(op->getResult(0));

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<int> &slots = functionResults[function];
    for (auto [index, operand] : llvm::enumerate(ret.getOperands()))
      addEdge(tensorFor(operand, valueName(operand)), slots[index],
              "return at " + describeLocation(ret.getLoc()));
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal())
      return success();
    std::vector<int> operands = operandIds(), results = resultIds();
    std::string name = describeOp(call);
    for (auto [index, id] : llvm::enumerate(operands))
      addEdge(id, tensorOf[callee.getArgument(index)], name);
    for (auto [index, id] : llvm::enumerate(results))
      addEdge(functionResults[callee][index], id, name);
    return success();
  }
  if (isa<YieldOp>(op))
    return success(); // Linked by the parent.
  if (auto manual = dyn_cast<ManualComputationOp>(op)) {
    std::vector<int> operands = operandIds(), results = resultIds();
    for (auto [index, id] : llvm::enumerate(operands)) {
      auto sharding = cast<ShardingAttr>(manual.getInShardings()[index]);
      int boundary = newTensor(op->getOperand(index).getType(),
                               "in_sharding " + std::to_string(index) + " of " +
                                   describeOp(op),
                               op->getLoc());
      if (failed(annotate(boundary, sharding, op->getLoc(), op)))
        return failure();
      addEdge(id, boundary, describeOp(op));
    }
    for (auto [index, id] : llvm::enumerate(results))
      if (failed(annotate(id,
                          cast<ShardingAttr>(manual.getOutShardings()[index]),
                          op->getLoc(), op)))
        return failure();
    return success();
  }

  auto withRule = dyn_cast<ShardingRuleOpInterface>(op);
  if (!withRule) {
    opsWithoutRule.push_back(op);
    resultIds();
    return success();
  }
  std::vector<int> operands = operandIds(), results = resultIds();
  addOp(withRule.getShardingRule(), operands, results, describeOp(op), op);

  // Annotations written on the op itself, by a constraint or by a reshard.
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op))
    if (failed(
            annotate(results[0], constraint.getSharding(), op->getLoc(), op)))
      return failure();
  if (auto reshard = dyn_cast<ReshardOp>(op))
    if (failed(annotate(results[0], reshard.getSharding(), op->getLoc(), op)))
      return failure();
  if (Attribute attr = op->getAttr(PartitaDialect::kShardingAttrName)) {
    if (auto single = dyn_cast<ShardingAttr>(attr)) {
      if (failed(annotate(results[0], single, op->getLoc(), op)))
        return failure();
    } else if (auto list = dyn_cast<ArrayAttr>(attr)) {
      for (auto [index, entry] : llvm::enumerate(list))
        if (failed(annotate(results[index], cast<ShardingAttr>(entry),
                            op->getLoc(), op)))
          return failure();
    }
  }

  // Loop carries: initial value and yielded value both flow into the body
  // argument, the yielded value into the result.
  if (auto loop = dyn_cast<LoopOp>(op)) {
    Block &body = loop.getBody().front();
    tensorFor(body.getArgument(0), valueName(body.getArgument(0)));
    auto yield = cast<YieldOp>(body.getTerminator());
    std::string name = describeOp(op);
    for (auto [index, carried] : llvm::enumerate(loop.getCarried())) {
      int carriedId = tensorFor(carried, valueName(carried));
      // An accumulator only feeds sums (acc + x) and the yield: kept partial
      // through the loop, it is reduced once after it. A carry the body uses
      // otherwise (a residual stream feeding a norm) must stay whole.
      problem.tensors[carriedId].accumulator =
          llvm::all_of(carried.getUsers(), [](Operation *user) {
            return isa<AddOp, SubOp, YieldOp>(user);
          });
      int yieldedId = tensorFor(yield.getValues()[index],
                                valueName(yield.getValues()[index]));
      addEdge(operands[index], carriedId, name + " (entry)");
      addEdge(yieldedId, carriedId, name + " (back edge)");
      addEdge(yieldedId, results[index], name + " (exit)");
    }
  }
  return success();
}

/// Two closed annotations on one value must agree: the value's own
/// annotation and the sharding constraints that read it.
LogicalResult checkClosedAnnotations(ModuleOp module) {
  WalkResult walk = module.walk([&](ShardingConstraintOp constraint) {
    Value input = constraint.getInput();
    Sharding mine = constraint.getSharding().toSharding();
    auto disagrees = [&](const Sharding &other) {
      for (int d = 0; d < mine.rank() && d < other.rank(); ++d)
        if (!mine.dims[d].open && !other.dims[d].open &&
            mine.dims[d].axes != other.dims[d].axes)
          return true;
      return false;
    };
    for (Operation *user : input.getUsers()) {
      auto other = dyn_cast<ShardingConstraintOp>(user);
      if (!other || other == constraint ||
          !other->isBeforeInBlock(constraint) ||
          other->getBlock() != constraint->getBlock())
        continue;
      if (disagrees(other.getSharding().toSharding())) {
        constraint.emitError()
            << "sharding_constraint " << constraint.getSharding()
            << " disagrees with the constraint " << other.getSharding()
            << " at " << describeLocation(other.getLoc())
            << " on the same value";
        return WalkResult::interrupt();
      }
    }
    if (auto result = dyn_cast<OpResult>(input))
      if (auto own = result.getOwner()->getAttrOfType<ShardingAttr>(
              PartitaDialect::kShardingAttrName))
        if (disagrees(own.toSharding())) {
          constraint.emitError()
              << "sharding_constraint " << constraint.getSharding()
              << " disagrees with the annotation " << own << " at "
              << describeLocation(result.getOwner()->getLoc())
              << " on the same value";
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// A sharding with every dimension closed, as written after propagation.
ShardingAttr closedAttr(MLIRContext *context, FlatSymbolRefAttr mesh,
                        Sharding sharding, bool keepPriority) {
  for (DimSharding &dim : sharding.dims)
    dim.open = false;
  if (!keepPriority)
    sharding.priority.reset();
  return ShardingAttr::fromSharding(context, mesh, sharding);
}

struct PropagatePass : public partita::impl::PropagatePassBase<PropagatePass> {
  using PropagatePassBase::PropagatePassBase;
  PropagatePass(const PropagatePassOptions &options,
                std::shared_ptr<const Interconnect> links)
      : PropagatePassBase(options), links(std::move(links)) {}

  /// The interconnect given as a value, if any (else interconnectFile).
  std::shared_ptr<const Interconnect> links;

  void runOnOperation() override;

  /// Warnings (errors with strict) for what the user probably did not want,
  /// each once: a tensor annotated as sharded that an op needs fully
  /// replicated (unless it is model state, which FSDP and ZeRO shard to
  /// gather at each use; the report lists those gathers), and shardings
  /// that do not divide a dimension (the partitioner pads).
  LogicalResult reportUnwantedMoves(const GraphBuilder &graph,
                                    const PropagationResult &result) {
    bool failedStrict = false;
    auto report = [&](Operation *op) {
      InFlightDiagnostic diag = strict ? op->emitError() : op->emitWarning();
      failedStrict |= strict;
      return diag;
    };
    const Mesh &mesh = graph.problem.mesh;
    llvm::DenseSet<int> warned;
    for (auto [index, op] : llvm::enumerate(graph.opOf)) {
      if (!op)
        continue;
      const PropagationOp &node = graph.problem.ops[index];
      for (auto [slot, tensor] : llvm::enumerate(node.operands)) {
        const PropagationTensor &input = graph.problem.tensors[tensor];
        if (!input.annotated || result.shardings[tensor].dimAxes().empty() ||
            graph.modelState.contains(tensor) || warned.contains(tensor))
          continue;
        Sharding required = shardingUnderAssignment(
            node.rule.operands[slot], result.decisions[index].factorAxes);
        if (!required.dimAxes().empty())
          continue;
        warned.insert(tensor);
        report(op) << "'" << input.name << "' is annotated as sharded ("
                   << result.shardings[tensor].toString() << "), but '"
                   << op->getName()
                   << "' needs it whole: it will be all-gathered"
                   << (strict ? " (--strict)" : "");
      }
      for (int tensor : node.results) {
        const PropagationTensor &output = graph.problem.tensors[tensor];
        const Sharding &sharding = result.shardings[tensor];
        for (int d = 0; d < sharding.rank(); ++d) {
          int64_t shards = numShards(mesh, sharding.dims[d]);
          if (shards <= 1 || output.shape[d] % shards == 0)
            continue;
          int64_t padded = (output.shape[d] + shards - 1) / shards * shards;
          double waste = static_cast<double>(padded - output.shape[d]) /
                         static_cast<double>(padded);
          if (waste <= maxPadding)
            continue;
          std::string fractions;
          llvm::raw_string_ostream(fractions)
              << llvm::format("%.1f%% padding, above --max-padding %g",
                              100 * waste, static_cast<double>(maxPadding));
          report(op) << "dimension " << d << " of size " << output.shape[d]
                     << " of '" << output.name << "' is split " << shards
                     << " ways and will be padded to " << padded << " ("
                     << fractions << ")" << (strict ? " (--strict)" : "");
        }
      }
    }
    return failure(failedStrict);
  }

  Attribute originAttr(const GraphBuilder &graph,
                       const PropagationResult &result, int tensor) {
    MLIRContext *context = &getContext();
    SmallVector<Attribute> dims;
    bool any = false;
    for (const DimOrigin &origin : result.origins[tensor]) {
      if (origin.viaOp < 0) {
        dims.push_back(DictionaryAttr::get(context));
        continue;
      }
      any = true;
      SmallVector<NamedAttribute> fields;
      auto add = [&](StringRef key, const std::string &value) {
        fields.push_back(NamedAttribute(StringAttr::get(context, key),
                                        StringAttr::get(context, value)));
      };
      if (origin.source >= 0)
        add("source", graph.problem.tensors[origin.source].name);
      add("via", graph.problem.ops[origin.viaOp].name);
      if (origin.fromTensor >= 0)
        add("from", graph.problem.tensors[origin.fromTensor].name);
      dims.push_back(DictionaryAttr::get(context, fields));
    }
    return any ? ArrayAttr::get(context, dims) : Attribute();
  }
};

void PropagatePass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  if (!(maxPadding >= 0 && maxPadding <= 1)) {
    // An option, not a place in the input: no location.
    mlir::emitError(UnknownLoc::get(context))
        << "max-padding must be a fraction in [0, 1], got " << maxPadding;
    return signalPassFailure();
  }
  if (failed(checkClosedAnnotations(module)))
    return signalPassFailure();

  GraphBuilder graph(module);
  if (failed(graph.build()))
    return signalPassFailure();
  for (Operation *op : graph.opsWithoutRule) {
    if (strict) {
      op->emitError()
          << "'" << op->getName()
          << "' has no sharding rule; its results would be replicated "
             "(--strict)";
      return signalPassFailure();
    }
    op->emitWarning()
        << "'" << op->getName()
        << "' has no sharding rule; its results are left replicated";
  }
  if (!graph.meshName)
    return; // Nothing annotated: nothing to propagate.
  MeshOp mesh = lookupMesh(module, graph.meshName);
  if (!mesh) {
    module.emitError() << "no partita.mesh named " << graph.meshName;
    return signalPassFailure();
  }
  graph.problem.mesh = mesh.getMesh().toMesh();
  if (links) {
    graph.problem.interconnect = *links;
  } else if (!interconnectFile.empty()) {
    Expected<Interconnect> interconnect = readInterconnect(interconnectFile);
    if (!interconnect) {
      module.emitError() << interconnect.status().message();
      return signalPassFailure();
    }
    graph.problem.interconnect = *interconnect;
  }

  Expected<PropagationResult> result = propagateShardings(graph.problem);
  if (!result) {
    module.emitError() << "propagation failed: " << result.status().message();
    return signalPassFailure();
  }

  if (failed(reportUnwantedMoves(graph, *result)))
    return signalPassFailure();

  auto attrFor = [&](int tensor) {
    const PropagationTensor &node = graph.problem.tensors[tensor];
    return closedAttr(context, graph.meshName, result->shardings[tensor],
                      node.annotated);
  };
  StringAttr shardingName =
      StringAttr::get(context, PartitaDialect::kShardingAttrName);
  StringAttr originName = StringAttr::get(context, kOriginAttrName);

  // Function arguments and results.
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    FunctionAttrEditor attrs(function);
    for (BlockArgument arg : function.getArguments()) {
      auto it = graph.tensorOf.find(arg);
      if (it == graph.tensorOf.end())
        continue;
      attrs.setArg(arg.getArgNumber(), shardingName, attrFor(it->second));
      if (Attribute origin = originAttr(graph, *result, it->second))
        attrs.setArg(arg.getArgNumber(), originName, origin);
    }
    for (auto [index, id] : llvm::enumerate(graph.functionResults[function])) {
      // A result that is an argument's new value has the argument's layout
      // whatever propagation preferred (the edge between them is only a
      // preference): the runtime updates the argument in place, so the
      // partitioner reshards the value there if it must.
      int layoutOf = id;
      if (auto aliases = function.getResultAttrOfType<IntegerAttr>(
              index, PartitaDialect::kAliasesAttrName)) {
        auto arg = graph.tensorOf.find(function.getArgument(aliases.getInt()));
        if (arg != graph.tensorOf.end())
          layoutOf = arg->second;
      }
      attrs.setResult(index, shardingName, attrFor(layoutOf));
      if (Attribute origin = originAttr(graph, *result, id))
        attrs.setResult(index, originName, origin);
    }
  }

  // Op results, and conflict reports.
  for (auto [index, op] : llvm::enumerate(graph.opOf)) {
    if (!op)
      continue;
    const PropagationOp &node = graph.problem.ops[index];
    if (isa<ShardingConstraintOp, ReshardOp>(op) == false) {
      SmallVector<Attribute> shardings, origins;
      bool anyOrigin = false;
      for (int id : node.results) {
        shardings.push_back(attrFor(id));
        Attribute origin = originAttr(graph, *result, id);
        anyOrigin |= bool(origin);
        origins.push_back(origin ? origin : ArrayAttr::get(context, {}));
      }
      if (shardings.size() == 1)
        op->setAttr(shardingName, shardings.front());
      else if (!shardings.empty())
        op->setAttr(shardingName, ArrayAttr::get(context, shardings));
      if (anyOrigin)
        op->setAttr(originName, ArrayAttr::get(context, origins));
    }
    const OpDecision &decision = result->decisions[index];
    if (reportConflicts && !decision.options.empty()) {
      InFlightDiagnostic remark = op->emitRemark();
      remark << "shardings disagree; rule " << node.rule.toString()
             << "; options by estimated reshard time:";
      for (auto [text, cost] : decision.options) {
        std::string figure;
        llvm::raw_string_ostream(figure) << llvm::format("%.3f", cost);
        remark << " " << text << " " << figure << " us"
               << (text == decision.options.front().first ? " (chosen);" : ";");
      }
    }
  }
}

} // namespace

std::unique_ptr<mlir::Pass>
partita::createPropagatePass(const PropagatePassOptions &options,
                             std::shared_ptr<const Interconnect> links) {
  return std::make_unique<PropagatePass>(options, std::move(links));
}
