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
/// form): at positions 0..Sq-1, or with `positions` [B] at each row's.
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
    // Each row's angles: its position's row of the tables.
    cos = b.broadcast(b.gather(cosTable, positions, name + ".cos.at"),
                      halfShape, {0, 3}, name + ".cos.b");
    sin = b.broadcast(b.gather(sinTable, positions, name + ".sin.at"),
                      halfShape, {0, 3}, name + ".sin.b");
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

/// `fresh` [B, 1, N, K] written into `cache` [B, S, N, K] at each row's
/// position `positions` [B].
Value writeCache(ModelBuilder &b, Value cache, Value fresh, Value positions,
                 const Dims &d, const std::string &name) {
  Type index = b.ops().getI32Type();
  Value slot = b.iota({d.B, d.S}, 1, index, name + ".slot");
  Value at = b.broadcast(positions, {d.B, d.S}, {0}, name + ".at");
  Value hit =
      b.broadcast(b.compare(CompareDirection::EQ, slot, at, name + ".hit"),
                  {d.B, d.S, d.N, d.K}, {0, 1}, name + ".hit.b");
  Value row = b.reshape(fresh, {d.B, d.N, d.K}, name + ".row");
  Value spread =
      b.broadcast(row, {d.B, d.S, d.N, d.K}, {0, 2, 3}, name + ".row.b");
  return b.logicalConstraint(b.select(hit, spread, cache, name), cacheAxes(),
                             name + ".layout");
}

/// What is added to the scores: -1e9 where a key lies after its query, 0
/// elsewhere, broadcast to `shape` (the scores', queries then keys last).
/// Whole sequence: [Sq, Sk] from two iotas (not stored: S^2 elements per
/// layer in every Executable otherwise); decode: [B, Sk] from each row's
/// position.
Value causalMask(ModelBuilder &b, const Dims &d, Value positions,
                 const Shape &shape) {
  Type index = b.ops().getI32Type();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (!positions) {
    Value query = b.iota({d.S, d.S}, 0, index, "mask.s");
    Value key = b.iota({d.S, d.S}, 1, index, "mask.t");
    Value causal =
        b.select(b.compare(CompareDirection::GT, key, query, "mask.future"),
                 b.constant(-1e9, {d.S, d.S}, "mask.hidden"),
                 b.constant(0.0, {d.S, d.S}, "mask.visible"), "mask");
    return b.broadcast(causal, shape, {rank - 2, rank - 1}, "mask.b");
  }
  Value key = b.iota({d.B, d.S}, 1, index, "mask.t");
  Value at = b.broadcast(positions, {d.B, d.S}, {0}, "mask.at");
  Value causal =
      b.select(b.compare(CompareDirection::GT, key, at, "mask.future"),
               b.constant(-1e9, {d.B, d.S}, "mask.hidden"),
               b.constant(0.0, {d.B, d.S}, "mask.visible"), "mask");
  return b.broadcast(causal, shape, {0, rank - 1}, "mask.b");
}

} // namespace

std::vector<std::string> partita::models::cacheAxes() {
  return {"batch", "", "kv_heads", "head_dim"};
}

Value partita::models::attention(ModelBuilder &b, Value x,
                                 const std::vector<Value> &w, const Dims &d,
                                 bool useRotary, KvCache *cache) {
  // w: wq [D, H, K], wk [D, N, K], wv [D, N, K], wo [H, K, D]
  int64_t Sq = ModelBuilder::shapeOf(x)[1], Sk = d.S;
  Value positions = cache ? cache->positions : Value();
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
  if (cache && positions) {
    k = writeCache(b, cache->keys, k, positions, d, "cache.keys");
    v = writeCache(b, cache->values, v, positions, d, "cache.values");
  }
  if (cache) {
    cache->newKeys =
        positions ? k : b.logicalConstraint(k, cacheAxes(), "cache.keys");
    cache->newValues =
        positions ? v : b.logicalConstraint(v, cacheAxes(), "cache.values");
  }
  q = b.mul(q,
            b.scalarLike(1.0 / std::sqrt(static_cast<double>(d.K)), q, "scale"),
            "q.scaled");
  Value context;
  if (d.N == d.H) {
    Shape shape = {d.B, d.H, Sq, Sk};
    Value scores =
        b.einsum("bshk,bthk->bhst", ValueRange{q, k}, shape, "scores");
    scores = b.add(scores, causalMask(b, d, positions, shape), "scores.masked");
    Value probs = b.softmax(scores, "probs");
    context = b.einsum("bhst,bthk->bshk", ValueRange{probs, v},
                       {d.B, Sq, d.H, d.K}, "context");
  } else {
    int64_t G = d.H / d.N;
    Shape shape = {d.B, d.N, G, Sq, Sk};
    Value grouped = b.reshape(q, {d.B, Sq, d.N, G, d.K}, "q.grouped");
    Value scores =
        b.einsum("bsngk,btnk->bngst", ValueRange{grouped, k}, shape, "scores");
    scores = b.add(scores, causalMask(b, d, positions, shape), "scores.masked");
    Value probs = b.softmax(scores, "probs");
    Value out = b.einsum("bngst,btnk->bsngk", ValueRange{probs, v},
                         {d.B, Sq, d.N, G, d.K}, "context.grouped");
    context = b.reshape(out, {d.B, Sq, d.H, d.K}, "context");
  }
  return b.einsum("bshk,hkd->bsd", ValueRange{context, w[3]}, {d.B, Sq, d.D},
                  "out");
}
