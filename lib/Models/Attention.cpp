//===- Attention.cpp - The transformer's attention, cached or not ---------===//
//
// A prefill and a decode step compute the same scores as the whole-sequence
// forward pass: the same einsums, the same -1e9 added where a key lies
// after its query, the same softmax. The decode step only reads its keys
// and values from the cache instead of computing them all again, so its
// logits equal the forward pass's at every position up to rounding
// (docs/Models.md, "Generation").
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "partita/Sharding/Sharding.h"

#include <cmath>

using namespace mlir;
using namespace partita;
using namespace partita::models;

namespace {

using Shape = std::vector<int64_t>;

/// Rotary position embedding of q or k [B, Sq, heads, K] (rotate-half
/// form): at positions 0..Sq-1, or at `positions` ([B, Sq] or [B]).
Value rotary(ModelBuilder &b, Value x, const Dims &d, Value positions,
             const std::string &name) {
  Shape shape = ModelBuilder::shapeOf(x);
  int64_t half = d.K / 2;
  std::vector<float> cosines, sines;
  for (int64_t s = 0; s < d.S; ++s)
    for (int64_t i = 0; i < half; ++i) {
      double angle = s * std::pow(10000.0, -2.0 * i / d.K);
      cosines.push_back(static_cast<float>(std::cos(angle)));
      sines.push_back(static_cast<float>(std::sin(angle)));
    }
  Shape halfShape = {shape[0], shape[1], shape[2], half};
  Value cosTable = b.constantData(cosines, {d.S, half}, name + ".cos");
  Value sinTable = b.constantData(sines, {d.S, half}, name + ".sin");
  Value cos, sin;
  if (positions) {
    // Each row's angles: the tables' rows at its positions.
    std::vector<int64_t> dims = ModelBuilder::shapeOf(positions).size() == 1
                                    ? std::vector<int64_t>{0, 3}
                                    : std::vector<int64_t>{0, 1, 3};
    cos = b.broadcast(b.gather(cosTable, positions, name + ".cos.at"),
                      halfShape, dims, name + ".cos.b");
    sin = b.broadcast(b.gather(sinTable, positions, name + ".sin.at"),
                      halfShape, dims, name + ".sin.b");
  } else {
    cos = b.broadcast(cosTable, halfShape, {1, 3}, name + ".cos.b");
    sin = b.broadcast(sinTable, halfShape, {1, 3}, name + ".sin.b");
  }
  Value x1 = b.slice(x, {0, 0, 0, 0}, {shape[0], shape[1], shape[2], half},
                     name + ".x1");
  Value x2 = b.slice(x, {0, 0, 0, half}, shape, name + ".x2");
  Value r1 = b.sub(b.mul(x1, cos, name + ".x1cos"),
                   b.mul(x2, sin, name + ".x2sin"), name + ".r1");
  Value r2 = b.add(b.mul(x1, sin, name + ".x1sin"),
                   b.mul(x2, cos, name + ".x2cos"), name + ".r2");
  return b.concatenate(ValueRange{r1, r2}, 3, name);
}

/// `x` [B, Sq, N, K] heads-major, [B, N, Sq, K] (for one position a
/// reshape: the same elements in the same order).
Value toCacheLayout(ModelBuilder &b, Value x, const std::string &name) {
  Shape shape = ModelBuilder::shapeOf(x);
  Shape heads = {shape[0], shape[2], shape[1], shape[3]};
  return shape[1] == 1 ? b.reshape(x, heads, name)
                       : b.transpose(x, {0, 2, 1, 3}, name);
}

/// `fresh` [B, N, 1, K] written into `cache` [B, N, S, K] at `slot`: one
/// slot of every row, in place (the cache is donated).
Value writeCache(ModelBuilder &b, Value cache, Value fresh, Value slot,
                 const std::string &name) {
  // No layout constraint: the result is the cache input's new value
  // (partita.aliases), laid out as it, and a constraint would copy it.
  Value zero = b.constant(0, {}, name + ".zero", b.ops().getI32Type());
  return b.dynamicUpdateSlice(cache, fresh, ValueRange{zero, zero, slot, zero},
                              name);
}

/// -1e9 where `hidden` holds, 0 elsewhere.
Value maskOf(ModelBuilder &b, Value hidden, const Shape &shape) {
  return b.select(hidden, b.constant(-1e9, shape, "mask.hidden"),
                  b.constant(0.0, shape, "mask.visible"), "mask");
}

/// What is added to the scores: -1e9 where a key may not be seen, 0
/// elsewhere, broadcast to `shape` (the scores', queries then keys last).
/// Whole sequence: keys after their query, from two iotas (not stored: S^2
/// elements per layer in every Executable otherwise); prefill, also a row's
/// padding slots; decode: a row's slots before its first or after `slot`.
Value causalMask(ModelBuilder &b, const Dims &d, const KvCache *cache,
                 const Shape &shape) {
  Type index = b.ops().getI32Type();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (cache && cache->slot) {
    Shape rows = {d.B, d.S};
    Value key = b.iota(rows, 1, index, "mask.t");
    Value slot = b.broadcast(cache->slot, rows, {}, "mask.slot");
    // The row's first slot: the step's slot less its position.
    Value first =
        b.sub(slot, b.broadcast(cache->positions, rows, {0}, "mask.position"),
              "mask.first");
    Value after = maskOf(
        b, b.compare(CompareDirection::GT, key, slot, "mask.future"), rows);
    Value before = maskOf(
        b, b.compare(CompareDirection::LT, key, first, "mask.padding"), rows);
    return b.broadcast(b.add(after, before, "mask.both"), shape, {0, rank - 1},
                       "mask.b");
  }
  Value query = b.iota({d.S, d.S}, 0, index, "mask.s");
  Value key = b.iota({d.S, d.S}, 1, index, "mask.t");
  Value causal =
      maskOf(b, b.compare(CompareDirection::GT, key, query, "mask.future"),
             {d.S, d.S});
  if (!cache || !cache->offsets)
    return b.broadcast(causal, shape, {rank - 2, rank - 1}, "mask.b");
  Shape rows = {d.B, d.S, d.S};
  Value keys = b.iota(rows, 2, index, "mask.key");
  Value first = b.broadcast(cache->offsets, rows, {0}, "mask.first");
  Value padding = maskOf(
      b, b.compare(CompareDirection::LT, keys, first, "mask.padding"), rows);
  Value both = b.add(b.broadcast(causal, rows, {1, 2}, "mask.causal"), padding,
                     "mask.both");
  return b.broadcast(both, shape, {0, rank - 2, rank - 1}, "mask.b");
}

/// One manual sharding dimension: over `axis`, or whole for "".
DimSharding over(const std::string &axis) {
  DimSharding dim;
  if (!axis.empty())
    dim.axes = {axis};
  return dim;
}

/// Sends every device's `x` to the next device of the context ring (the
/// last to the first).
Value toNextOnRing(ModelBuilder &b, Value x, int64_t size,
                   const std::string &name) {
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < size; ++i) {
    pairs.push_back(i);
    pairs.push_back((i + 1) % size);
  }
  OpBuilder &ops = b.ops();
  return CollectivePermuteOp::create(
      ops, b.loc(name), x.getType(), x,
      FlatSymbolRefAttr::get(b.context(), "mesh"),
      ops.getStrArrayAttr({"context"}), ops.getDenseI64ArrayAttr(pairs));
}

/// Ring attention on one device's blocks: queries `q` [b, s, n, g, k]
/// (scaled) stay; keys and values [b, t, n, k] (and, causal, their
/// positions [t]) travel one step around the ring per trip while a running
/// maximum `m`, sum `l` and weighted sum `acc` combine each block's
/// softmax (the online-softmax form; the weighted sum heads-major,
/// [b, n, g, s, k]). The loop's backward recomputes each
/// trip from its saved carries, so no device holds more than one block of
/// scores: [s, t] = (S/cp)^2 per head. Returns the context [b, s, n, g, k].
Value ringBlocks(ModelBuilder &b, Value q, Value k, Value v, Value positions,
                 int64_t size) {
  Shape qs = ModelBuilder::shapeOf(q);
  int64_t B = qs[0], S = qs[1], N = qs[2], G = qs[3];
  Shape rows = {B, N, G, S};
  OpBuilder &ops = b.ops();
  std::vector<Value> inits = {k, v};
  if (positions)
    inits.push_back(positions);
  inits.push_back(b.constant(-1e30, rows, "ring.max.init"));
  inits.push_back(b.constant(0.0, rows, "ring.sum.init"));
  Shape heads = {B, N, G, S, qs[4]};
  inits.push_back(b.constant(0.0, heads, "ring.acc.init"));
  SmallVector<Type> types;
  for (Value init : inits)
    types.push_back(init.getType());
  auto loop = LoopOp::create(ops, b.loc("ring"), types, inits,
                             static_cast<uint64_t>(size));
  Block *body = new Block();
  loop.getBody().push_back(body);
  body->addArgument(b.tensorType({}, ops.getI32Type()), b.loc("ring.trip"));
  std::vector<Value> carried;
  for (Type type : types)
    carried.push_back(body->addArgument(type, b.loc("ring.carried")));
  OpBuilder::InsertionGuard guard(ops);
  ops.setInsertionPointToStart(body);
  size_t at = 0;
  Value kb = carried[at++], vb = carried[at++];
  Value kp = positions ? carried[at++] : Value();
  Value m = carried[at++], l = carried[at++], acc = carried[at++];
  Shape block = {B, N, G, S, S};
  Value scores =
      b.einsum("bsngk,btnk->bngst", ValueRange{q, kb}, block, "ring.scores");
  if (kp) {
    // Hidden: a key after its query, by their positions in the sequence.
    Value later = b.compare(
        CompareDirection::GT, b.broadcast(kp, {S, S}, {1}, "ring.key.pos"),
        b.broadcast(positions, {S, S}, {0}, "ring.query.pos"), "ring.future");
    scores = b.add(
        scores,
        b.broadcast(maskOf(b, later, {S, S}), block, {3, 4}, "ring.mask.b"),
        "ring.scores.masked");
  }
  // The maximum only keeps exp in range: the result does not depend on it,
  // so it carries no gradient.
  Value peak = b.stopGradient(
      b.max(m, b.reduce(ReductionKind::Max, scores, {4}, "ring.block.max"),
            "ring.max"));
  Value probs =
      b.exp(b.sub(scores, b.broadcast(peak, block, {0, 1, 2, 3}, "ring.max.b"),
                  "ring.shift"),
            "ring.probs");
  Value rescale = b.exp(b.sub(m, peak, "ring.max.change"), "ring.rescale");
  Value sum = b.add(b.mul(l, rescale, "ring.sum.old"),
                    b.reduce(ReductionKind::Sum, probs, {4}, "ring.block.sum"),
                    "ring.sum");
  Value weighted = b.einsum("bngst,btnk->bngsk", ValueRange{probs, vb}, heads,
                            "ring.block.context");
  Value next = b.add(
      b.mul(acc, b.broadcast(rescale, heads, {0, 1, 2, 3}, "ring.rescale.b"),
            "ring.acc.old"),
      weighted, "ring.acc");
  SmallVector<Value> yields = {toNextOnRing(b, kb, size, "ring.keys.next"),
                               toNextOnRing(b, vb, size, "ring.values.next")};
  if (kp)
    yields.push_back(toNextOnRing(b, kp, size, "ring.positions.next"));
  yields.append({peak, sum, next});
  YieldOp::create(ops, b.loc("ring.yield"), yields);
  ops.setInsertionPointAfter(loop);
  Value total = loop.getResult(static_cast<unsigned>(types.size()) - 2);
  Value weightedSum = loop.getResult(static_cast<unsigned>(types.size()) - 1);
  Value context =
      b.div(weightedSum, b.broadcast(total, heads, {0, 1, 2, 3}, "ring.sum.b"),
            "ring.context.heads");
  return b.transpose(context, {0, 3, 1, 2, 4}, "ring.context");
}

/// Ulysses on one device's blocks: an all_to_all turns the sequence split
/// of `q` [b, s, h, k], `k` and `v` [b, s, n, k] into a head split over the
/// context axis, each device attends its heads over the whole sequence,
/// and a second all_to_all turns the result back.
Value ulyssesBlocks(ModelBuilder &b, Value q, Value k, Value v, int64_t size,
                    bool causal) {
  OpBuilder &ops = b.ops();
  auto mesh = FlatSymbolRefAttr::get(b.context(), "mesh");
  auto exchange = [&](Value x, int64_t split, int64_t concat,
                      const std::string &name) {
    Shape shape = ModelBuilder::shapeOf(x);
    shape[split] /= size;
    shape[concat] *= size;
    return AllToAllOp::create(
        ops, b.loc(name), b.tensorType(shape, b.element()), x, mesh,
        ops.getStrArrayAttr({"context"}), ops.getI64IntegerAttr(split),
        ops.getI64IntegerAttr(concat));
  };
  Value qh = exchange(q, 2, 1, "ulysses.q"),
        kh = exchange(k, 2, 1, "ulysses.k"),
        vh = exchange(v, 2, 1, "ulysses.v");
  Shape qs = ModelBuilder::shapeOf(qh), ks = ModelBuilder::shapeOf(kh);
  int64_t B = qs[0], S = qs[1], H = qs[2], K = qs[3], N = ks[2], G = H / N;
  Shape block = {B, N, G, S, S};
  Value scores = b.einsum(
      "bsngk,btnk->bngst",
      ValueRange{b.reshape(qh, {B, S, N, G, K}, "ulysses.q.grouped"), kh},
      block, "ulysses.scores");
  if (causal) {
    Type index = ops.getI32Type();
    Value later =
        b.compare(CompareDirection::GT, b.iota({S, S}, 1, index, "ulysses.key"),
                  b.iota({S, S}, 0, index, "ulysses.query"), "ulysses.future");
    scores = b.add(
        scores,
        b.broadcast(maskOf(b, later, {S, S}), block, {3, 4}, "ulysses.mask.b"),
        "ulysses.scores.masked");
  }
  Value out = b.einsum("bngst,btnk->bsngk",
                       ValueRange{b.softmax(scores, "ulysses.probs"), vh},
                       {B, S, N, G, K}, "ulysses.context.grouped");
  return exchange(b.reshape(out, {B, S, H, K}, "ulysses.context"), 1, 2,
                  "ulysses.back");
}

/// Attention on a sequence split over the context axis, as a manual
/// computation over the context axis and the axes splitting the batch and
/// heads inside: `q` [B, S, H, K] (scaled), `k` and `v` [B, S, N, K] in,
/// the context [B, S, H, K] out (docs/LongContext.md).
Value splitAttention(ModelBuilder &b, Value q, Value k, Value v, const Dims &d,
                     const AttentionForm &form) {
  OpBuilder &ops = b.ops();
  MLIRContext *context = b.context();
  auto mesh = FlatSymbolRefAttr::get(context, "mesh");
  bool ring = form.context == "ring";
  Value positions;
  if (ring && form.causal)
    positions = b.iota({d.S}, 0, ops.getI32Type(), "ring.positions");
  Sharding heads, sequence;
  heads.dims = {over(form.batchAxis), over("context"), over(form.headAxis),
                over("")};
  sequence.dims = {over("context")};
  Attribute headsAttr = ShardingAttr::fromSharding(context, mesh, heads);
  SmallVector<Value> operands = {q, k, v};
  SmallVector<Attribute> in = {headsAttr, headsAttr, headsAttr};
  if (positions) {
    operands.push_back(positions);
    in.push_back(ShardingAttr::fromSharding(context, mesh, sequence));
  }
  std::vector<std::string> axes = {"context"};
  for (const std::string &axis : {form.batchAxis, form.headAxis})
    if (!axis.empty())
      axes.push_back(axis);
  auto manual = ManualComputationOp::create(
      ops, b.loc(form.context), TypeRange{q.getType()}, operands,
      ops.getArrayAttr(in), ops.getArrayAttr({headsAttr}),
      ops.getStrArrayAttr(std::vector<StringRef>(axes.begin(), axes.end())));
  Block *body = new Block();
  manual.getBody().push_back(body);
  auto local = [&](Value x) {
    Shape shape = ModelBuilder::shapeOf(x);
    shape[1] /= form.contextSize;
    shape[0] /= form.batchSize;
    shape[2] /= form.headSize;
    auto element = cast<RankedTensorType>(x.getType()).getElementType();
    return body->addArgument(b.tensorType(shape, element), x.getLoc());
  };
  Value lq = local(q), lk = local(k), lv = local(v);
  Value lp;
  if (positions)
    lp = body->addArgument(
        b.tensorType({d.S / form.contextSize}, ops.getI32Type()),
        positions.getLoc());
  OpBuilder::InsertionGuard guard(ops);
  ops.setInsertionPointToStart(body);
  Shape qs = ModelBuilder::shapeOf(lq), ks = ModelBuilder::shapeOf(lk);
  Value out;
  if (ring) {
    Shape grouped = {qs[0], qs[1], ks[2], qs[2] / ks[2], qs[3]};
    out = b.reshape(ringBlocks(b, b.reshape(lq, grouped, "ring.q.grouped"), lk,
                               lv, lp, form.contextSize),
                    qs, "ring.out");
  } else {
    out = ulyssesBlocks(b, lq, lk, lv, form.contextSize, form.causal);
  }
  YieldOp::create(ops, b.loc("context.yield"), ValueRange{out});
  return manual.getResult(0);
}

} // namespace

std::vector<std::string> partita::models::cacheAxes() {
  return {"batch", "kv_heads", "", "head_dim"};
}

Value partita::models::attention(ModelBuilder &b, Value x,
                                 const std::vector<Value> &w, const Dims &d,
                                 const AttentionForm &form, KvCache *cache) {
  // w: wq [D, H, K], wk [D, N, K], wv [D, N, K], wo [H, K, D]
  int64_t Sq = ModelBuilder::shapeOf(x)[1], Sk = d.S;
  Value positions = cache ? cache->positions : Value();
  bool decoding = cache && cache->slot;
  Value q =
      b.einsum("bsd,dhk->bshk", ValueRange{x, w[0]}, {d.B, Sq, d.H, d.K}, "q");
  Value k =
      b.einsum("bsd,dnk->bsnk", ValueRange{x, w[1]}, {d.B, Sq, d.N, d.K}, "k");
  Value v =
      b.einsum("bsd,dnk->bsnk", ValueRange{x, w[2]}, {d.B, Sq, d.N, d.K}, "v");
  if (form.rotary) {
    q = rotary(b, q, d, positions, "q.rotary");
    k = rotary(b, k, d, positions, "k.rotary");
  }
  // Generation keeps keys and values heads-major, [B, N, S, K]: a decode
  // step's query reads each head's keys as one contiguous block.
  std::string keyIndices = "bthk", groupedKeys = "btnk";
  if (cache) {
    k = toCacheLayout(b, k, "k.heads");
    v = toCacheLayout(b, v, "v.heads");
    keyIndices = "bhtk";
    groupedKeys = "bntk";
  }
  if (decoding) {
    k = writeCache(b, cache->keys, k, cache->slot, "cache.keys");
    v = writeCache(b, cache->values, v, cache->slot, "cache.values");
  }
  if (cache) {
    cache->newKeys =
        decoding ? k : b.logicalConstraint(k, cacheAxes(), "cache.keys");
    cache->newValues =
        decoding ? v : b.logicalConstraint(v, cacheAxes(), "cache.values");
  }
  q = b.mul(q,
            b.scalarLike(1.0 / std::sqrt(static_cast<double>(d.K)), q, "scale"),
            "q.scaled");
  Value context;
  if (form.contextSize > 1 && !cache)
    context = splitAttention(b, q, k, v, d, form);
  else if (d.N == d.H) {
    Shape shape = {d.B, d.H, Sq, Sk};
    Value scores = b.einsum("bshk," + keyIndices + "->bhst", ValueRange{q, k},
                            shape, "scores");
    if (form.causal || cache)
      scores = b.add(scores, causalMask(b, d, cache, shape), "scores.masked");
    Value probs = b.softmax(scores, "probs");
    context = b.einsum("bhst," + keyIndices + "->bshk", ValueRange{probs, v},
                       {d.B, Sq, d.H, d.K}, "context");
  } else {
    int64_t G = d.H / d.N;
    Shape shape = {d.B, d.N, G, Sq, Sk};
    Value grouped = b.reshape(q, {d.B, Sq, d.N, G, d.K}, "q.grouped");
    Value scores = b.einsum("bsngk," + groupedKeys + "->bngst",
                            ValueRange{grouped, k}, shape, "scores");
    if (form.causal || cache)
      scores = b.add(scores, causalMask(b, d, cache, shape), "scores.masked");
    Value probs = b.softmax(scores, "probs");
    Value out =
        b.einsum("bngst," + groupedKeys + "->bsngk", ValueRange{probs, v},
                 {d.B, Sq, d.N, G, d.K}, "context.grouped");
    context = b.reshape(out, {d.B, Sq, d.H, d.K}, "context");
  }
  return b.einsum("bshk,hkd->bsd", ValueRange{context, w[3]}, {d.B, Sq, d.D},
                  "out");
}

Expected<AttentionForm>
partita::models::attentionForm(bool rotary, bool causal,
                               const std::string &contextAttention,
                               const Dims &d, const Mesh &mesh) {
  AttentionForm form;
  form.rotary = rotary;
  form.causal = causal;
  int64_t size = mesh.axisSize("context");
  if (size <= 1)
    return form;
  form.context = contextAttention;
  form.contextSize = size;
  if (d.S % size != 0)
    return Status::error("--seq (" + std::to_string(d.S) +
                         ") must be a multiple of the mesh's context axis (" +
                         std::to_string(size) + ")");
  int64_t data = mesh.axisSize("data"), model = mesh.axisSize("model");
  if (data > 1 && d.B % data == 0) {
    form.batchAxis = "data";
    form.batchSize = data;
  }
  if (model > 1 && d.H % model == 0 && d.N % model == 0) {
    form.headAxis = "model";
    form.headSize = model;
  }
  if (contextAttention == "ulysses" && (d.N / form.headSize) % size != 0)
    return Status::error(
        "--context-attention ulysses splits the heads over the context axis: "
        "the key/value heads per device (" +
        std::to_string(d.N / form.headSize) +
        ") must be a multiple of the context axis (" + std::to_string(size) +
        "); use ring");
  return form;
}
