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
#include <functional>

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

/// Softmax attention of `q` [B, Sq, H, K] (scaled) over every key of `k`
/// and `v` ([B, S, N, K], or heads-major [B, N, S, K] with a cache), keys
/// after their query hidden when `causal` (causalMask); the context
/// [B, Sq, H, K]. `d` gives B, H, N, K and the keys' S.
Value wholeAttention(ModelBuilder &b, const Dims &d, Value q, Value k, Value v,
                     bool causal, const KvCache *cache) {
  int64_t Sq = ModelBuilder::shapeOf(q)[1], Sk = d.S;
  std::string keyIndices = cache ? "bhtk" : "bthk",
              groupedKeys = cache ? "bntk" : "btnk";
  if (d.N == d.H) {
    Shape shape = {d.B, d.H, Sq, Sk};
    Value scores = b.einsum("bshk," + keyIndices + "->bhst", ValueRange{q, k},
                            shape, "scores");
    if (causal)
      scores = b.add(scores, causalMask(b, d, cache, shape), "scores.masked");
    Value probs = b.softmax(scores, "probs");
    return b.einsum("bhst," + keyIndices + "->bshk", ValueRange{probs, v},
                    {d.B, Sq, d.H, d.K}, "context");
  }
  int64_t G = d.H / d.N;
  Shape shape = {d.B, d.N, G, Sq, Sk};
  Value grouped = b.reshape(q, {d.B, Sq, d.N, G, d.K}, "q.grouped");
  Value scores = b.einsum("bsngk," + groupedKeys + "->bngst",
                          ValueRange{grouped, k}, shape, "scores");
  if (causal)
    scores = b.add(scores, causalMask(b, d, cache, shape), "scores.masked");
  Value probs = b.softmax(scores, "probs");
  Value out = b.einsum("bngst," + groupedKeys + "->bsngk", ValueRange{probs, v},
                       {d.B, Sq, d.N, G, d.K}, "context.grouped");
  return b.reshape(out, {d.B, Sq, d.H, d.K}, "context");
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

/// The online softmax of one query block: the running maximum `m` and sum
/// `l` of each query row [b, n, g, s] and the weighted sum of values `acc`
/// [b, n, g, s, k] (heads-major).
struct Running {
  Value m, l, acc;
};

/// A start for `rows` query rows [b, n, g, s] and head width `K`.
Running startRunning(ModelBuilder &b, const Shape &rows, int64_t K) {
  Shape heads = rows;
  heads.push_back(K);
  return {b.constant(-1e30, rows, "ring.max.init"),
          b.constant(0.0, rows, "ring.sum.init"),
          b.constant(0.0, heads, "ring.acc.init")};
}

/// `run` after queries `q` [b, s, n, g, k] (scaled) attend keys and values
/// [b, t, n, k], with `mask` [s, t] (-1e9 where hidden) added if given.
Running attendBlock(ModelBuilder &b, const Running &run, Value q, Value k,
                    Value v, Value mask) {
  Shape qs = ModelBuilder::shapeOf(q), ks = ModelBuilder::shapeOf(k);
  int64_t B = qs[0], S = qs[1], N = qs[2], G = qs[3], T = ks[1];
  Shape block = {B, N, G, S, T}, heads = {B, N, G, S, qs[4]};
  Value scores =
      b.einsum("bsngk,btnk->bngst", ValueRange{q, k}, block, "ring.scores");
  if (mask)
    scores = b.add(scores, b.broadcast(mask, block, {3, 4}, "ring.mask.b"),
                   "ring.scores.masked");
  // The maximum only keeps exp in range: the result does not depend on it,
  // so it carries no gradient.
  Value peak = b.stopGradient(
      b.max(run.m, b.reduce(ReductionKind::Max, scores, {4}, "ring.block.max"),
            "ring.max"));
  Value probs =
      b.exp(b.sub(scores, b.broadcast(peak, block, {0, 1, 2, 3}, "ring.max.b"),
                  "ring.shift"),
            "ring.probs");
  Value rescale = b.exp(b.sub(run.m, peak, "ring.max.change"), "ring.rescale");
  Value sum = b.add(b.mul(run.l, rescale, "ring.sum.old"),
                    b.reduce(ReductionKind::Sum, probs, {4}, "ring.block.sum"),
                    "ring.sum");
  Value weighted = b.einsum("bngst,btnk->bngsk", ValueRange{probs, v}, heads,
                            "ring.block.context");
  Value acc =
      b.add(b.mul(run.acc,
                  b.broadcast(rescale, heads, {0, 1, 2, 3}, "ring.rescale.b"),
                  "ring.acc.old"),
            weighted, "ring.acc");
  return {peak, sum, acc};
}

/// The context [b, s, n, g, k] of a finished `run`.
Value finish(ModelBuilder &b, const Running &run) {
  Shape heads = ModelBuilder::shapeOf(run.acc);
  Value context =
      b.div(run.acc, b.broadcast(run.l, heads, {0, 1, 2, 3}, "ring.sum.b"),
            "ring.context.heads");
  return b.transpose(context, {0, 3, 1, 2, 4}, "ring.context");
}

/// -1e9 where a key's position is after its query's: positions [s] and
/// [t] give the mask [s, t].
Value positionMask(ModelBuilder &b, Value queries, Value keys) {
  int64_t S = ModelBuilder::shapeOf(queries)[0],
          T = ModelBuilder::shapeOf(keys)[0];
  Value later = b.compare(
      CompareDirection::GT, b.broadcast(keys, {S, T}, {1}, "ring.key.pos"),
      b.broadcast(queries, {S, T}, {0}, "ring.query.pos"), "ring.future");
  return maskOf(b, later, {S, T});
}

/// A loop of `trips` on `inits`; `body` gets the trip index (an i32
/// scalar) and the carried values and returns the next ones.
SmallVector<Value> ringLoop(
    ModelBuilder &b, int64_t trips, ArrayRef<Value> inits,
    const std::function<SmallVector<Value>(Value, ArrayRef<Value>)> &body) {
  OpBuilder &ops = b.ops();
  SmallVector<Type> types;
  for (Value init : inits)
    types.push_back(init.getType());
  auto loop = LoopOp::create(ops, b.loc("ring"), types, inits,
                             static_cast<uint64_t>(trips));
  Block *block = new Block();
  loop.getBody().push_back(block);
  Value trip = block->addArgument(b.tensorType({}, ops.getI32Type()),
                                  b.loc("ring.trip"));
  SmallVector<Value> carried;
  for (Type type : types)
    carried.push_back(block->addArgument(type, b.loc("ring.carried")));
  {
    OpBuilder::InsertionGuard guard(ops);
    ops.setInsertionPointToStart(block);
    YieldOp::create(ops, b.loc("ring.yield"), body(trip, carried));
  }
  return SmallVector<Value>(loop.getResults());
}

/// Ring attention on one device's blocks, the sequence in its own order:
/// queries `q` [b, s, n, g, k] (scaled) stay; keys and values [b, t, n, k]
/// (and, causal, their `positions` [t]) travel one step around the ring
/// per trip while the online softmax combines each block. Every block is
/// computed (a causal one masked). The loop's backward recomputes each
/// trip from its saved carries, so no device holds more than one block of
/// scores: (S/cp)^2 per head. Returns the context [b, s, n, g, k].
Value ringBlocks(ModelBuilder &b, Value q, Value k, Value v, Value positions,
                 int64_t size) {
  Shape qs = ModelBuilder::shapeOf(q);
  Running start = startRunning(b, {qs[0], qs[2], qs[3], qs[1]}, qs[4]);
  SmallVector<Value> inits = {k, v};
  if (positions)
    inits.push_back(positions);
  inits.append({start.m, start.l, start.acc});
  SmallVector<Value> out =
      ringLoop(b, size, inits, [&](Value, ArrayRef<Value> carried) {
        size_t at = positions ? 3 : 2;
        Value mask =
            positions ? positionMask(b, positions, carried[2]) : Value();
        Running next =
            attendBlock(b, {carried[at], carried[at + 1], carried[at + 2]}, q,
                        carried[0], carried[1], mask);
        SmallVector<Value> yields = {
            toNextOnRing(b, carried[0], size, "ring.keys.next"),
            toNextOnRing(b, carried[1], size, "ring.values.next")};
        if (positions)
          yields.push_back(
              toNextOnRing(b, carried[2], size, "ring.positions.next"));
        yields.append({next.m, next.l, next.acc});
        return yields;
      });
  size_t at = positions ? 3 : 2;
  return finish(b, {out[at], out[at + 1], out[at + 2]});
}

/// Half `half` (0 or 1) of `x` along `dim`.
Value halfOf(ModelBuilder &b, Value x, int64_t dim, int64_t half,
             const std::string &name) {
  Shape shape = ModelBuilder::shapeOf(x);
  Shape start(shape.size(), 0), limit = shape;
  start[dim] = half * shape[dim] / 2;
  limit[dim] = (half + 1) * shape[dim] / 2;
  return b.slice(x, start, limit, name);
}

/// `a` where the scalar `pred` holds, `other` elsewhere.
Value choose(ModelBuilder &b, Value pred, Value a, Value other,
             const std::string &name) {
  Value wide = b.broadcast(pred, ModelBuilder::shapeOf(a), {}, name + ".pred");
  return b.select(wide, a, other, name);
}

Running chooseRunning(ModelBuilder &b, Value pred, const Running &a,
                      const Running &other) {
  return {choose(b, pred, a.m, other.m, "ring.choose.max"),
          choose(b, pred, a.l, other.l, "ring.choose.sum"),
          choose(b, pred, a.acc, other.acc, "ring.choose.acc")};
}

/// Causal ring attention balanced over the ring (docs/LongContext.md,
/// "Balanced causal ring"): the sequence is in zigzag order, so device p
/// holds chunks p and 2cp-1-p of 2cp; `rank` is p (an i32 [1]),
/// `positions` [s] the local positions. The device's own keys come first
/// (three quarter blocks, two masked); then on each of the cp - 1 trips the
/// keys and values of device q = p - r arrive and exactly half of the block is
/// visible: the later query chunk against the earlier key chunk always,
/// and the earlier halves of both (q < p) or the later halves (q > p).
/// Those two quarter blocks are all a trip computes, none masked.
Value balancedRingBlocks(ModelBuilder &b, Value q, Value k, Value v,
                         Value positions, Value rank, int64_t size) {
  Shape qs = ModelBuilder::shapeOf(q);
  Value qEarly = halfOf(b, q, 1, 0, "ring.q.early"),
        qLate = halfOf(b, q, 1, 1, "ring.q.late");
  // The device's own chunks, as three quarter blocks: each chunk against
  // itself (masked) and the later against the earlier (all visible).
  Value pEarly = halfOf(b, positions, 0, 0, "ring.pos.early"),
        pLate = halfOf(b, positions, 0, 1, "ring.pos.late");
  Value kOwn = halfOf(b, k, 1, 0, "ring.k.own.early"),
        vOwn = halfOf(b, v, 1, 0, "ring.v.own.early");
  Shape rows = {qs[0], qs[2], qs[3], qs[1] / 2};
  Running early = attendBlock(b, startRunning(b, rows, qs[4]), qEarly, kOwn,
                              vOwn, positionMask(b, pEarly, pEarly));
  Running late =
      attendBlock(b, startRunning(b, rows, qs[4]), qLate, kOwn, vOwn, Value());
  late = attendBlock(b, late, qLate, halfOf(b, k, 1, 1, "ring.k.own.late"),
                     halfOf(b, v, 1, 1, "ring.v.own.late"),
                     positionMask(b, pLate, pLate));
  Type i32 = b.ops().getI32Type();
  Value p = b.reshape(rank, {}, "ring.rank");
  // The keys and values a trip attends arrive in the trip before (the
  // first ones while the device attends its own), so each send overlaps a
  // trip's blocks; the last trip's send is not needed.
  SmallVector<Value> inits = {toNextOnRing(b, k, size, "ring.keys.next"),
                              toNextOnRing(b, v, size, "ring.values.next"),
                              early.m,
                              early.l,
                              early.acc,
                              late.m,
                              late.l,
                              late.acc};
  SmallVector<Value> out =
      ringLoop(b, size - 1, inits, [&](Value trip, ArrayRef<Value> c) {
        Value kb = c[0], vb = c[1];
        Running first{c[2], c[3], c[4]}, second{c[5], c[6], c[7]};
        // Trip t brings device p - (t + 1)'s keys: an earlier device's
        // while t + 1 <= p.
        Value r = b.add(trip, b.constant(1, {}, "ring.one", i32), "ring.r");
        Value earlier =
            b.compare(CompareDirection::LE, r, p, "ring.from.earlier");
        Value kEarly = halfOf(b, kb, 1, 0, "ring.k.early"),
              vEarly = halfOf(b, vb, 1, 0, "ring.v.early");
        // The later queries see the earlier key chunk on every trip.
        second = attendBlock(b, second, qLate, kEarly, vEarly, Value());
        // Then the earlier halves (from an earlier device) or the later.
        Value qPick = choose(b, earlier, qEarly, qLate, "ring.q.pick");
        Value kPick = choose(b, earlier, kEarly,
                             halfOf(b, kb, 1, 1, "ring.k.late"), "ring.k.pick");
        Value vPick = choose(b, earlier, vEarly,
                             halfOf(b, vb, 1, 1, "ring.v.late"), "ring.v.pick");
        Running picked =
            attendBlock(b, chooseRunning(b, earlier, first, second), qPick,
                        kPick, vPick, Value());
        first = chooseRunning(b, earlier, picked, first);
        second = chooseRunning(b, earlier, second, picked);
        return SmallVector<Value>{toNextOnRing(b, kb, size, "ring.keys.next"),
                                  toNextOnRing(b, vb, size, "ring.values.next"),
                                  first.m,
                                  first.l,
                                  first.acc,
                                  second.m,
                                  second.l,
                                  second.acc};
      });
  Running done{b.concatenate(ValueRange{out[2], out[5]}, 3, "ring.max.done"),
               b.concatenate(ValueRange{out[3], out[6]}, 3, "ring.sum.done"),
               b.concatenate(ValueRange{out[4], out[7]}, 3, "ring.acc.done")};
  return finish(b, done);
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
  // Each device's heads over the whole sequence: attention as unsplit.
  Shape qs = ModelBuilder::shapeOf(qh), ks = ModelBuilder::shapeOf(kh);
  Dims local{qs[0], qs[1], 0, qs[2], ks[2], qs[3], 0, 0, 0, 0};
  return exchange(wholeAttention(b, local, qh, kh, vh, causal, nullptr), 1, 2,
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
  Value positions, rank;
  if (ring && form.causal) {
    positions = b.iota({d.S}, 0, ops.getI32Type(), "ring.positions");
    if (form.balanced) {
      positions = zigzagOrder(b, positions, 0, form.contextSize,
                              "ring.positions.zigzag");
      rank = b.iota({form.contextSize}, 0, ops.getI32Type(), "ring.rank");
    }
  }
  Sharding heads, sequence;
  heads.dims = {over(form.batchAxis), over("context"), over(form.headAxis),
                over("")};
  sequence.dims = {over("context")};
  Attribute headsAttr = ShardingAttr::fromSharding(context, mesh, heads);
  SmallVector<Value> operands = {q, k, v};
  SmallVector<Attribute> in = {headsAttr, headsAttr, headsAttr};
  for (Value extra : {positions, rank})
    if (extra) {
      operands.push_back(extra);
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
  Value lp, lr;
  if (positions)
    lp = body->addArgument(
        b.tensorType({d.S / form.contextSize}, ops.getI32Type()),
        positions.getLoc());
  if (rank)
    lr = body->addArgument(b.tensorType({1}, ops.getI32Type()), rank.getLoc());
  OpBuilder::InsertionGuard guard(ops);
  ops.setInsertionPointToStart(body);
  Shape qs = ModelBuilder::shapeOf(lq), ks = ModelBuilder::shapeOf(lk);
  Value out;
  if (ring) {
    Shape grouped = {qs[0], qs[1], ks[2], qs[2] / ks[2], qs[3]};
    Value gq = b.reshape(lq, grouped, "ring.q.grouped");
    out = b.reshape(
        lr ? balancedRingBlocks(b, gq, lk, lv, lp, lr, form.contextSize)
           : ringBlocks(b, gq, lk, lv, lp, form.contextSize),
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
  int64_t Sq = ModelBuilder::shapeOf(x)[1];
  Value positions = cache ? cache->positions : form.positions;
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
  if (cache) {
    k = toCacheLayout(b, k, "k.heads");
    v = toCacheLayout(b, v, "v.heads");
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
  else
    context = wholeAttention(b, d, q, k, v, form.causal, cache);
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

Value partita::models::zigzagOrder(ModelBuilder &b, Value x, int64_t dim,
                                   int64_t size, const std::string &name) {
  Shape shape = ModelBuilder::shapeOf(x);
  int64_t chunk = shape[dim] / (2 * size);
  SmallVector<Value> pieces;
  for (int64_t p = 0; p < size; ++p)
    for (int64_t index : {p, 2 * size - 1 - p}) {
      Shape start(shape.size(), 0), limit = shape;
      start[dim] = index * chunk;
      limit[dim] = (index + 1) * chunk;
      pieces.push_back(b.slice(x, start, limit, name + ".chunk"));
    }
  return b.concatenate(pieces, dim, name);
}
