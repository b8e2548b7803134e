//===- StagePrograms.cpp - A stage's forward, backward and update ---------===//
//
// A schedule runs a stage's forward pass for a micro-batch long before its
// backward pass, so the two must be separate programs with what the forward
// pass saves in between. Both are sliced out of one gradient function: the
// stage's function with its outputs dotted with their cotangents
// (L = sum_j <y_j, dy_j>, whose gradient is the vector-Jacobian product)
// is differentiated as any loss; the ops its outputs need form the forward
// program, the rest the backward program, and the forward values the
// backward ops read are the saved activations. For zero-bubble schedules
// the backward ops the input gradients do not need (weight gradients) form
// a third program. With activation checkpointing the gradient recomputes
// the forward values behind an optimization barrier, so the backward slice
// holds the recomputation and the forward pass saves only the barrier's
// inputs (each layer's input, or nothing beyond the stage's own inputs).
// See docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "StageFunctions.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace partita;
using namespace partita::pipelining;

namespace {

RankedTensorType scalarOf(Type element) {
  return RankedTensorType::get({}, element);
}

/// sum(x * y) over every element, as an f32 scalar.
Value dot(OpBuilder &b, Location loc, Value x, Value y) {
  auto type = cast<RankedTensorType>(x.getType());
  Value product = b.create<MulOp>(loc, type, x, y);
  Value sum = product;
  if (type.getRank() > 0) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(d);
    sum = b.create<ReduceOp>(loc, scalarOf(type.getElementType()),
                             ReductionKind::Sum, product, dims);
  }
  if (!type.getElementType().isF32())
    sum = b.create<ConvertOp>(loc, scalarOf(b.getF32Type()), sum);
  return sum;
}

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// The top-level ops of a function body that compute `roots`, reading the
/// results of `stopAt` ops (and block arguments) as given; copied ops are
/// always recomputed. `inputs` receives what the slice reads, in order.
struct Slice {
  std::vector<Operation *> ops;
  std::vector<Value> inputs;
};

Slice sliceFor(Block &body, ArrayRef<Value> roots,
               const llvm::DenseSet<Operation *> &stopAt) {
  llvm::DenseSet<Value> needed(roots.begin(), roots.end());
  Slice slice;
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseSet<Value> boundary;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Operation *op = *it;
    bool wanted = llvm::any_of(op->getResults(),
                               [&](Value r) { return needed.count(r); });
    if (!wanted)
      continue;
    if (stopAt.count(op) && !isCopiedIntoStages(op)) {
      for (Value r : op->getResults())
        if (needed.count(r))
          boundary.insert(r);
      continue;
    }
    slice.ops.push_back(op);
    for (Value value : valuesUsedBy(op))
      needed.insert(value);
  }
  std::reverse(slice.ops.begin(), slice.ops.end());
  for (BlockArgument arg : body.getArguments())
    if (needed.count(arg))
      slice.inputs.push_back(arg);
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (boundary.count(r))
        slice.inputs.push_back(r);
  return slice;
}

/// What extractFunction calls, before the return, to compute further
/// results from the extra arguments.
using FinishFn = std::function<void(OpBuilder &, ValueRange extra,
                                    SmallVector<Value> &results)>;

/// A function made of `slice`'s ops returning `outputs`; its arguments are
/// the slice's inputs then `extraArgs` (which `finish` may use to compute
/// further results).
func::FuncOp
extractFunction(OpBuilder &builder, Location loc, const std::string &name,
                const Slice &slice, ArrayRef<Value> outputs,
                ArrayRef<DictionaryAttr> inputAttrs, ArrayRef<Type> extraArgs,
                ArrayRef<DictionaryAttr> extraAttrs, const FinishFn &finish) {
  SmallVector<Type> argTypes;
  for (Value input : slice.inputs)
    argTypes.push_back(input.getType());
  llvm::append_range(argTypes, extraArgs);
  auto function = builder.create<func::FuncOp>(
      loc, name, builder.getFunctionType(argTypes, {}));
  Block *entry = function.addEntryBlock();
  IRMapping map;
  for (size_t a = 0; a < slice.inputs.size(); ++a) {
    map.map(slice.inputs[a], entry->getArgument(a));
    if (inputAttrs[a])
      function.setArgAttrs(a, inputAttrs[a]);
  }
  for (size_t a = 0; a < extraAttrs.size(); ++a)
    function.setArgAttrs(slice.inputs.size() + a, extraAttrs[a]);
  OpBuilder inside = OpBuilder::atBlockEnd(entry);
  for (Operation *op : slice.ops)
    inside.clone(*op, map);
  SmallVector<Value> results;
  for (Value output : outputs)
    results.push_back(map.lookupOrDefault(output));
  if (finish)
    finish(inside, entry->getArguments().drop_front(slice.inputs.size()),
           results);
  inside.create<func::ReturnOp>(loc, results);
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  function.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  return function;
}

/// `total + term`, or `term` when there is no total yet.
Value addTerm(OpBuilder &b, Location loc, Value total, Value term) {
  return total ? b.create<AddOp>(loc, term.getType(), total, term).getResult()
               : term;
}

/// The number of the loss's argument `lossArg` among its data arguments
/// (the step's data): the arguments before it that are not parameters.
int32_t dataIndex(func::FuncOp loss, unsigned lossArg) {
  int32_t index = 0;
  for (unsigned b = 0; b < lossArg; ++b) {
    auto role =
        loss.getArgAttrOfType<RoleAttr>(b, PartitaDialect::kRoleAttrName);
    index += !(role && role.getValue() == Role::Param);
  }
  return index;
}

/// A `finish` for extractFunction: adds the accumulators (the extra
/// arguments) to the gradients among the results from `firstGradient` on.
FinishFn accumulateInto(Location loc, size_t firstGradient) {
  return [=](OpBuilder &at, ValueRange extra, SmallVector<Value> &out) {
    for (size_t p = 0; p < extra.size(); ++p) {
      Value sum = at.create<AddOp>(loc, extra[p].getType(), extra[p],
                                   out[firstGradient + p]);
      out[firstGradient + p] = sum;
    }
  };
}

/// Builds one stage's programs (buildStagePrograms): the cotangent loss
/// and its gradient, the slices of the gradient, and the forward,
/// backward, weight-gradient and update functions made of them.
class StageProgramBuilder {
public:
  StageProgramBuilder(func::FuncOp loss,
                      const std::vector<StageFunction> &stages, int s,
                      bool splitBackward, const TrainStepOptions &optimizer);

  /// Builds the stage's programs.
  Expected<StageProgramFunctions> build();

private:
  /// Who uses each of this stage's results: (stage, received argument),
  /// into cotangentSources and cotangentOf.
  void findCotangentUses();
  /// The cotangent loss: f's arguments, then one cotangent per use of a
  /// result (the last stage: the seed), returning L then f's results.
  func::FuncOp buildCotangentLoss();
  /// L = sum_j <y_j, dy_j> at `at`, adding the cotangents dy_j (the last
  /// stage: the seed) as arguments of `hBody`; zero without any.
  Value cotangentTotal(OpBuilder &at, Block &hBody, ArrayRef<Value> ys);
  /// The cotangent loss's argument attributes: f's, then the logical axes
  /// of the values the cotangents belong to (the seed: none).
  SmallVector<DictionaryAttr> cotangentLossArgAttrs(ArrayRef<Value> ys);
  /// Differentiates the cotangent loss into `g` and splits its results
  /// into dParams, dReceived and forwardOutputs.
  Status differentiate();
  /// Slices `g`: forward, then backward (input gradients, and the weight
  /// gradients unless they are split off), then weight gradients.
  Status sliceGradient();
  /// What the forward pass saves: its values the later slices read.
  void findSaved(const llvm::DenseSet<Operation *> &forwardOps);
  /// Where an input of a slice comes from.
  StageInput sourceOf(Value input);
  /// Where argument `a` of `g` comes from.
  StageInput argumentSource(size_t a);
  /// The attributes of a slice's input as a program's argument.
  DictionaryAttr attrsOf(Value input);
  /// The attributes of each of `slice`'s inputs.
  SmallVector<DictionaryAttr> inputAttrs(const Slice &slice);
  /// Parameter `p`'s logical axes (if any) and the role `role`.
  DictionaryAttr paramAttrsWithRole(size_t p, Role role);
  /// Builds the forward program and its inputs.
  void buildForward(StageProgramFunctions &programs);
  /// Builds the backward program and, when split off, the weight-gradient
  /// program, both with their inputs and accumulators.
  void buildBackward(StageProgramFunctions &programs);
  /// The accumulators' result index of each of `outputs` results: the
  /// parameters' gradients from `firstGradient` on, -1 elsewhere.
  std::vector<int32_t> accumulatorIndices(size_t firstGradient, size_t outputs);
  /// Appends one accumulator input per parameter to `inputs`.
  void accumulatorInputs(std::vector<StageInput> &inputs);
  /// The loss of the update: sum(param * gradient sum), whose gradient is
  /// the accumulated one.
  func::FuncOp buildUpdateLoss();
  /// Builds the update: the train-step builder's optimizer on the update
  /// loss; under clipping also the norm program, the stage's part of ||g||²
  /// (the update then takes the whole model's as its last input).
  Status buildUpdate(StageProgramFunctions &programs);
  /// The norm program: the gradient sums in, Σ g² (f32) out.
  func::FuncOp buildNorm();

  func::FuncOp loss;
  const std::vector<StageFunction> &stages;
  const StageFunction &stage;
  int s;
  bool splitBackward;
  const TrainStepOptions &optimizer;
  func::FuncOp f;
  MLIRContext *context;
  Location loc;
  OpBuilder builder;
  bool last;
  size_t numParams, numData, numArgs;
  std::string base;

  std::vector<std::pair<int, int>> cotangentSources;
  std::vector<int> cotangentOf;
  /// The gradient function and its results.
  func::FuncOp g;
  SmallVector<Value> dParams, dReceived, forwardOutputs;
  Slice forward, backward, weightGrad;
  llvm::SetVector<Value> saved, savedByBackward;
};

StageProgramBuilder::StageProgramBuilder(
    func::FuncOp loss, const std::vector<StageFunction> &stages, int s,
    bool splitBackward, const TrainStepOptions &optimizer)
    : loss(loss), stages(stages), stage(stages[s]), s(s),
      splitBackward(splitBackward), optimizer(optimizer), f(stage.function),
      context(f.getContext()), loc(f.getLoc()), builder(context),
      last(s + 1 == static_cast<int>(stages.size())),
      numParams(stage.paramArgs.size()), numData(stage.dataArgs.size()),
      numArgs(f.getNumArguments()), base(f.getSymName().str()) {
  builder.setInsertionPointAfter(f);
}

Expected<StageProgramFunctions> StageProgramBuilder::build() {
  findCotangentUses();
  if (Status status = differentiate(); !status.ok())
    return status;
  if (Status status = sliceGradient(); !status.ok())
    return status;

  StageProgramFunctions programs;
  builder.setInsertionPointAfter(g);
  buildForward(programs);
  buildBackward(programs);
  if (numParams == 0) {
    g.erase();
    return programs;
  }
  if (Status status = buildUpdate(programs); !status.ok())
    return status;
  g.erase();
  return programs;
}

void StageProgramBuilder::findCotangentUses() {
  if (last)
    return;
  for (int c = s + 1; c < static_cast<int>(stages.size()); ++c) {
    const StageFunction &consumer = stages[c];
    int floatReceived = 0;
    for (size_t r = 0; r < consumer.received.size(); ++r) {
      unsigned arg = consumer.paramArgs.size() + consumer.dataArgs.size() + r;
      func::FuncOp consumerFunction = consumer.function;
      if (!isFloatTensor(consumerFunction.getArgument(arg).getType()))
        continue;
      if (consumer.received[r].first == s) {
        cotangentSources.emplace_back(c, floatReceived);
        cotangentOf.push_back(consumer.received[r].second);
      }
      ++floatReceived;
    }
  }
}

func::FuncOp StageProgramBuilder::buildCotangentLoss() {
  auto h = cast<func::FuncOp>(f->clone());
  h.setSymName((f.getSymName() + "_vjp").str());
  builder.insert(h);
  Block &hBody = h.getBody().front();
  auto hReturn = cast<func::ReturnOp>(hBody.getTerminator());
  SmallVector<Value> ys(hReturn.getOperands());
  OpBuilder at(hReturn);
  SmallVector<Value> results = {cotangentTotal(at, hBody, ys)};
  llvm::append_range(results, ys);
  at.create<func::ReturnOp>(loc, results);
  hReturn.erase();
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  h.setFunctionType(builder.getFunctionType(hBody.getArgumentTypes(), types));
  h.setAllArgAttrs(cotangentLossArgAttrs(ys));
  return h;
}

Value StageProgramBuilder::cotangentTotal(OpBuilder &at, Block &hBody,
                                          ArrayRef<Value> ys) {
  Value total;
  if (last) {
    Value seed = hBody.addArgument(ys[0].getType(), loc);
    total = addTerm(at, loc, total, dot(at, loc, ys[0], seed));
  } else {
    for (int j : cotangentOf) {
      Value dy = hBody.addArgument(ys[j].getType(), loc);
      total = addTerm(at, loc, total, dot(at, loc, ys[j], dy));
    }
  }
  if (!total)
    total = at.create<ConstantOp>(
        loc, scalarOf(at.getF32Type()),
        DenseElementsAttr::get(scalarOf(at.getF32Type()), 0.0f));
  return total;
}

SmallVector<DictionaryAttr>
StageProgramBuilder::cotangentLossArgAttrs(ArrayRef<Value> ys) {
  SmallVector<DictionaryAttr> argAttrs;
  for (size_t a = 0; a < numArgs; ++a) {
    DictionaryAttr attrs = f.getArgAttrDict(a);
    argAttrs.push_back(attrs ? attrs : builder.getDictionaryAttr({}));
  }
  // The cotangents take the logical axes of the values they belong to.
  for (int j : cotangentOf) {
    ArrayAttr axes;
    if (auto constraint = ys[j].getDefiningOp<LogicalConstraintOp>())
      axes = constraint.getAxesAttr();
    argAttrs.push_back(axes ? builder.getDictionaryAttr(builder.getNamedAttr(
                                  PartitaDialect::kLogicalAxesAttrName, axes))
                            : builder.getDictionaryAttr({}));
  }
  if (last)
    argAttrs.push_back(builder.getDictionaryAttr({}));
  return argAttrs;
}

Status StageProgramBuilder::differentiate() {
  func::FuncOp h = buildCotangentLoss();
  std::vector<unsigned> wrt;
  for (size_t a = 0; a < numParams; ++a)
    wrt.push_back(a);
  for (size_t a = numParams + numData; a < numArgs; ++a)
    if (isFloatTensor(f.getArgument(a).getType()))
      wrt.push_back(a);
  Expected<func::FuncOp> gradient = buildGradient(
      h, wrt, (f.getSymName() + "_grad").str(), optimizer.remat, true);
  h.erase();
  if (!gradient)
    return gradient.status();
  g = *gradient;
  ValueRange results = g.getBody().front().getTerminator()->getOperands();
  dParams.assign(results.begin() + 1, results.begin() + 1 + numParams);
  dReceived.assign(results.begin() + 1 + numParams,
                   results.begin() + 1 + wrt.size());
  forwardOutputs.assign(results.begin() + 1 + wrt.size(), results.end());
  return Status::success();
}

Status StageProgramBuilder::sliceGradient() {
  Block &body = g.getBody().front();
  forward = sliceFor(body, forwardOutputs, {});
  llvm::DenseSet<Operation *> forwardOps(forward.ops.begin(),
                                         forward.ops.end());
  for (Value input : forward.inputs)
    if (auto arg = dyn_cast<BlockArgument>(input))
      if (arg.getArgNumber() >= numArgs)
        return Status::error("internal error: the forward pass of stage " +
                             std::to_string(s) + " reads a cotangent");
  SmallVector<Value> backwardRoots(dReceived);
  if (!splitBackward)
    llvm::append_range(backwardRoots, dParams);
  backward = sliceFor(body, backwardRoots, forwardOps);
  llvm::DenseSet<Operation *> beforeWeights = forwardOps;
  beforeWeights.insert(backward.ops.begin(), backward.ops.end());
  if (splitBackward)
    weightGrad = sliceFor(body, dParams, beforeWeights);
  findSaved(forwardOps);
  return Status::success();
}

void StageProgramBuilder::findSaved(
    const llvm::DenseSet<Operation *> &forwardOps) {
  for (const Slice *later : {&backward, &weightGrad})
    for (Value input : later->inputs)
      if (auto result = dyn_cast<OpResult>(input)) {
        if (forwardOps.count(result.getOwner()))
          saved.insert(input);
        else if (later == &weightGrad)
          savedByBackward.insert(input);
      }
}

StageInput StageProgramBuilder::sourceOf(Value input) {
  if (auto arg = dyn_cast<BlockArgument>(input))
    return argumentSource(arg.getArgNumber());
  StageInput source;
  source.kind = StageInput::Kind::Output;
  source.stage = s;
  if (saved.count(input)) {
    source.program = StageProgramKind::Forward;
    source.index = static_cast<int32_t>(
        forwardOutputs.size() + (llvm::find(saved, input) - saved.begin()));
  } else {
    source.program = StageProgramKind::Backward;
    source.index = static_cast<int32_t>(
        dReceived.size() +
        (llvm::find(savedByBackward, input) - savedByBackward.begin()));
  }
  return source;
}

StageInput StageProgramBuilder::argumentSource(size_t a) {
  StageInput source;
  if (a < numParams) {
    source.kind = StageInput::Kind::Param;
    source.index = static_cast<int32_t>(a);
  } else if (a < numParams + numData) {
    // Numbered among the loss's data arguments (the step's data).
    source.kind = StageInput::Kind::Data;
    source.index = dataIndex(loss, stage.dataArgs[a - numParams]);
  } else if (a < numArgs) {
    auto [from, output] = stage.received[a - numParams - numData];
    source.kind = StageInput::Kind::Output;
    source.stage = from;
    source.program = StageProgramKind::Forward;
    source.index = output;
  } else if (last) {
    source.kind = StageInput::Kind::Seed;
  } else {
    auto [consumer, gradientIndex] = cotangentSources[a - numArgs];
    source.kind = StageInput::Kind::Output;
    source.stage = consumer;
    source.program = StageProgramKind::Backward;
    source.index = gradientIndex;
  }
  return source;
}

DictionaryAttr StageProgramBuilder::attrsOf(Value input) {
  if (auto arg = dyn_cast<BlockArgument>(input))
    return g.getArgAttrDict(arg.getArgNumber());
  if (auto constraint = input.getDefiningOp<LogicalConstraintOp>())
    return builder.getDictionaryAttr(builder.getNamedAttr(
        PartitaDialect::kLogicalAxesAttrName, constraint.getAxesAttr()));
  return DictionaryAttr();
}

SmallVector<DictionaryAttr>
StageProgramBuilder::inputAttrs(const Slice &slice) {
  SmallVector<DictionaryAttr> attrs;
  for (Value input : slice.inputs)
    attrs.push_back(attrsOf(input));
  return attrs;
}

DictionaryAttr StageProgramBuilder::paramAttrsWithRole(size_t p, Role role) {
  SmallVector<NamedAttribute> attrs;
  if (auto axes = g.getArgAttr(p, PartitaDialect::kLogicalAxesAttrName))
    attrs.push_back(
        builder.getNamedAttr(PartitaDialect::kLogicalAxesAttrName, axes));
  attrs.push_back(builder.getNamedAttr(PartitaDialect::kRoleAttrName,
                                       RoleAttr::get(context, role)));
  return builder.getDictionaryAttr(attrs);
}

void StageProgramBuilder::buildForward(StageProgramFunctions &programs) {
  SmallVector<Value> forwardResults(forwardOutputs);
  llvm::append_range(forwardResults, saved);
  programs.forward =
      extractFunction(builder, loc, base + "_forward", forward, forwardResults,
                      inputAttrs(forward), {}, {}, nullptr);
  for (Value input : forward.inputs)
    programs.forwardInputs.push_back(sourceOf(input));
}

void StageProgramBuilder::buildBackward(StageProgramFunctions &programs) {
  // The accumulators: one per parameter, the gradient buffers of the step.
  SmallVector<Type> accumulatorTypes;
  SmallVector<DictionaryAttr> accumulatorAttrs;
  for (size_t p = 0; p < numParams; ++p) {
    accumulatorTypes.push_back(g.getArgument(p).getType());
    accumulatorAttrs.push_back(paramAttrsWithRole(p, Role::Grad));
  }

  SmallVector<Value> backwardResults(dReceived);
  if (splitBackward) {
    llvm::append_range(backwardResults, savedByBackward);
    programs.backward = extractFunction(
        builder, loc, base + "_backward", backward, backwardResults,
        inputAttrs(backward), {}, {}, nullptr);
    programs.backwardAccumulators.assign(backwardResults.size(), -1);
    programs.weightGrad =
        extractFunction(builder, loc, base + "_weight_grad", weightGrad,
                        dParams, inputAttrs(weightGrad), accumulatorTypes,
                        accumulatorAttrs, accumulateInto(loc, 0));
    for (Value input : weightGrad.inputs)
      programs.weightGradInputs.push_back(sourceOf(input));
    accumulatorInputs(programs.weightGradInputs);
    programs.weightGradAccumulators = accumulatorIndices(0, numParams);
  } else {
    llvm::append_range(backwardResults, dParams);
    programs.backward = extractFunction(
        builder, loc, base + "_backward", backward, backwardResults,
        inputAttrs(backward), accumulatorTypes, accumulatorAttrs,
        accumulateInto(loc, dReceived.size()));
    programs.backwardAccumulators =
        accumulatorIndices(dReceived.size(), backwardResults.size());
  }
  for (Value input : backward.inputs)
    programs.backwardInputs.push_back(sourceOf(input));
  if (!splitBackward)
    accumulatorInputs(programs.backwardInputs);
  programs.hasBackward = !backwardResults.empty();
}

std::vector<int32_t>
StageProgramBuilder::accumulatorIndices(size_t firstGradient, size_t outputs) {
  std::vector<int32_t> indices(outputs, -1);
  for (size_t p = 0; p < numParams; ++p)
    indices[firstGradient + p] = static_cast<int32_t>(p);
  return indices;
}

void StageProgramBuilder::accumulatorInputs(std::vector<StageInput> &inputs) {
  for (size_t p = 0; p < numParams; ++p) {
    StageInput source;
    source.kind = StageInput::Kind::Accumulator;
    source.index = static_cast<int32_t>(p);
    inputs.push_back(source);
  }
}

func::FuncOp StageProgramBuilder::buildUpdateLoss() {
  SmallVector<Type> updateArgs;
  for (size_t p = 0; p < numParams; ++p)
    updateArgs.push_back(g.getArgument(p).getType());
  for (size_t p = 0; p < numParams; ++p)
    updateArgs.push_back(g.getArgument(p).getType());
  auto updateLoss = builder.create<func::FuncOp>(
      loc, base + "_update_loss",
      builder.getFunctionType(updateArgs, {scalarOf(builder.getF32Type())}));
  for (size_t p = 0; p < numParams; ++p) {
    updateLoss.setArgAttrs(p, g.getArgAttrDict(p));
    updateLoss.setArgAttrs(numParams + p, paramAttrsWithRole(p, Role::Input));
  }
  Block *entry = updateLoss.addEntryBlock();
  OpBuilder at = OpBuilder::atBlockEnd(entry);
  Value total;
  for (size_t p = 0; p < numParams; ++p) {
    Value term =
        dot(at, loc, entry->getArgument(p), entry->getArgument(numParams + p));
    total = addTerm(at, loc, total, term);
  }
  at.create<func::ReturnOp>(loc, total);
  return updateLoss;
}

Status StageProgramBuilder::buildUpdate(StageProgramFunctions &programs) {
  func::FuncOp updateLoss = buildUpdateLoss();
  TrainStepOptions update = optimizer;
  update.microBatches = 1;
  update.remat = Remat::None;
  update.normInput = optimizer.clipNorm > 0;
  Expected<func::FuncOp> updateStep =
      buildTrainStep(updateLoss, update, base + "_update");
  if (!updateStep)
    return updateStep.status();
  programs.update = *updateStep;
  if (update.normInput)
    programs.norm = buildNorm();
  return Status::success();
}

func::FuncOp StageProgramBuilder::buildNorm() {
  // The arguments are the update's gradient inputs: the same types and
  // attributes, so the accumulators pass as the devices hold them.
  SmallVector<Type> types;
  for (size_t p = 0; p < numParams; ++p)
    types.push_back(g.getArgument(p).getType());
  auto norm = builder.create<func::FuncOp>(
      loc, base + "_norm",
      builder.getFunctionType(types, {scalarOf(builder.getF32Type())}));
  for (size_t p = 0; p < numParams; ++p)
    norm.setArgAttrs(p, paramAttrsWithRole(p, Role::Input));
  Block *entry = norm.addEntryBlock();
  OpBuilder at = OpBuilder::atBlockEnd(entry);
  at.create<func::ReturnOp>(
      loc, sumOfSquares(at, loc, ValueRange(entry->getArguments())));
  return norm;
}

} // namespace

namespace partita::pipelining {

Expected<StageProgramFunctions>
buildStagePrograms(func::FuncOp loss, const std::vector<StageFunction> &stages,
                   int s, bool splitBackward,
                   const TrainStepOptions &optimizer) {
  return StageProgramBuilder(loss, stages, s, splitBackward, optimizer).build();
}

} // namespace partita::pipelining
