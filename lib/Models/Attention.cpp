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

} // namespace

std::vector<std::string> partita::models::cacheAxes() {
  return {"batch", "kv_heads", "", "head_dim"};
}

Value partita::models::attention(ModelBuilder &b, Value x,
                                 const std::vector<Value> &w, const Dims &d,
                                 bool useRotary, KvCache *cache) {
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
  if (useRotary) {
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
  if (d.N == d.H) {
    Shape shape = {d.B, d.H, Sq, Sk};
    Value scores = b.einsum("bshk," + keyIndices + "->bhst", ValueRange{q, k},
                            shape, "scores");
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
