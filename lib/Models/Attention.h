//===- Attention.h - The transformer's attention, cached or not -*- C++ -*-===//
//
// Private to the model builders. Causal self-attention over a whole
// sequence (training, evaluation, and generation's prefill, which also
// hands back each layer's keys and values), and over one new position per
// row against a key/value cache (generation's decode step).
// docs/Models.md, "Generation".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_MODELS_ATTENTION_H
#define PARTITA_LIB_MODELS_ATTENTION_H

#include "partita/Models/ModelBuilder.h"

#include <vector>

namespace partita::models {

/// The transformer's sizes: batch, sequence (the cache's length when
/// decoding), model width, heads, key/value heads, head width, MLP width,
/// vocabulary, experts, layers.
struct Dims {
  int64_t B, S, D, H, N, K, F, V, E, L;
};

/// The logical axes of a key/value cache [B, S, N, K]: rows over the batch
/// axes, key/value heads over the model axis, positions and head width
/// whole.
std::vector<std::string> cacheAxes();

/// One layer's key/value cache in a generation program.
struct KvCache {
  /// Decode: each row's position [B] (i32), and the cache before this step
  /// (keys and values [B, S, N, K], rotary positions applied to keys).
  /// Prefill: all null.
  mlir::Value positions, keys, values;
  /// Out: the cache after the step (prefill: every position's).
  mlir::Value newKeys, newValues;
};

/// Causal self-attention of `x` [B, Sq, D] with `w` = wq [D, H, K], wk and
/// wv [D, N, K], wo [H, K, D]. Without `cache` (or with a prefill's) Sq is
/// the sequence; with a decode's, Sq = 1: the new position's key and value
/// are written into the cache at its row's position, and the query attends
/// to the cache's positions up to it.
mlir::Value attention(ModelBuilder &b, mlir::Value x,
                      const std::vector<mlir::Value> &w, const Dims &d,
                      bool useRotary, KvCache *cache = nullptr);

} // namespace partita::models

#endif // PARTITA_LIB_MODELS_ATTENTION_H
