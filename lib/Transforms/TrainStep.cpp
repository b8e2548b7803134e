//===- TrainStep.cpp - A loss function's training step --------------------===//
//
// The train step is the gradient function (Autodiff.cpp) followed by the
// optimizer's update — SGD with momentum or AdamW, optionally with f32
// master weights for bf16 parameters and gradient accumulation over
// micro-batches — with parameters, optimizer state and gradient buffers as
// donated arguments the step returns updated (docs/Autodiff.md).
//
//===----------------------------------------------------------------------===//

#include "AutodiffEmitter.h"
#include "partita/Transforms/Autodiff.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace partita;
using namespace partita::autodiff;

Expected<func::FuncOp>
partita::buildTrainStep(func::FuncOp loss, const TrainStepOptions &options,
                        const std::string &name) {
  bool adam = options.optimizer == "adamw";
  if (!adam && options.optimizer != "sgd")
    return Status::error("unknown optimizer '" + options.optimizer +
                         "' (adamw or sgd)");
  std::vector<unsigned> params, others;
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
  Expected<func::FuncOp> gradient =
      buildGradient(loss, params, name + ".gradient", options.remat);
  if (!gradient)
    return gradient.status();
  MLIRContext *context = loss.getContext();
  OpBuilder builder(context);
  Location loc = loss.getLoc();
  Type f32 = builder.getF32Type();
  auto masterType = [&](unsigned i) -> RankedTensorType {
    RankedTensorType type = tensorTypeOf(loss.getArgument(i));
    return options.mixedPrecision ? RankedTensorType::get(type.getShape(), f32)
                                  : type;
  };

  // The step's signature: params, state, the loss's other arguments, step
  // number, learning rate.
  SmallVector<Type> inputs;
  SmallVector<DictionaryAttr> inputAttrs;
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
    inputs.push_back(loss.getArgument(i).getType());
    NamedAttrList list(attrsOf(i) ? attrsOf(i) : DictionaryAttr::get(context));
    list.set(PartitaDialect::kDonatedAttrName, UnitAttr::get(context));
    inputAttrs.push_back(list.getDictionary(context));
  }
  // Gradient buffers: the loss's parameter type (bf16 under mixed
  // precision), their parameter's logical axes.
  for (unsigned i : params) {
    inputs.push_back(loss.getArgument(i).getType());
    inputAttrs.push_back(withRole(attrsOf(i), Role::Grad, true));
  }
  // Optimizer state: with mixed precision the f32 master weights first,
  // then the moments (f32).
  unsigned moments = (adam ? 2 : 1) + (options.mixedPrecision ? 1 : 0);
  for (unsigned m = 0; m < moments; ++m)
    for (unsigned i : params) {
      inputs.push_back(masterType(i));
      // The state shares its parameter's logical axes (the rules may shard
      // it apart by role), not its explicit sharding.
      inputAttrs.push_back(withRole(attrsOf(i), Role::OptState, true));
    }
  // Inputs with a batch axis hold every micro-batch.
  std::vector<int64_t> batchDim(loss.getNumArguments(), -1);
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
    inputs.push_back(type);
    inputAttrs.push_back(attrsOf(i) ? attrsOf(i) : DictionaryAttr::get(context));
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
  if (adam) {
    inputs.push_back(scalar(builder.getI32Type()));
    inputAttrs.push_back(inputRole());
  }
  bool lrInput = options.learningRate <= 0;
  if (lrInput) {
    inputs.push_back(scalar(f32));
    inputAttrs.push_back(inputRole());
  }

  auto step = func::FuncOp::create(loc, name, builder.getFunctionType(inputs, {}));
  loss->getBlock()->getOperations().insertAfter(Block::iterator(*gradient),
                                                step);
  Block *body = step.addEntryBlock();
  builder.setInsertionPointToStart(body);
  Emitter e{builder, loc};
  size_t n = params.size();
  auto paramArg = [&](size_t p) { return body->getArgument(p); };
  auto stateArg = [&](unsigned m, size_t p) {
    return body->getArgument(n * (2 + m) + p);
  };
  size_t next = n * (2 + moments);
  Block &gradBody = gradient->getBody().front();
  auto gradReturn = cast<func::ReturnOp>(gradBody.getTerminator());
  SmallVector<Value> computeParams;
  for (size_t p = 0; p < n; ++p)
    computeParams.push_back(paramArg(p));
  unsigned first = options.mixedPrecision ? 1 : 0; // the first moment
  SmallVector<Value> dataArgs;
  for (size_t k = 0; k < others.size(); ++k)
    dataArgs.push_back(body->getArgument(next++));
  Value stepNumber = adam ? body->getArgument(next++) : Value();
  Value lr = lrInput ? body->getArgument(next++) : Value();
  // Runs the gradient function's body with `data` for the loss's other
  // arguments; returns (loss, gradients).
  auto forwardBackward = [&](OpBuilder &at, ValueRange data) {
    IRMapping map;
    for (size_t p = 0; p < n; ++p)
      map.map(gradBody.getArgument(params[p]), computeParams[p]);
    for (size_t k = 0; k < others.size(); ++k)
      map.map(gradBody.getArgument(others[k]), data[k]);
    for (Operation &op : gradBody.without_terminator())
      at.clone(op, map);
    SmallVector<Value> results;
    for (Value value : gradReturn.getOperands())
      results.push_back(map.lookup(value));
    return results;
  };
  Value lossValue;
  SmallVector<Value> gradients;
  if (options.microBatches == 1) {
    SmallVector<Value> results = forwardBackward(builder, dataArgs);
    lossValue = results[0];
    gradients.assign(results.begin() + 1, results.end());
  } else {
    // Gradient accumulation: one loop over the micro-batches, summing the
    // loss and the gradients in its carries (accumulators: they stay
    // partial, and are reduced once after the loop).
    int64_t count = options.microBatches;
    SmallVector<Value> inits = {e.splat(0, gradReturn.getOperand(0).getType())};
    for (size_t p = 0; p < n; ++p)
      inits.push_back(e.splat(0, gradReturn.getOperand(1 + p).getType()));
    SmallVector<Type> types;
    for (Value init : inits)
      types.push_back(init.getType());
    auto accumulate = builder.create<LoopOp>(loc, types, inits,
                                             static_cast<uint64_t>(count));
    Block *loopBody = new Block();
    accumulate.getBody().push_back(loopBody);
    Value micro = loopBody->addArgument(
        RankedTensorType::get({}, builder.getI32Type()), loc);
    SmallVector<Value> sums;
    for (Type type : types)
      sums.push_back(loopBody->addArgument(type, loc));
    OpBuilder inside = OpBuilder::atBlockEnd(loopBody);
    Emitter ie{inside, loc};
    Value zero = ie.splat(0, micro.getType());
    SmallVector<Value> slices;
    for (size_t k = 0; k < others.size(); ++k) {
      unsigned i = others[k];
      if (batchDim[i] < 0) {
        slices.push_back(dataArgs[k]);
        continue;
      }
      // Micro-batch j holds the examples j, j + M, j + 2M, ...: the batch
      // viewed as [B/M, M] keeps its data-parallel split on the major
      // dimension, so every device slices its own examples.
      Shape micro_shape(tensorTypeOf(loss.getArgument(i)).getShape());
      int64_t d = batchDim[i];
      Shape split(micro_shape);
      split.insert(split.begin() + d + 1, count);
      Value viewed = ie.reshape(dataArgs[k], split);
      Shape sizes(split);
      sizes[d + 1] = 1;
      SmallVector<Value> starts(sizes.size(), zero);
      starts[d + 1] = micro;
      slices.push_back(
          ie.reshape(ie.dynamicSlice(viewed, starts, sizes), micro_shape));
    }
    SmallVector<Value> results = forwardBackward(inside, slices);
    SmallVector<Value> yields;
    for (size_t r = 0; r < results.size(); ++r)
      yields.push_back(ie.add(sums[r], results[r]));
    inside.create<YieldOp>(loc, yields);
    auto mean = [&](Value sum) {
      return e.div(sum, e.splat(static_cast<double>(count), sum.getType()));
    };
    lossValue = mean(accumulate.getResult(0));
    for (size_t p = 0; p < n; ++p)
      gradients.push_back(mean(accumulate.getResult(1 + p)));
  }

  // The gradients take their buffers' layout where they are complete: one
  // reduction per gradient (an all_reduce when the buffer is replicated, a
  // reduce_scatter when the rules split it), not one per consumer in the
  // optimizer.
  for (size_t p = 0; p < n; ++p)
    if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
            params[p], PartitaDialect::kLogicalAxesAttrName))
      gradients[p] = builder.create<LogicalConstraintOp>(
          loc, gradients[p], axes, builder.getStringAttr("grad"));
  SmallVector<Value> newParams, newState[3];
  for (size_t p = 0; p < n; ++p) {
    // The weights the update applies to: the f32 master copy under mixed
    // precision (the bf16 parameters are then its rounding).
    Value param = options.mixedPrecision ? stateArg(0, p) : paramArg(p);
    auto finish = [&](Value updated) {
      if (options.mixedPrecision) {
        newState[0].push_back(updated);
        newParams.push_back(e.convert(
            updated, tensorTypeOf(paramArg(p)).getElementType()));
      } else {
        newParams.push_back(updated);
      }
    };
    Type type = param.getType();
    // The update runs in the optimizer state's layout: the gradient moves
    // there once (under zero1, a reduce-scatter of the unreduced buffer).
    Value g = gradients[p];
    if (auto axes = loss.getArgAttrOfType<ArrayAttr>(
            params[p], PartitaDialect::kLogicalAxesAttrName))
      g = builder.create<LogicalConstraintOp>(loc, g, axes,
                                              builder.getStringAttr("opt_state"));
    if (g.getType() != type)
      g = e.convert(g, tensorTypeOf(param).getElementType());
    auto constant = [&](double value) { return e.splat(value, type); };
    Value rate = lr ? e.broadcast(e.convert(lr, tensorTypeOf(param).getElementType()),
                                  shapeOf(param), {})
                    : constant(options.learningRate);
    if (!adam) {
      // m' = momentum m + g;  p' = p - lr m'.
      Value m = e.add(e.mul(constant(options.momentum), stateArg(first, p)), g);
      newState[first].push_back(m);
      finish(e.sub(param, e.mul(rate, m)));
      continue;
    }
    // AdamW (Loshchilov & Hutter): moments, bias correction with
    // t = step + 1, decoupled weight decay.
    Value m = e.add(e.mul(constant(options.beta1), stateArg(first, p)),
                    e.mul(constant(1 - options.beta1), g));
    Value v = e.add(e.mul(constant(options.beta2), stateArg(first + 1, p)),
                    e.mul(constant(1 - options.beta2), e.mul(g, g)));
    Type element = tensorTypeOf(param).getElementType();
    Value t = e.broadcast(
        e.add(e.convert(stepNumber, element),
              e.splat(1, RankedTensorType::get({}, element))),
        shapeOf(param), {});
    Value correction1 = e.sub(constant(1), e.pow(constant(options.beta1), t));
    Value correction2 = e.sub(constant(1), e.pow(constant(options.beta2), t));
    Value update = e.div(e.div(m, correction1),
                         e.add(e.sqrt(e.div(v, correction2)),
                               constant(options.epsilon)));
    update = e.add(update, e.mul(constant(options.weightDecay), param));
    newState[first].push_back(m);
    newState[first + 1].push_back(v);
    finish(e.sub(param, e.mul(rate, update)));
  }
  SmallVector<Value> results = {lossValue};
  results.append(newParams);
  results.append(gradients);
  for (unsigned m = 0; m < moments; ++m)
    results.append(newState[m]);
  builder.create<func::ReturnOp>(loc, results);
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  step.setFunctionType(builder.getFunctionType(inputs, resultTypes));
  step.setAllArgAttrs(inputAttrs);
  // The new parameters and state are the arguments' new values: they keep
  // the layouts the arguments get (partita-apply-rules and propagation see
  // partita.aliases), so the runtime updates them in place.
  for (size_t r = 1; r < results.size(); ++r) {
    step.setResultAttr(r, PartitaDialect::kAliasesAttrName,
                       builder.getI64IntegerAttr(static_cast<int64_t>(r - 1)));
    if (Attribute sharding = step.getArgAttr(r - 1, PartitaDialect::kShardingAttrName))
      step.setResultAttr(r, PartitaDialect::kShardingAttrName, sharding);
  }
  gradient->erase();
  return step;
}
