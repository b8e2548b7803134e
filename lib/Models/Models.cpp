//===- Models.cpp - mlp, ffn, gpt and moe --------------------------------===//
//
// Each model is written once with logical axis names on its parameters and
// inputs. The transformer's residual stream carries a logical constraint
// [batch, seq, embed] at every block boundary and after every norm: where
// Megatron puts its sequence-parallel layout and MaxText its activation
// constraints, mapped only by presets that ask for an activation layout
// (tp+sp, fsdp, ep).
//
//===----------------------------------------------------------------------===//

#include "partita/Models/Models.h"
#include "Attention.h"
#include "partita/Models/ModelBuilder.h"
#include "partita/Sharding/Progress.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace partita;
using namespace partita::models;

namespace {

using Shape = std::vector<int64_t>;
using Axes = std::vector<std::string>;

/// A parameter of one layer.
struct LayerParam {
  std::string name;
  Shape shape;
  Axes axes;
};

/// The layers of a model: unrolled (parameters per layer, named
/// layer<i>.<name>) or, with `scan`, one loop over stacked parameters
/// (named layers.<name>, with a leading `layers` axis).
Value layerStack(ModelBuilder &b, int64_t count, bool scan,
                 const std::vector<LayerParam> &params, Value state,
                 const std::function<Value(Value, const std::vector<Value> &)>
                     &layer) {
  if (!scan) {
    for (int64_t i = 0; i < count; ++i) {
      // A model of thousands of layers takes seconds to build.
      if (i % 64 == 0)
        reportProgress("building layer " + std::to_string(i + 1) + " of " +
                       std::to_string(count));
      b.pushScope("layer" + std::to_string(i));
      std::vector<Value> weights;
      for (const LayerParam &param : params)
        weights.push_back(b.param(param.name, param.shape, param.axes));
      state = layer(state, weights);
      b.popScope();
    }
    return state;
  }
  b.pushScope("layers");
  std::vector<Value> stacked;
  for (const LayerParam &param : params) {
    Shape shape = param.shape;
    shape.insert(shape.begin(), count);
    Axes axes = param.axes;
    axes.insert(axes.begin(), "layers");
    stacked.push_back(b.param(param.name, shape, axes));
  }
  OpBuilder &ops = b.ops();
  auto loop = ops.create<LoopOp>(b.loc("loop"), TypeRange{state.getType()},
                                 ValueRange{state},
                                 static_cast<uint64_t>(count));
  Block *body = new Block();
  loop.getBody().push_back(body);
  Type counterType = b.tensorType({}, ops.getI32Type());
  Value index = body->addArgument(counterType, b.loc("index"));
  Value carried = body->addArgument(state.getType(), b.loc("state"));
  OpBuilder::InsertionGuard guard(ops);
  ops.setInsertionPointToStart(body);
  b.popScope();
  b.pushScope("layer");
  Value zero = b.constant(0, {}, "zero", ops.getI32Type());
  std::vector<Value> weights;
  for (size_t p = 0; p < params.size(); ++p) {
    Shape sizes = params[p].shape;
    sizes.insert(sizes.begin(), 1);
    std::vector<Value> starts(sizes.size(), zero);
    starts[0] = index;
    Value slice = b.dynamicSlice(stacked[p], starts, sizes, params[p].name);
    // This layer's weight keeps its parameter's layout.
    weights.push_back(b.logicalConstraint(
        b.reshape(slice, params[p].shape, params[p].name), params[p].axes,
        params[p].name + ".layout", "param"));
  }
  Value next = layer(carried, weights);
  ops.create<YieldOp>(b.loc("yield"), ValueRange{next});
  b.popScope();
  return loop.getResult(0);
}

/// One-hot of integer `indices` over a new last dimension of `size`, as
/// the element type of the model.
Value oneHot(ModelBuilder &b, Value indices, int64_t size,
             const std::string &name) {
  Shape shape = ModelBuilder::shapeOf(indices);
  Type indexType = cast<RankedTensorType>(indices.getType()).getElementType();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < shape.size(); ++d)
    dims.push_back(static_cast<int64_t>(d));
  shape.push_back(size);
  Value wide = b.broadcast(indices, shape, dims, name + ".indices");
  Value positions = b.iota(shape, static_cast<int64_t>(shape.size()) - 1,
                           indexType, name + ".iota");
  Value hit = b.compare(CompareDirection::EQ, wide, positions, name + ".eq");
  return b.convert(hit, b.element(), name);
}

/// The mean of -log σ(β (s_2i - s_2i+1)) over the row pairs of `scores`
/// [B] (row 2i chosen, 2i + 1 rejected): DPO's loss on log-ratios, the
/// Bradley–Terry loss on rewards (β = 1).
Value pairLoss(ModelBuilder &b, Value scores, double beta,
               const std::string &name) {
  int64_t rows = ModelBuilder::shapeOf(scores)[0];
  Value pairs = b.reshape(scores, {rows / 2, 2}, "pairs");
  Value sign = b.constantData({1.0f, -1.0f}, {2}, "chosen.minus.rejected");
  Value margin =
      b.einsum("pt,t->p", ValueRange{pairs, sign}, {rows / 2}, "margin");
  Value scaled = beta == 1.0
                     ? margin
                     : b.mul(margin, b.constant(beta, {rows / 2}, "beta"),
                             "scaled.margin");
  // -log sigmoid(z) = log(1 + exp(-z)).
  Value softplus = b.log(
      b.add(b.constant(1.0, {rows / 2}, "one"),
            b.exp(b.neg(scaled, "neg.margin"), "exp.neg.margin"), "one.plus"),
      "neg.log.sigmoid");
  return b.mean(softplus, {0}, name);
}

/// Each position's negative log-probability of its target [B, S] under
/// `logits` [B, S, V].
Value tokenNll(ModelBuilder &b, Value logits, Value targets) {
  Shape shape = ModelBuilder::shapeOf(logits);
  // The maximum is subtracted and added back: no gradient through it (as
  // in JAX's logsumexp).
  Value peak =
      b.stopGradient(b.reduce(ReductionKind::Max, logits, {2}, "max"));
  Value shifted =
      b.sub(logits, b.broadcast(peak, shape, {0, 1}, "max.b"), "shifted");
  Value sum = b.reduce(ReductionKind::Sum, b.exp(shifted, "exp"), {2}, "sum");
  Value logSumExp = b.add(b.log(sum, "log"), peak, "logsumexp");
  Value picked = b.reduce(
      ReductionKind::Sum, b.mul(logits, oneHot(b, targets, shape[2], "target"), "picked"),
      {2}, "target.logit");
  return b.sub(logSumExp, picked, "nll");
}

/// Mean softmax cross-entropy of `logits` [B, S, V] against `targets` [B, S]:
/// over every position, or, with `mask` [B, S], over those where it is 1.
/// With `config.objective` "logprob" or "dpo" (and a mask), each row's
/// sequence log-probability, or the DPO loss over row pairs against
/// `refLogp` [B] (ModelConfig).
Value crossEntropy(ModelBuilder &b, Value logits, Value targets,
                   Value mask = Value(), const ModelConfig *config = nullptr,
                   Value refLogp = Value()) {
  b.pushScope("loss");
  Value nll = tokenNll(b, logits, targets);
  Value loss;
  std::string objective = config ? config->objective : "mean";
  if (mask && (objective == "logprob" || objective == "dpo")) {
    Value sequence = b.neg(b.reduce(ReductionKind::Sum,
                                    b.mul(nll, mask, "masked"), {1},
                                    "sequence.nll"),
                           "sequence.logp");
    if (objective == "logprob") {
      b.popScope();
      return sequence;
    }
    // Rows 2i (chosen) and 2i + 1 (rejected): their log-ratios against the
    // reference, differenced pair by pair.
    Value ratio = b.sub(sequence, refLogp, "log.ratio");
    loss = pairLoss(b, ratio, config->dpoBeta, "dpo.mean");
  } else if (mask) {
    Value kept = b.reduce(ReductionKind::Sum, b.mul(nll, mask, "masked"),
                          {0, 1}, "masked.sum");
    Value count = b.reduce(ReductionKind::Sum, mask, {0, 1}, "mask.count");
    loss = b.div(kept, count, "masked.mean");
  } else {
    loss = b.mean(nll, {0, 1}, "mean");
  }
  b.popScope();
  return loss;
}

/// GELU or SwiGLU MLP of `x` [..., D]. w: w1 [D, F], w2 [F, D] (, w3 [D, F]).
Value mlpBlock(ModelBuilder &b, Value x, const std::vector<Value> &w,
               const Dims &d, bool swiglu, const std::string &in,
               const std::string &out) {
  Shape shape = ModelBuilder::shapeOf(x);
  Shape hidden = shape;
  hidden.back() = d.F;
  Value h = b.einsum(in, ValueRange{x, w[0]}, hidden, "up");
  Value act;
  if (swiglu) {
    Value gate = b.einsum(in, ValueRange{x, w[2]}, hidden, "gate");
    act = b.mul(b.silu(h, "silu"), gate, "swiglu");
  } else {
    act = b.gelu(h, "gelu");
  }
  return b.einsum(out, ValueRange{act, w[1]}, shape, "down");
}

/// GShard's mixture-of-experts layer of `x` [B, S, D]: tokens split into
/// groups along the batch, top-k routing with capacity per group and expert,
/// positions in each expert's queue by cumsum within the group, dispatch and
/// combine as einsums over the expert dimension. Returns the output and
/// adds the load-balancing loss to `auxLoss`; `dispatchOut` receives the
/// dispatch tensor.
Value moeBlock(ModelBuilder &b, Value x, const std::vector<Value> &w,
               const Dims &d, int64_t groups, int64_t topK, int64_t capacity,
               Value &auxLoss, Value *dispatchOut) {
  // w: router [D, E], w1 [E, D, F], w2 [E, F, D]
  int64_t G = groups, T = d.B * d.S / groups, E = d.E, C = capacity;
  // The layouts expert parallelism needs by definition (mapped by the `ep`
  // preset's activation rules, dropped by others): groups split along the
  // batch, dispatched tokens split by expert.
  Axes byGroup3 = {"batch", "", ""}, byGroup4 = {"batch", "", "", ""},
       byExpert = {"expert", "", "", ""};
  Value tokens = b.logicalConstraint(b.reshape(x, {G, T, d.D}, "tokens"),
                                     byGroup3, "tokens.layout");
  Value logits = b.einsum("gtd,de->gte", ValueRange{tokens, w[0]}, {G, T, E},
                          "router.logits");
  Value probs = b.softmax(logits, "router.probs");
  Value dispatch, combine, firstMask;
  Value taken; // [G, E]: slots already used in each expert's queue
  Value remaining = probs;
  std::vector<Value> masks, gates;
  for (int64_t choice = 0; choice < topK; ++choice) {
    std::string name = "choice" + std::to_string(choice);
    Value expert = b.argmax(remaining, 2, name + ".expert");
    Value mask = oneHot(b, expert, E, name + ".mask");
    Value gate = b.reduce(ReductionKind::Sum, b.mul(probs, mask, name + ".p"),
                          {2}, name + ".gate");
    // Position in the expert's queue: earlier tokens of the group first,
    // after the slots earlier choices took.
    Value position = b.sub(b.cumsum(mask, 1, name + ".cumsum"),
                           b.scalarLike(1.0, mask, name + ".one"), name + ".position");
    if (taken)
      position = b.add(position, b.broadcast(taken, {G, T, E}, {0, 2}, name + ".taken.b"),
                       name + ".position.after");
    Value count = b.reduce(ReductionKind::Sum, mask, {1}, name + ".count");
    taken = taken ? b.add(taken, count, name + ".taken") : count;
    // Tokens past the capacity are dropped.
    Value fits = b.compare(CompareDirection::LT, position,
                           b.scalarLike(static_cast<double>(C), position, name + ".capacity"),
                           name + ".fits");
    Value kept = b.select(fits, mask, b.scalarLike(0.0, mask, name + ".zero"),
                          name + ".kept");
    Value slot = b.mul(b.broadcast(kept, {G, T, E, C}, {0, 1, 2}, name + ".kept.b"),
                       oneHot(b, b.convert(position, b.ops().getI32Type(), name + ".position.i"),
                              C, name + ".slot.onehot"),
                       name + ".slot");
    masks.push_back(mask);
    gates.push_back(gate);
    dispatch = dispatch ? b.add(dispatch, slot, name + ".dispatch") : slot;
    Value weighted = b.mul(slot, b.broadcast(gate, {G, T, E, C}, {0, 1}, name + ".gate.b"),
                           name + ".weighted");
    combine = combine ? b.add(combine, weighted, name + ".combine") : weighted;
    if (choice + 1 < topK)
      remaining = b.mul(remaining,
                        b.sub(b.scalarLike(1.0, mask, name + ".one.m"), mask, name + ".not"),
                        name + ".remaining");
  }
  if (topK > 1) {
    // GShard normalizes the top-k gates to sum to one.
    Value total = gates[0];
    for (int64_t i = 1; i < topK; ++i)
      total = b.add(total, gates[i], "gates.total");
    combine = b.div(combine, b.broadcast(total, {G, T, E, C}, {0, 1}, "gates.total.b"),
                    "combine");
  }
  dispatch = b.logicalConstraint(dispatch, byGroup4, "dispatch.layout");
  combine = b.logicalConstraint(combine, byGroup4, "combine.layout");
  if (dispatchOut)
    *dispatchOut = dispatch;
  Value expertIn = b.logicalConstraint(
      b.einsum("gtec,gtd->egcd", ValueRange{dispatch, tokens}, {E, G, C, d.D},
               "dispatched"),
      byExpert, "dispatched.layout");
  Value h = b.einsum("egcd,edf->egcf", ValueRange{expertIn, w[1]}, {E, G, C, d.F},
                     "expert.up");
  Value act = b.gelu(h, "expert.gelu");
  Value expertOut = b.logicalConstraint(
      b.einsum("egcf,efd->egcd", ValueRange{act, w[2]}, {E, G, C, d.D},
               "expert.down"),
      byExpert, "expert.down.layout");
  Value combined = b.logicalConstraint(
      b.einsum("gtec,egcd->gtd", ValueRange{combine, expertOut}, {G, T, d.D},
               "combined"),
      byGroup3, "combined.layout");
  // Load balancing (Switch/GShard): E * sum_e fraction_e * mean_prob_e.
  Value fraction = b.mean(masks[0], {0, 1}, "aux.fraction");
  Value meanProb = b.mean(probs, {0, 1}, "aux.prob");
  Value aux = b.mul(b.reduce(ReductionKind::Sum, b.mul(fraction, meanProb, "aux.product"),
                             {0}, "aux.sum"),
                    b.constant(static_cast<double>(E), {}, "aux.experts"), "aux");
  auxLoss = auxLoss ? b.add(auxLoss, aux, "aux.total") : aux;
  return b.reshape(combined, {d.B, d.S, d.D}, "out");
}

/// The transformer's configuration errors that do not depend on MoE.
Status checkTransformer(const ModelConfig &c, const Dims &d) {
  if (c.dModel % c.heads != 0)
    return Status::error("--d-model (" + std::to_string(c.dModel) +
                         ") must be a multiple of --heads (" +
                         std::to_string(c.heads) + ")");
  if (d.H % d.N != 0)
    return Status::error("--heads (" + std::to_string(d.H) +
                         ") must be a multiple of --kv-heads (" +
                         std::to_string(d.N) + ")");
  if (c.embedding != "onehot" && c.embedding != "gather")
    return Status::error("--embedding must be onehot or gather, got '" +
                         c.embedding + "'");
  if (c.rotary && d.K % 2 != 0)
    return Status::error("rotary positions need an even head dimension "
                         "(d_model / heads = " + std::to_string(d.K) + ")");
  return Status::success();
}

/// The MoE layer's capacity per group and expert, after checking its
/// configuration against the `groups` the batch splits into.
Expected<int64_t> moeCapacity(const ModelConfig &c, int64_t groups) {
  if (c.topK < 1 || c.topK > c.experts)
    return Status::error("--top-k must be between 1 and --experts");
  if (c.batch % groups != 0)
    return Status::error("--batch (" + std::to_string(c.batch) +
                         ") must be a multiple of the MoE groups (" +
                         std::to_string(groups) + ")");
  if (c.capacityFactor <= 0)
    return Status::error("--capacity-factor must be positive");
  int64_t perGroup = c.batch * c.seq / groups;
  int64_t capacity = static_cast<int64_t>(
      std::ceil(c.capacityFactor * c.topK * perGroup / c.experts));
  return std::max<int64_t>(1, std::min(capacity, perGroup));
}

/// The transformer's inputs: the tokens and, with a loss, the targets, the
/// loss mask and the reference log-probabilities its objective needs.
struct TransformerInputs {
  Value tokens, targets, mask, refLogp;
  /// Generation (left-padded rows): a prefill's last prompt slot and
  /// padding slots per row [B] and its position ids [B, S]; a decode step's
  /// position per row [B], the slot it writes (a scalar) and each layer's
  /// keys and values.
  Value last, offsets, positions, slot;
  std::vector<Value> caches;
  /// Reinforcement learning: per-token advantages, the rollout policy's
  /// log-probabilities and (ppo) the value targets; grpo's reference
  /// log-probabilities are `refLogp`, [B, S].
  Value advantages, oldLogp, returns;
};

/// Whether `c` is one of reinforcement learning's losses.
bool reinforcing(const ModelConfig &c) {
  return c.objective == "grpo" || c.objective == "ppo";
}

/// Whether `c` builds one of generation's programs (docs/Models.md,
/// "Generation").
bool generating(const ModelConfig &c) {
  return c.objective == "prefill" || c.objective == "decode";
}

/// Adds the transformer's inputs to the function.
TransformerInputs transformerInputs(ModelBuilder &b, const ModelConfig &c,
                                    const Dims &d) {
  TransformerInputs in;
  Type i32 = b.ops().getI32Type();
  if (c.objective == "decode") {
    // One new token per row at its position, and every layer's cache.
    in.tokens = b.input("tokens", {d.B, 1}, {"batch", ""}, i32);
    in.positions = b.input("positions", {d.B}, {"batch"}, i32);
    in.slot = b.input("slot", {}, {}, i32);
    for (int64_t l = 0; l < d.L; ++l)
      for (const char *part : {"keys", "values"}) {
        // Donated: the step's new cache may take the old one's buffer.
        in.caches.push_back(
            b.input("layer" + std::to_string(l) + ".cache." + part,
                    {d.B, d.N, d.S, d.K}, cacheAxes(), b.element()));
        b.donate(in.caches.back());
      }
    return in;
  }
  in.tokens = b.input("tokens", {d.B, d.S}, {"batch", "seq"}, i32);
  if (c.objective == "prefill") {
    in.last = b.input("last", {d.B}, {"batch"}, i32);
    in.offsets = b.input("offsets", {d.B}, {"batch"}, i32);
    // Each slot's position: its index less the row's padding (padding at
    // position 0; no query attends to it).
    Shape rows = {d.B, d.S};
    Value shifted = b.sub(b.iota(rows, 1, i32, "slots"),
                          b.broadcast(in.offsets, rows, {0}, "offsets.b"),
                          "position.ids.raw");
    in.positions =
        b.max(shifted, b.constant(0, rows, "zero", i32), "position.ids");
    return in;
  }
  if (!c.noLoss)
    in.targets = b.input("targets", {d.B, d.S}, {"batch", "seq"}, i32);
  if (!c.noLoss && c.lossMask)
    in.mask = b.input("loss_mask", {d.B, d.S}, {"batch", "seq"}, b.element());
  if (!c.noLoss && c.lossMask && c.objective == "dpo")
    in.refLogp = b.input("ref_logp", {d.B}, {"batch"}, b.element());
  if (!c.noLoss && c.lossMask && reinforcing(c)) {
    Axes rows = {"batch", "seq"};
    in.advantages = b.input("advantages", {d.B, d.S}, rows, b.element());
    in.oldLogp = b.input("old_logp", {d.B, d.S}, rows, b.element());
    if (c.objective == "grpo")
      in.refLogp = b.input("ref_logp", {d.B, d.S}, rows, b.element());
    else
      in.returns = b.input("returns", {d.B, d.S}, rows, b.element());
  }
  return in;
}

/// A causal ring's balanced form (docs/LongContext.md, "Balanced causal
/// ring"): where the result does not depend on the order of positions (a
/// mean or sum over them, no per-position output, no routing by position),
/// the per-position inputs go into zigzag order and `in.positions` holds
/// each one's position. Returns whether it applies.
bool balanceRing(ModelBuilder &b, const ModelConfig &c, const Dims &d,
                 AttentionForm &form, TransformerInputs &in) {
  static const char *const orderFree[] = {"mean", "dpo", "logprob", "grpo",
                                          "ppo"};
  if (form.context != "ring" || !form.causal || c.model != "gpt" || c.noLoss ||
      d.S % (2 * form.contextSize) != 0 ||
      std::find(std::begin(orderFree), std::end(orderFree), c.objective) ==
          std::end(orderFree))
    return false;
  auto reorder = [&](Value &x, const std::string &name) {
    if (x && ModelBuilder::shapeOf(x).size() == 2)
      x = zigzagOrder(b, x, 1, form.contextSize, name + ".zigzag");
  };
  reorder(in.tokens, "tokens");
  reorder(in.targets, "targets");
  reorder(in.mask, "loss_mask");
  reorder(in.refLogp, "ref_logp");
  reorder(in.advantages, "advantages");
  reorder(in.oldLogp, "old_logp");
  reorder(in.returns, "returns");
  Value order =
      zigzagOrder(b, b.iota({d.S}, 0, b.ops().getI32Type(), "positions"), 0,
                  form.contextSize, "positions.zigzag");
  in.positions = b.broadcast(order, {d.B, d.S}, {1}, "positions.b");
  form.positions = in.positions;
  return true;
}

/// The embedding of `tokens` [B, S]: its table's rows (gathered or as a
/// one-hot product) plus, without rotary positions, learned positions.
Value embedTokens(ModelBuilder &b, const ModelConfig &c, const Dims &d,
                  Value tokens, Value positions) {
  int64_t Sq = ModelBuilder::shapeOf(tokens)[1];
  Value wte = b.param("embed.table", {d.V, d.D}, {"vocab", "embed"});
  Value wpe;
  if (!c.rotary)
    wpe = b.param("embed.positions", {d.S, d.D}, {"seq", "embed"});

  b.pushScope("embed");
  Value x = c.embedding == "gather"
                ? b.gather(wte, tokens, "tokens")
                : b.einsum("bsv,vd->bsd",
                           ValueRange{oneHot(b, tokens, d.V, "onehot"), wte},
                           {d.B, Sq, d.D}, "tokens");
  // Generation's rows are at their own positions: a decode step's [B], a
  // prefill's [B, S].
  if (wpe && positions && ModelBuilder::shapeOf(positions).size() == 1)
    x = b.add(x,
              b.broadcast(b.gather(wpe, positions, "positions.at"),
                          {d.B, Sq, d.D}, {0, 2}, "positions.b"),
              "with_positions");
  else if (wpe && positions)
    x = b.add(x, b.gather(wpe, positions, "positions.at"), "with_positions");
  else if (wpe)
    x = b.add(x, b.broadcast(wpe, {d.B, Sq, d.D}, {1, 2}, "positions.b"),
              "with_positions");
  b.popScope();
  return x;
}

/// The parameters of one transformer layer, in the order the layer takes
/// them: the attention's norm and weights, then the MLP's (or the mixture
/// of experts') norm and weights.
std::vector<LayerParam> transformerLayerParams(const ModelConfig &c,
                                               const Dims &d, bool moe) {
  std::vector<LayerParam> params;
  // Norm parameters have their own logical axis (MaxText's "norm"), which
  // the presets leave whole: sharding a vector of D scales would drag the
  // normalized activations' layout along with it for no memory worth having.
  auto normParams = [&](const std::string &name) {
    params.push_back({name + ".scale", {d.D}, {"norm"}});
    if (!c.rmsNorm)
      params.push_back({name + ".bias", {d.D}, {"norm"}});
  };
  normParams("attn.norm");
  params.push_back(
      {"attn.wq", {d.D, d.H, d.K}, {"embed", "heads", "head_dim"}});
  params.push_back(
      {"attn.wk", {d.D, d.N, d.K}, {"embed", "kv_heads", "head_dim"}});
  params.push_back(
      {"attn.wv", {d.D, d.N, d.K}, {"embed", "kv_heads", "head_dim"}});
  params.push_back(
      {"attn.wo", {d.H, d.K, d.D}, {"heads", "head_dim", "embed"}});
  normParams("mlp.norm");
  if (moe) {
    params.push_back({"moe.router", {d.D, d.E}, {"embed", ""}});
    params.push_back({"moe.w1", {d.E, d.D, d.F}, {"expert", "embed", "mlp"}});
    params.push_back({"moe.w2", {d.E, d.F, d.D}, {"expert", "mlp", "embed"}});
  } else {
    params.push_back({"mlp.w1", {d.D, d.F}, {"embed", "mlp"}});
    params.push_back({"mlp.w2", {d.F, d.D}, {"mlp", "embed"}});
    if (c.swiglu)
      params.push_back({"mlp.w3", {d.D, d.F}, {"embed", "mlp"}});
  }
  return params;
}

/// One transformer layer (attention, then an MLP or a mixture of experts,
/// each behind a norm and with a residual), and what the layers
/// accumulate: the MoE auxiliary loss and the first layer's dispatch.
struct TransformerLayer {
  ModelBuilder &b;
  const ModelConfig &c;
  const Dims &d;
  bool moe;
  int64_t groups, capacity;
  size_t normSize;
  Value auxLoss, dispatch;
  bool first = true;
  AttentionForm form;
  /// Generation: each layer's cache after the step (keys, values, ...),
  /// and a decode step's positions and caches before it.
  bool caching = false;
  Value positions, offsets, slot;
  std::vector<Value> cacheIn, cacheOut;
  // The residual stream between blocks, and a norm's output where the
  // block's matrix products read it: whole along the sequence and the
  // embedding (Megatron's all_gather before the column-parallel GEMMs under
  // sequence parallelism; FSDP gathers the weights, not the activations).
  Axes stream = {"batch", "seq", "embed"};
  Axes normed = {"batch", "", ""};

  /// The layer on `h` with its weights `w` (transformerLayerParams).
  Value operator()(Value h, const std::vector<Value> &w);
  /// The norm of `h` with `weights` (scale, and bias unless RMS), laid out
  /// for the block's matrix products.
  Value norm(Value h, const std::vector<Value> &weights);
  /// The MLP or mixture-of-experts block on `h` with its residual.
  Value feedForward(Value h, const std::vector<Value> &norm2,
                    const std::vector<Value> &w);
};

Value TransformerLayer::operator()(Value h, const std::vector<Value> &w) {
  size_t at = 0;
  auto take = [&](size_t count) {
    std::vector<Value> taken(w.begin() + at, w.begin() + at + count);
    at += count;
    return taken;
  };
  h = b.logicalConstraint(h, stream, "input");
  std::vector<Value> norm1 = take(normSize);
  b.pushScope("attn");
  Value a = norm(h, norm1);
  KvCache cache;
  if (caching) {
    size_t layer = cacheOut.size();
    cache.positions = positions;
    cache.offsets = offsets;
    cache.slot = slot;
    if (slot) {
      cache.keys = cacheIn[layer];
      cache.values = cacheIn[layer + 1];
    }
  }
  Value attended =
      attention(b, a, take(4), d, form, caching ? &cache : nullptr);
  if (caching) {
    cacheOut.push_back(cache.newKeys);
    cacheOut.push_back(cache.newValues);
  }
  b.popScope();
  h = b.logicalConstraint(b.add(h, attended, "attn.residual"), stream,
                          "attn.output");
  std::vector<Value> norm2 = take(normSize);
  h = feedForward(h, norm2, take(moe ? 3 : c.swiglu ? 3 : 2));
  first = false;
  return h;
}

Value TransformerLayer::norm(Value h, const std::vector<Value> &weights) {
  return b.logicalConstraint(
      b.norm(h, weights[0], normSize == 2 ? weights[1] : Value(), "norm"),
      normed, "norm.layout");
}

Value TransformerLayer::feedForward(Value h, const std::vector<Value> &norm2,
                                    const std::vector<Value> &w) {
  if (moe) {
    b.pushScope("moe");
    Value m = norm(h, norm2);
    Value y = moeBlock(b, m, w, d, groups, c.topK, capacity, auxLoss,
                       first && c.exposeDispatch ? &dispatch : nullptr);
    b.popScope();
    return b.add(h, y, "moe.residual");
  }
  b.pushScope("mlp");
  Value m = norm(h, norm2);
  Value y = mlpBlock(b, m, w, d, c.swiglu, "bsd,df->bsf", "bsf,fd->bsd");
  b.popScope();
  return b.add(h, y, "mlp.residual");
}

/// A reward model's score of each row of `x` [B, S, D] (after the final
/// norm): the scalar head at the row's last response token, the last
/// position `mask` [B, S] marks (mask[s] = 1 and mask[s + 1] = 0).
Value rewardScores(ModelBuilder &b, const Dims &d, Value x, Value mask) {
  Value head = b.param("reward.head", {d.D}, {"embed"});
  b.pushScope("reward");
  Value perToken =
      b.einsum("bsd,d->bs", ValueRange{x, head}, {d.B, d.S}, "per.token");
  Value next =
      b.concatenate(ValueRange{b.slice(mask, {0, 1}, {d.B, d.S}, "next.mask"),
                               b.constant(0.0, {d.B, 1}, "after.last")},
                    1, "next");
  Value last =
      b.mul(mask, b.sub(b.constant(1.0, {d.B, d.S}, "one"), next, "not.next"),
            "last.token");
  Value scores = b.reduce(ReductionKind::Sum, b.mul(perToken, last, "at.last"),
                          {1}, "scores");
  b.popScope();
  return scores;
}

/// The clipped surrogate objective over the response tokens `mask` marks
/// (PPO's, Schulman et al. 2017; GRPO's, Shao et al. 2024): with ratio
/// r = exp(logp - old_logp) and advantage A per token, the mean of
/// -min(r A, clip(r, 1 - eps, 1 + eps) A); grpo adds beta times the k3
/// estimate of KL(policy || reference), exp(ref - logp) - (ref - logp) - 1,
/// per token; ppo adds valueWeight * (V - returns)^2 / 2 per token.
Value reinforcementLoss(ModelBuilder &b, const ModelConfig &c, Value nll,
                        Value values, const TransformerInputs &in) {
  b.pushScope("rl");
  Shape shape = ModelBuilder::shapeOf(nll);
  auto splat = [&](double value, const std::string &name) {
    return b.constant(value, shape, name);
  };
  Value logp = b.neg(nll, "logp");
  Value ratio = b.exp(b.sub(logp, in.oldLogp, "log.ratio"), "ratio");
  Value clipped =
      b.min(b.max(ratio, splat(1 - c.clipRange, "clip.low"), "clip.above"),
            splat(1 + c.clipRange, "clip.high"), "clipped");
  Value objective =
      b.min(b.mul(ratio, in.advantages, "surrogate"),
            b.mul(clipped, in.advantages, "surrogate.clipped"), "pessimistic");
  if (in.refLogp && c.klBeta > 0) {
    Value gap = b.sub(in.refLogp, logp, "ref.gap");
    Value kl = b.sub(b.sub(b.exp(gap, "ref.ratio"), gap, "kl.part"),
                     splat(1.0, "one"), "kl");
    objective =
        b.sub(objective, b.mul(kl, splat(c.klBeta, "beta"), "kl.weighted"),
              "penalized");
  }
  Value count = b.reduce(ReductionKind::Sum, in.mask, {0, 1}, "tokens");
  Value total =
      b.reduce(ReductionKind::Sum, b.mul(objective, in.mask, "masked"), {0, 1},
               "objective.sum");
  Value loss = b.neg(b.div(total, count, "objective.mean"), "policy.loss");
  if (values) {
    Value error = b.sub(values, in.returns, "value.error");
    Value squared =
        b.mul(b.mul(error, error, "value.squared"),
              splat(0.5 * c.valueWeight, "value.weight"), "value.weighted");
    Value sum =
        b.reduce(ReductionKind::Sum, b.mul(squared, in.mask, "value.masked"),
                 {0, 1}, "value.sum");
    loss = b.add(loss, b.div(sum, count, "value.loss"), "loss");
  }
  b.popScope();
  return loss;
}

/// The function's results after the layers' output `x`: the final norm
/// and the head's logits, or with a loss the loss (plus the weighted MoE
/// auxiliary loss); then the first layer's dispatch, when exposed.
std::vector<Value> transformerResults(ModelBuilder &b, const ModelConfig &c,
                                      const Dims &d, Value x,
                                      const TransformerInputs &in,
                                      const TransformerLayer &layer) {
  x = b.logicalConstraint(x, layer.stream, "final.input");
  Value gamma = b.param("final.norm.scale", {d.D}, {"norm"});
  Value beta =
      c.rmsNorm ? Value() : b.param("final.norm.bias", {d.D}, {"norm"});
  bool reward = c.objective == "reward" || c.objective == "score";
  Value head =
      reward ? Value() : b.param("head", {d.D, d.V}, {"embed", "vocab"});
  // PPO's value head comes after the language model's parameters (so
  // --init-from takes them from a language model's checkpoint).
  Value valueHead =
      c.valueHead ? b.param("value.head", {d.D}, {"embed"}) : Value();
  x = b.logicalConstraint(b.norm(x, gamma, beta, "final.norm"), layer.normed,
                          "final.norm.layout");
  std::vector<Value> results;
  if (generating(c)) {
    // The next token's logits [B, V]: at each row's last prompt position
    // (prefill) or its one new position (decode); then the caches.
    Value row = in.last
                    ? b.einsum("bsd,bs->bd",
                               ValueRange{x, oneHot(b, in.last, d.S, "last")},
                               {d.B, d.D}, "last.hidden")
                    : b.reshape(x, {d.B, d.D}, "last.hidden");
    results.push_back(
        b.einsum("bd,dv->bv", ValueRange{row, head}, {d.B, d.V}, "logits"));
    results.insert(results.end(), layer.cacheOut.begin(), layer.cacheOut.end());
    // A decode step's caches are its cache inputs' new values, laid out as
    // they are: the runtime keeps them in device memory between steps.
    for (size_t c = 0; c < in.caches.size(); ++c)
      b.aliasResult(static_cast<unsigned>(1 + c), in.caches[c]);
    return results;
  }
  if (reward) {
    // A reward model: a scalar head in place of the vocabulary's, its
    // parameter last (the language model's others come first, in the
    // same order: --init-from takes them from a language model).
    Value scores = rewardScores(b, d, x, in.mask);
    results.push_back(c.objective == "score"
                          ? scores
                          : pairLoss(b, scores, 1.0, "bradley.terry"));
    if (layer.dispatch)
      results.push_back(layer.dispatch);
    return results;
  }
  Value logits =
      b.einsum("bsd,dv->bsv", ValueRange{x, head}, {d.B, d.S, d.V}, "logits");
  Value values = valueHead ? b.einsum("bsd,d->bs", ValueRange{x, valueHead},
                                      {d.B, d.S}, "values")
                           : Value();
  if (c.objective == "tokenlogp") {
    results.push_back(b.neg(tokenNll(b, logits, in.targets), "token.logp"));
    if (values)
      results.push_back(values);
    return results;
  }
  if (reinforcing(c)) {
    results.push_back(
        reinforcementLoss(b, c, tokenNll(b, logits, in.targets), values, in));
    return results;
  }
  if (c.noLoss) {
    results.push_back(logits);
  } else {
    Value loss = crossEntropy(b, logits, in.targets, in.mask, &c, in.refLogp);
    Value auxLoss = layer.auxLoss;
    if (auxLoss && c.objective != "logprob")
      loss = b.add(loss,
                   b.mul(auxLoss, b.scalarLike(0.01, auxLoss, "aux.weight"),
                         "aux.weighted"),
                   "total_loss");
    results.push_back(loss);
  }
  if (layer.dispatch)
    results.push_back(layer.dispatch);
  return results;
}

Expected<OwningOpRef<ModuleOp>>
buildTransformer(ModelBuilder &b, const ModelConfig &c, const Mesh &mesh) {
  bool moe = c.model == "moe";
  Dims d{c.batch,
         c.seq,
         c.dModel,
         c.heads,
         c.kvHeads ? c.kvHeads : c.heads,
         c.dModel / c.heads,
         c.mlpRatio * c.dModel,
         c.vocab,
         c.experts,
         c.layers};
  if (Status status = checkTransformer(c, d); !status.ok())
    return status;
  int64_t groups = moeGroups(c, mesh);
  int64_t capacity = 0;
  if (moe) {
    Expected<int64_t> perExpert = moeCapacity(c, groups);
    if (!perExpert)
      return perExpert.status();
    capacity = *perExpert;
  }

  if (generating(c) && (moe || c.scan))
    return Status::error(std::string("generation takes a gpt without ") +
                         (moe ? "experts (--model moe routes a decode "
                                "step's tokens unlike the whole sequence's)"
                              : "--scan (its caches would be carried through "
                                "the layer loop)"));
  b.beginFunction(c.model);
  TransformerInputs in = transformerInputs(b, c, d);
  Expected<AttentionForm> form =
      attentionForm(c.rotary, c.causal || generating(c), c.contextAttention, d,
                    generating(c) ? Mesh() : mesh);
  if (!form)
    return form.status();
  form->balanced = balanceRing(b, c, d, *form, in);
  Value x = embedTokens(b, c, d, in.tokens, in.positions);
  std::vector<LayerParam> params = transformerLayerParams(c, d, moe);
  TransformerLayer layer{
      b, c, d, moe, groups, capacity, c.rmsNorm ? size_t(1) : size_t(2)};
  layer.caching = generating(c);
  layer.form = *form;
  // A sequence split over the context axis stays split into the block's
  // matrix products (docs/LongContext.md).
  if (form->contextSize > 1)
    layer.normed = {"batch", "seq", ""};
  layer.positions = in.positions;
  layer.offsets = in.offsets;
  layer.slot = in.slot;
  layer.cacheIn = in.caches;
  if (moe && c.scan)
    return Status::error("--scan is not available for moe (its auxiliary "
                         "loss would have to be carried through the loop); "
                         "use the unrolled layers");
  x = layerStack(
      b, d.L, c.scan, params, x,
      [&](Value h, const std::vector<Value> &w) { return layer(h, w); });
  std::vector<Value> results = transformerResults(b, c, d, x, in, layer);
  return b.finish(results);
}

Expected<OwningOpRef<ModuleOp>> buildMlp(ModelBuilder &b, const ModelConfig &c) {
  int64_t B = c.batch, D = c.dModel, F = c.mlpRatio * c.dModel;
  b.beginFunction("mlp");
  Value x = b.input("x", {B, D}, {"batch", "embed"}, b.element());
  Value target;
  if (!c.noLoss)
    target = b.input("target", {B, D}, {"batch", "embed"}, b.element());
  std::vector<LayerParam> params = {{"w1", {D, F}, {"embed", "mlp"}},
                                    {"b1", {F}, {"mlp"}},
                                    {"w2", {F, D}, {"mlp", "embed"}},
                                    {"b2", {D}, {"embed"}}};
  auto block = [&](Value h, const std::vector<Value> &w) -> Value {
    Value up = b.einsum("bd,df->bf", ValueRange{h, w[0]}, {B, F}, "up");
    up = b.add(up, b.broadcast(w[1], {B, F}, {1}, "b1.b"), "up.biased");
    Value act = b.gelu(up, "gelu");
    Value down = b.einsum("bf,fd->bd", ValueRange{act, w[2]}, {B, D}, "down");
    down = b.add(down, b.broadcast(w[3], {B, D}, {1}, "b2.b"), "down.biased");
    return b.add(h, down, "residual");
  };
  Value out = layerStack(b, c.layers, c.scan, params, x, block);
  if (c.noLoss)
    return b.finish({out});
  b.pushScope("loss");
  Value diff = b.sub(out, target, "diff");
  Value loss = b.mean(b.mul(diff, diff, "squared"), {0, 1}, "mse");
  b.popScope();
  return b.finish({loss});
}

Expected<OwningOpRef<ModuleOp>> buildFfn(ModelBuilder &b, const ModelConfig &c) {
  Dims d{c.batch, c.seq, c.dModel, 0, 0, 0, c.mlpRatio * c.dModel, 0, 0, 0};
  b.beginFunction("ffn");
  Value x = b.input("x", {d.B, d.S, d.D}, {"batch", "seq", "embed"}, b.element());
  Value w1 = b.param("mlp.w1", {d.D, d.F}, {"embed", "mlp"});
  Value w2 = b.param("mlp.w2", {d.F, d.D}, {"mlp", "embed"});
  std::vector<Value> weights = {w1, w2};
  if (c.swiglu)
    weights.push_back(b.param("mlp.w3", {d.D, d.F}, {"embed", "mlp"}));
  b.pushScope("mlp");
  Value y = mlpBlock(b, x, weights, d, c.swiglu, "bsd,df->bsf", "bsf,fd->bsd");
  b.popScope();
  return b.finish({y});
}

} // namespace

const char *partita::modelNames() { return "mlp, ffn, gpt, moe"; }

int64_t partita::moeGroups(const ModelConfig &c, const Mesh &mesh) {
  if (c.groups != 0)
    return c.groups;
  int64_t groups = mesh.axisIndex("data") >= 0 ? mesh.axisSize("data") : 1;
  return c.batch % groups == 0 ? groups : 1;
}

Expected<OwningOpRef<ModuleOp>>
partita::buildModel(MLIRContext *context, const ModelConfig &config,
                    const Mesh &mesh) {
  auto positive = [](int64_t value, const char *flag) -> Status {
    if (value < 1)
      return Status::error(std::string(flag) + " must be at least 1, got " +
                           std::to_string(value));
    return Status::success();
  };
  for (auto [value, flag] :
       {std::pair<int64_t, const char *>{config.layers, "--layers"},
        {config.dModel, "--d-model"},
        {config.heads, "--heads"},
        {config.seq, "--seq"},
        {config.batch, "--batch"},
        {config.vocab, "--vocab"},
        {config.mlpRatio, "--mlp-ratio"},
        {config.experts, "--experts"}})
    if (Status status = positive(value, flag); !status.ok())
      return status;
  if (config.kvHeads < 0)
    return Status::error("--kv-heads must be positive");
  Type element;
  if (config.dtype == "f32")
    element = Float32Type::get(context);
  else if (config.dtype == "bf16")
    element = BFloat16Type::get(context);
  else
    return Status::error("--dtype must be f32 or bf16, got '" + config.dtype +
                         "'");
  if (config.lossMask && config.model != "gpt" && config.model != "moe")
    return Status::error("a loss mask (--loss-mask, --objective sft) needs "
                         "--model gpt or moe");
  if (config.objective != "mean" && config.objective != "dpo" &&
      config.objective != "logprob" && config.objective != "reward" &&
      config.objective != "score" && !generating(config) &&
      !reinforcing(config) && config.objective != "tokenlogp")
    return Status::error("unknown objective '" + config.objective + "'");
  if (config.objective != "mean" && !config.lossMask && !generating(config) &&
      config.objective != "tokenlogp")
    return Status::error("the " + config.objective +
                         " objective needs a loss mask");
  if ((config.objective == "dpo" || config.objective == "reward") &&
      config.batch % 2 != 0)
    return Status::error(config.objective + " takes pairs of rows: --batch (" +
                         std::to_string(config.batch) + ") must be even");
  ModelBuilder builder(context, config.model, element);
  builder.addMesh(mesh);
  if (config.model == "gpt" || config.model == "moe")
    return buildTransformer(builder, config, mesh);
  if (config.model == "mlp")
    return buildMlp(builder, config);
  if (config.model == "ffn")
    return buildFfn(builder, config);
  return Status::error("unknown model '" + config.model +
                       "' (models: " + modelNames() + ")");
}
