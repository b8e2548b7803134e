//===- TrainStep.cpp - A loss function's training step --------------------===//
//
// The train step is the gradient function (Autodiff.cpp) followed by the
// optimizer's update — SGD with momentum or AdamW, optionally with f32
// master weights for bf16 parameters and gradient accumulation over
// micro-batches — with parameters, optimizer state and gradient buffers as
// donated arguments the step returns updated (docs/Autodiff.md).
//
// One function per concern: the step's signature, running forward and
// backward (over micro-batches when accumulating), moving the gradients
// into their buffers' layout, each optimizer's update, and the results.
//
//===----------------------------------------------------------------------===//

#include "AutodiffEmitter.h"
#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Transforms/Autodiff.h"
#include "partita/Transforms/LogicalRules.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include <cmath>

using namespace mlir;
using namespace partita;
using namespace partita::autodiff;

namespace {

/// Builds one train step from a loss function and its gradient function.
/// The step's arguments are, in order: parameters, gradient buffers,
/// optimizer state (`moments` groups of one per parameter), the loss's
/// other arguments, the step number (AdamW) and the learning rate (unless
/// constant).
class TrainStepBuilder {
public:
  TrainStepBuilder(func::FuncOp loss, const TrainStepOptions &options)
      : loss(loss), options(options), adam(options.optimizer == TrainOptimizer::AdamW),
        context(loss.getContext()), builder(context), loc(loss.getLoc()),
        moments((adam ? 2 : 1) + (options.mixedPrecision ? 1 : 0)),
        first(options.mixedPrecision ? 1 : 0),
        lrInput(options.learningRate <= 0) {}

  /// Checks the optimizer and the loss's arguments, and sorts them into
  /// trained parameters and the others.
  Status classifyArguments();

  /// Builds the step `name` after `gradient`, which it then erases.
  Expected<func::FuncOp> build(func::FuncOp gradient, const std::string &name);

  /// The arguments with role `param` that are trained.
  std::vector<unsigned> params;

private:
  /// The step's argument types and attributes.
  struct Signature {
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
  };

  /// The step's signature; fails when micro-batches cannot be formed.
  Expected<Signature> signature();
  /// Runs the gradient function's body at `at` with `data` for the loss's
  /// other arguments; returns (loss, gradients).
  SmallVector<Value> forwardBackward(OpBuilder &at, ValueRange data);
  /// One loop over the micro-batches of `data`, summing the loss and the
  /// gradients in its carries, then averaged; returns (loss, gradients).
  SmallVector<Value> accumulateMicroBatches(ValueRange data);
  /// Moves each gradient into its buffer's layout.
  void reduceGradients(SmallVector<Value> &gradients);
  /// Scales every gradient by min(1, clipNorm / global norm).
  void clipByGlobalNorm(SmallVector<Value> &gradients);
  /// The gradient of parameter `p` in the optimizer state's layout and
  /// `param`'s element type.
  Value optimizerGradient(size_t p, Value gradient, Value param);
  /// SGD with momentum: the updated `param`; pushes the new momentum.
  Value sgd(size_t p, Value param, Value g, Value rate);
  /// AdamW: the updated `param`; pushes the new moments.
  Value adamw(size_t p, Value param, Value g, Value rate);
  /// Writes the return, the function type and the argument and result
  /// attributes of the step.
  void finish(Value lossValue, ArrayRef<Value> gradients,
              const Signature &signature);

  RankedTensorType masterType(unsigned i) {
    RankedTensorType type = tensorTypeOf(loss.getArgument(i));
    return options.mixedPrecision
               ? RankedTensorType::get(type.getShape(), builder.getF32Type())
               : type;
  }
  Value paramArg(size_t p) { return body->getArgument(p); }
  /// AdamW's bias correction counts steps, and mixed precision starts its
  /// master weights from the parameters at step 0.
  bool takesStep() const { return adam || options.mixedPrecision; }
  bool takesNorm() const { return options.clipNorm > 0 && options.normInput; }
  Value stateArg(unsigned m, size_t p) {
    return body->getArgument(params.size() * (2 + m) + p);
  }
  Emitter emitter() { return Emitter{builder, loc}; }

  func::FuncOp loss;
  const TrainStepOptions &options;
  bool adam;
  MLIRContext *context;
  OpBuilder builder;
  Location loc;
  /// Optimizer state groups, and which of them is the first moment.
  unsigned moments, first;
  bool lrInput;
  std::vector<unsigned> others;
  /// The `batch` dimension of each loss argument (-1: none).
  std::vector<int64_t> batchDim;

  Block *body = nullptr;
  Block *gradBody = nullptr;
  SmallVector<Value> dataArgs;
  Value stepNumber, lr, normSquared;
  /// AdamW's bias corrections 1 - beta^t, scalars of each compute type,
  /// computed once for every parameter.
  llvm::DenseMap<Type, std::pair<Value, Value>> corrections;
  std::pair<Value, Value> correctionsFor(Type element);
  SmallVector<Value> newParams, newState[3];
};

Status TrainStepBuilder::classifyArguments() {
  if (options.optimizer == TrainOptimizer::None)
    return Status::error("a train step needs an optimizer (adamw or sgd)");
  for (unsigned i = 0; i < loss.getNumArguments(); ++i) {
    auto role = loss.getArgAttrOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName);
    if (role && role.getValue() == Role::Param && isFloatTensor(loss.getArgument(i)))
      params.push_back(i);
    else
      others.push_back(i);
  }
  if (params.empty())
    return Status::error("@" + loss.getSymName().str() +
                         " has no argument with role param to train");
  if (options.mixedPrecision)
    for (unsigned i : params)
      if (!tensorTypeOf(loss.getArgument(i)).getElementType().isBF16())
        return Status::error("mixed precision needs bf16 parameters; "
                             "argument " + std::to_string(i) + " of @" +
                             loss.getSymName().str() + " is not bf16");
  return Status::success();
}

Expected<TrainStepBuilder::Signature> TrainStepBuilder::signature() {
  Signature s;
  auto attrsOf = [&](unsigned i) { return loss.getArgAttrDict(i); };
  auto withRole = [&](DictionaryAttr base, Role role, bool donated) {
    NamedAttrList list(base ? base : DictionaryAttr::get(context));
    list.set(PartitaDialect::kRoleAttrName, RoleAttr::get(context, role));
    list.erase(PartitaDialect::kShardingAttrName);
    if (donated)
      list.set(PartitaDialect::kDonatedAttrName, UnitAttr::get(context));
    return list.getDictionary(context);
  };
  if (options.microBatches < 1)
    return Status::error("the number of micro-batches must be at least 1");
  for (unsigned i : params) {
    s.types.push_back(loss.getArgument(i).getType());
    NamedAttrList list(attrsOf(i) ? attrsOf(i) : DictionaryAttr::get(context));
    list.set(PartitaDialect::kDonatedAttrName, UnitAttr::get(context));
    s.attrs.push_back(list.getDictionary(context));
  }
  // Gradient buffers: the loss's parameter type (bf16 under mixed
  // precision), their parameter's logical axes.
  for (unsigned i : params) {
    s.types.push_back(loss.getArgument(i).getType());
    s.attrs.push_back(withRole(attrsOf(i), Role::Grad, true));
  }
  // Optimizer state: with mixed precision the f32 master weights first,
  // then the moments (f32).
  for (unsigned m = 0; m < moments; ++m)
    for (unsigned i : params) {
      s.types.push_back(masterType(i));
      // The state shares its parameter's logical axes (the rules may shard
      // it apart by role), not its explicit sharding.
      s.attrs.push_back(withRole(attrsOf(i), Role::OptState, true));
    }
  // Inputs with a batch axis hold every micro-batch.
  batchDim.assign(loss.getNumArguments(), -1);
  for (unsigned i : others) {
    RankedTensorType type = tensorTypeOf(loss.getArgument(i));
    if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
            i, PartitaDialect::kLogicalAxesAttrName))
      for (auto [d, axis] : llvm::enumerate(axes))
        if (cast<StringAttr>(axis).getValue() == "batch")
          batchDim[i] = static_cast<int64_t>(d);
    if (options.microBatches > 1 && batchDim[i] >= 0) {
      Shape shape(type.getShape());
      shape[batchDim[i]] *= options.microBatches;
      type = RankedTensorType::get(shape, type.getElementType());
    }
    s.types.push_back(type);
    s.attrs.push_back(attrsOf(i) ? attrsOf(i) : DictionaryAttr::get(context));
  }
  if (options.microBatches > 1 &&
      llvm::none_of(others, [&](unsigned i) { return batchDim[i] >= 0; }))
    return Status::error("gradient accumulation needs inputs with a 'batch' "
                         "logical axis to split into micro-batches");
  auto scalar = [&](Type element) { return RankedTensorType::get({}, element); };
  auto inputRole = [&]() {
    NamedAttrList list;
    list.set(PartitaDialect::kRoleAttrName, RoleAttr::get(context, Role::Input));
    return list.getDictionary(context);
  };
  if (takesStep()) {
    s.types.push_back(scalar(builder.getI32Type()));
    s.attrs.push_back(inputRole());
  }
  if (lrInput) {
    s.types.push_back(scalar(builder.getF32Type()));
    s.attrs.push_back(inputRole());
  }
  if (takesNorm()) {
    s.types.push_back(scalar(builder.getF32Type()));
    s.attrs.push_back(inputRole());
  }
  return s;
}

SmallVector<Value> TrainStepBuilder::forwardBackward(OpBuilder &at,
                                                     ValueRange data) {
  IRMapping map;
  for (size_t p = 0; p < params.size(); ++p)
    map.map(gradBody->getArgument(params[p]), paramArg(p));
  for (size_t k = 0; k < others.size(); ++k)
    map.map(gradBody->getArgument(others[k]), data[k]);
  for (Operation &op : gradBody->without_terminator())
    at.clone(op, map);
  SmallVector<Value> results;
  for (Value value : gradBody->getTerminator()->getOperands())
    results.push_back(map.lookup(value));
  return results;
}

SmallVector<Value> TrainStepBuilder::accumulateMicroBatches(ValueRange data) {
  // The carries are accumulators, in the gradient's layout (below).
  Emitter e = emitter();
  int64_t count = options.microBatches;
  Operation *gradReturn = gradBody->getTerminator();
  SmallVector<Value> inits = {e.splat(0, gradReturn->getOperand(0).getType())};
  for (size_t p = 0; p < params.size(); ++p)
    inits.push_back(e.splat(0, gradReturn->getOperand(1 + p).getType()));
  auto [accumulate, loopBody] = e.loop(inits, count);
  Value micro = loopBody->getArgument(0);
  SmallVector<Value> sums(llvm::drop_begin(loopBody->getArguments()));
  OpBuilder inside = OpBuilder::atBlockEnd(loopBody);
  Emitter ie{inside, loc};
  Value zero = ie.splat(0, micro.getType());
  SmallVector<Value> slices;
  for (size_t k = 0; k < others.size(); ++k) {
    unsigned i = others[k];
    if (batchDim[i] < 0) {
      slices.push_back(data[k]);
      continue;
    }
    // Micro-batch j holds the examples j, j + M, j + 2M, ...: the batch
    // viewed as [B/M, M] keeps its data-parallel split on the major
    // dimension, so every device slices its own examples.
    Shape microShape(tensorTypeOf(loss.getArgument(i)).getShape());
    int64_t d = batchDim[i];
    Shape split(microShape);
    split.insert(split.begin() + d + 1, count);
    Value viewed = ie.reshape(data[k], split);
    Shape sizes(split);
    sizes[d + 1] = 1;
    SmallVector<Value> starts(sizes.size(), zero);
    starts[d + 1] = micro;
    slices.push_back(
        ie.reshape(ie.dynamicSlice(viewed, starts, sizes), microShape));
  }
  SmallVector<Value> results = forwardBackward(inside, slices);
  // Under ZeRO-2 and FSDP each micro-batch's gradient is reduce-scattered
  // into its split buffer before it is added (kGradAccumulatorRole); under
  // the other rules it stays a partial sum, reduced once after the loop.
  for (size_t p = 0; p < params.size(); ++p)
    if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
            params[p], PartitaDialect::kLogicalAxesAttrName))
      results[1 + p] = inside.create<LogicalConstraintOp>(
          NameLoc::get(inside.getStringAttr(
                           "micro-batch grad of " +
                           shortName(loss.getArgument(params[p]))),
                       loc),
          results[1 + p], axes, inside.getStringAttr(kGradAccumulatorRole));
  SmallVector<Value> yields;
  for (size_t r = 0; r < results.size(); ++r)
    yields.push_back(ie.add(sums[r], results[r]));
  inside.create<YieldOp>(loc, yields);
  SmallVector<Value> means;
  for (Value sum : accumulate.getResults())
    means.push_back(
        e.div(sum, e.splat(static_cast<double>(count), sum.getType())));
  return means;
}

void TrainStepBuilder::reduceGradients(SmallVector<Value> &gradients) {
  // One reduction per gradient (an all_reduce when the buffer is
  // replicated, a reduce_scatter when the rules split it), not one per
  // consumer in the optimizer.
  for (size_t p = 0; p < params.size(); ++p)
    if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
            params[p], PartitaDialect::kLogicalAxesAttrName))
      gradients[p] = builder.create<LogicalConstraintOp>(
          NameLoc::get(builder.getStringAttr(
                           "grad of " + shortName(loss.getArgument(params[p]))),
                       loc),
          gradients[p], axes, builder.getStringAttr("grad"));
}

Value TrainStepBuilder::optimizerGradient(size_t p, Value gradient,
                                          Value param) {
  // The update runs in the optimizer state's layout: the gradient moves
  // there once (under zero1, a reduce-scatter of the unreduced buffer).
  Value g = gradient;
  if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
          params[p], PartitaDialect::kLogicalAxesAttrName))
    g = builder.create<LogicalConstraintOp>(loc, g, axes,
                                            builder.getStringAttr("opt_state"));
  return emitter().convert(g, tensorTypeOf(param).getElementType());
}

Value TrainStepBuilder::sgd(size_t p, Value param, Value g, Value rate) {
  // m' = momentum m + g;  p' = p - lr m'.
  Emitter e = emitter();
  Value m = e.add(e.mul(e.splat(options.momentum, param.getType()),
                        stateArg(first, p)),
                  g);
  newState[first].push_back(m);
  return e.sub(param, e.mul(rate, m));
}

void TrainStepBuilder::clipByGlobalNorm(SmallVector<Value> &gradients) {
  Emitter e = emitter();
  Type f32 = builder.getF32Type();
  auto scalar = RankedTensorType::get({}, f32);
  // A pipeline stage's update gets the whole model's ||g||² as an input.
  Value total = normSquared ? normSquared
                            : sumOfSquares(builder, loc, ValueRange(gradients));
  if (!total)
    return;
  Value norm = e.sqrt(total);
  Value limit = e.splat(options.clipNorm, scalar);
  // clip / max(norm, clip): exactly 1 below the limit, so unclipped
  // gradients keep their bits.
  Value scale = e.div(limit, builder.create<MaxOp>(loc, scalar, norm, limit));
  for (Value &g : gradients) {
    Type element = tensorTypeOf(g).getElementType();
    Value factor = e.convert(scale, element);
    g = e.mul(g, e.broadcast(factor, shapeOf(g), {}));
  }
}

std::pair<Value, Value> TrainStepBuilder::correctionsFor(Type element) {
  auto found = corrections.find(element);
  if (found != corrections.end())
    return found->second;
  Emitter e = emitter();
  auto scalar = [&](double value) {
    return e.splat(value, RankedTensorType::get({}, element));
  };
  Value t = e.add(e.convert(stepNumber, element), scalar(1));
  std::pair<Value, Value> result = {
      e.sub(scalar(1), e.pow(scalar(options.beta1), t)),
      e.sub(scalar(1), e.pow(scalar(options.beta2), t))};
  corrections[element] = result;
  return result;
}

Value TrainStepBuilder::adamw(size_t p, Value param, Value g, Value rate) {
  // AdamW (Loshchilov & Hutter): moments, bias correction with
  // t = step + 1, decoupled weight decay. Narrow types (bf16, f16) compute
  // in f32 and round the results: in bf16, beta2 = 0.999 rounds to 1 and
  // the bias correction 1 - beta2^t to 0.
  Emitter e = emitter();
  Type element = tensorTypeOf(param).getElementType();
  bool narrow = element.isBF16() || element.isF16();
  Type f32 = builder.getF32Type();
  auto widen = [&](Value x) { return narrow ? e.convert(x, f32) : x; };
  auto storeAs = [&](Value x, Value like) {
    return e.convert(x, tensorTypeOf(like).getElementType());
  };
  Value w = widen(param), grad = widen(g), lr = widen(rate);
  Value m0 = widen(stateArg(first, p)), v0 = widen(stateArg(first + 1, p));
  Type type = w.getType();
  auto constant = [&](double value) { return e.splat(value, type); };
  Value m = e.add(e.mul(constant(options.beta1), m0),
                  e.mul(constant(1 - options.beta1), grad));
  Value v = e.add(e.mul(constant(options.beta2), v0),
                  e.mul(constant(1 - options.beta2), e.mul(grad, grad)));
  // The bias corrections are scalars computed once per step and broadcast:
  // every element's would be the same (a pow per element per moment was an
  // eighth of a small GPT's data-parallel step).
  Type computeElement = tensorTypeOf(w).getElementType();
  auto [bias1, bias2] = correctionsFor(computeElement);
  Value correction1 = e.broadcast(bias1, shapeOf(w), {});
  Value correction2 = e.broadcast(bias2, shapeOf(w), {});
  Value update = e.div(e.div(m, correction1),
                       e.add(e.sqrt(e.div(v, correction2)),
                             constant(options.epsilon)));
  update = e.add(update, e.mul(constant(options.weightDecay), w));
  newState[first].push_back(storeAs(m, stateArg(first, p)));
  newState[first + 1].push_back(storeAs(v, stateArg(first + 1, p)));
  return storeAs(e.sub(w, e.mul(lr, update)), param);
}

void TrainStepBuilder::finish(Value lossValue, ArrayRef<Value> gradients,
                              const Signature &signature) {
  auto step = cast<func::FuncOp>(body->getParentOp());
  SmallVector<Value> results = {lossValue};
  results.append(newParams);
  results.append(gradients.begin(), gradients.end());
  for (unsigned m = 0; m < moments; ++m)
    results.append(newState[m]);
  builder.create<func::ReturnOp>(loc, results);
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  step.setFunctionType(builder.getFunctionType(signature.types, resultTypes));
  step.setAllArgAttrs(signature.attrs);
  // The new parameters and state are the arguments' new values: they keep
  // the layouts the arguments get (partita-apply-rules and propagation see
  // partita.aliases), so the runtime updates them in place.
  FunctionAttrEditor attrs(step);
  for (size_t r = 1; r < results.size(); ++r) {
    attrs.setResult(r, PartitaDialect::kAliasesAttrName,
                    builder.getI64IntegerAttr(static_cast<int64_t>(r - 1)));
    if (Attribute sharding =
            attrs.arg(r - 1, PartitaDialect::kShardingAttrName))
      attrs.setResult(r, PartitaDialect::kShardingAttrName, sharding);
  }
}

Expected<func::FuncOp> TrainStepBuilder::build(func::FuncOp gradient,
                                               const std::string &name) {
  Expected<Signature> s = signature();
  if (!s)
    return s.status();
  auto step = func::FuncOp::create(loc, name,
                                   builder.getFunctionType(s->types, {}));
  loss->getBlock()->getOperations().insertAfter(Block::iterator(gradient),
                                                step);
  body = step.addEntryBlock();
  builder.setInsertionPointToStart(body);
  gradBody = &gradient.getBody().front();
  size_t next = params.size() * (2 + moments);
  for (size_t k = 0; k < others.size(); ++k)
    dataArgs.push_back(body->getArgument(next++));
  stepNumber = takesStep() ? body->getArgument(next++) : Value();
  lr = lrInput ? body->getArgument(next++) : Value();
  normSquared = takesNorm() ? body->getArgument(next++) : Value();

  SmallVector<Value> results = options.microBatches == 1
                                   ? forwardBackward(builder, dataArgs)
                                   : accumulateMicroBatches(dataArgs);
  Value lossValue = results[0];
  SmallVector<Value> gradients(results.begin() + 1, results.end());
  // The gradients take their buffers' layout where they are complete.
  reduceGradients(gradients);
  if (options.clipNorm > 0)
    clipByGlobalNorm(gradients);
  Emitter e = emitter();
  for (size_t p = 0; p < params.size(); ++p) {
    // The weights the update applies to: the f32 master copy under mixed
    // precision (the bf16 parameters are then its rounding).
    Value param = paramArg(p);
    if (options.mixedPrecision) {
      // The optimizer state starts at zero; the master weights take the
      // parameters' values at step 0.
      Value first = e.compare(
          CompareDirection::EQ, stepNumber,
          e.splat(0, stepNumber.getType()));
      Value master = stateArg(0, p);
      param = e.select(e.broadcast(first, shapeOf(master), {}),
                       e.convert(paramArg(p), builder.getF32Type()), master);
    }
    Value g = optimizerGradient(p, gradients[p], param);
    Value rate = lr ? e.broadcast(e.convert(lr, tensorTypeOf(param).getElementType()),
                                  shapeOf(param), {})
                    : e.splat(options.learningRate, param.getType());
    Value updated = adam ? adamw(p, param, g, rate) : sgd(p, param, g, rate);
    if (options.mixedPrecision) {
      newState[0].push_back(updated);
      newParams.push_back(
          e.convert(updated, tensorTypeOf(paramArg(p)).getElementType()));
    } else {
      newParams.push_back(updated);
    }
  }
  finish(lossValue, gradients, *s);
  gradient->erase();
  return step;
}

} // namespace

Value partita::sumOfSquares(OpBuilder &builder, Location loc,
                            ValueRange values) {
  Emitter e{builder, loc};
  Type f32 = builder.getF32Type();
  Value total;
  for (Value value : values) {
    Value wide = e.convert(value, f32);
    Value squares = e.mul(wide, wide);
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < tensorTypeOf(value).getRank(); ++d)
      dims.push_back(d);
    Value sum = dims.empty() ? squares : e.reduceSum(squares, dims);
    total = total ? e.add(total, sum) : sum;
  }
  return total;
}

Expected<func::FuncOp>
partita::buildTrainStep(func::FuncOp loss, const TrainStepOptions &options,
                        const std::string &name) {
  // What the command lines check, checked again for every caller
  // (partita-opt's pipeline options reached here unchecked: lr=nan); the
  // builder checks the micro-batches.
  if (!(options.learningRate >= 0) || !std::isfinite(options.learningRate))
    return Status::error("the learning rate must be a finite number >= 0 "
                         "(0: an `lr` input), got " +
                         std::to_string(options.learningRate));
  if (!(options.clipNorm >= 0) || !std::isfinite(options.clipNorm))
    return Status::error("the clipping norm must be a finite number >= 0 "
                         "(0: no clipping), got " +
                         std::to_string(options.clipNorm));
  TrainStepBuilder step(loss, options);
  if (Status status = step.classifyArguments(); !status.ok())
    return status;
  Expected<func::FuncOp> gradient =
      buildGradient(loss, step.params, name + ".gradient", options.remat);
  if (!gradient)
    return gradient.status();
  return step.build(*gradient, name);
}
