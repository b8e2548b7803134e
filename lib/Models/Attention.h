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
#include "partita/Models/Models.h"

#include <vector>

namespace partita::models {

/// The transformer's sizes: batch, sequence (the cache's length when
/// decoding), model width, heads, key/value heads, head width, MLP width,
/// vocabulary, experts, layers.
struct Dims {
  int64_t B, S, D, H, N, K, F, V, E, L;
};

/// The logical axes of a key/value cache [B, N, S, K] (heads-major): rows
/// over the batch axes, key/value heads over the model axis, positions and
/// head width whole.
std::vector<std::string> cacheAxes();

/// One layer's key/value cache in a generation program. The prompts are
/// left-padded: row b's prompt ends at the same slot as every other row's,
/// and its first `offset` slots hold padding that no query attends to, so
/// a decode step writes every row's new key and value at one slot.
struct KvCache {
  /// Each row's position ids: [B, S] (prefill: slot minus the row's offset)
  /// or [B] (decode: the new token's). Rotary angles and learned positions
  /// are taken at these.
  mlir::Value positions;
  /// Prefill: each row's padding slots [B] (i32).
  mlir::Value offsets;
  /// Decode: the slot the step writes (a scalar i32), and the cache before
  /// the step (keys and values [B, N, S, K], rotary angles applied to keys).
  mlir::Value slot, keys, values;
  /// Out: the cache after the step (prefill: every slot's).
  mlir::Value newKeys, newValues;
};

/// The attention's form: positions, mask, and how a sequence split over the
/// mesh's `context` axis is attended (docs/LongContext.md).
struct AttentionForm {
  bool rotary = false;
  bool causal = true;
  /// "ring" or "ulysses" when the sequence is split over `contextSize` > 1
  /// devices of the `context` axis; empty otherwise.
  std::string context;
  int64_t contextSize = 1;
  /// The mesh axes the batch and the heads are split over inside the split
  /// attention ("" for none).
  std::string batchAxis, headAxis;
  int64_t batchSize = 1, headSize = 1;
  /// A causal ring on a sequence in zigzag order (zigzagOrder): each
  /// device's chunks from opposite ends, half of each arriving block
  /// computed (docs/LongContext.md, "Balanced causal ring").
  bool balanced = false;
  /// The positions [B, S] (i32) of a sequence not in its own order, for
  /// rotary angles; null otherwise.
  mlir::Value positions;
};

/// `x` with dimension `dim` (a multiple of 2 * `size`) in zigzag order: cut
/// into 2 * size chunks, device p of `size` gets chunks p and
/// 2 * size - 1 - p, in that order.
mlir::Value zigzagOrder(ModelBuilder &b, mlir::Value x, int64_t dim,
                        int64_t size, const std::string &name);

/// The form of attention for `mesh` (a `context` axis of more than one
/// device splits the sequence; the batch goes over `data` and the heads
/// over `model` inside where they divide), or an error naming the flag
/// that does not divide.
Expected<AttentionForm> attentionForm(bool rotary, bool causal,
                                      const std::string &contextAttention,
                                      const Dims &d, const Mesh &mesh);

/// Self-attention of `x` [B, Sq, D] with `w` = wq [D, H, K], wk and
/// wv [D, N, K], wo [H, K, D], causal unless `form` says not. Without `cache`
/// (or with a prefill's) Sq is the sequence; with a decode's, Sq = 1: the new
/// key and value are written into the cache at the step's slot, and the
/// query attends to its row's slots from the row's first (after its
/// padding) to that one.
mlir::Value attention(ModelBuilder &b, mlir::Value x,
                      const std::vector<mlir::Value> &w, const Dims &d,
                      const AttentionForm &form, KvCache *cache = nullptr);

} // namespace partita::models

#endif // PARTITA_LIB_MODELS_ATTENTION_H
