//===- Models.h - The models Partita can generate ---------------*- C++ -*-===//
//
// `mlp` (residual regression MLP with an MSE loss), `ffn` (Megatron's
// two-layer feed-forward block), `gpt` (a decoder-only transformer with a
// softmax cross-entropy loss) and `moe` (GPT with mixture-of-experts MLPs,
// GShard's grouped top-k dispatch). Parameters and inputs carry logical axis
// names and roles; a rules preset or file maps them to the mesh
// (partita-apply-rules). docs/Models.md describes each graph.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_MODELS_MODELS_H
#define PARTITA_MODELS_MODELS_H

#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Status.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace partita {

/// What to build. Defaults are small enough for tests on cpu:8.
struct ModelConfig {
  /// "mlp", "ffn", "gpt" or "moe".
  std::string model = "gpt";
  int64_t layers = 2;
  int64_t dModel = 64;
  int64_t heads = 4;
  /// Key/value heads (grouped-query attention); 0: as many as `heads`.
  int64_t kvHeads = 0;
  int64_t seq = 16;
  int64_t batch = 8;
  int64_t vocab = 128;
  /// Hidden width of the MLP = mlpRatio * dModel.
  int64_t mlpRatio = 4;
  int64_t experts = 4;
  int64_t topK = 2;
  double capacityFactor = 1.25;
  /// MoE dispatch groups along the batch; 0: the size of the mesh's `data`
  /// axis (one group per data shard), or 1 without one.
  int64_t groups = 0;
  /// The layer stack as a loop over stacked weights.
  bool scan = false;
  /// Stop at the logits (gpt, moe) or the output (mlp).
  bool noLoss = false;
  /// gpt, moe: a `loss_mask` input [batch, seq] (after the targets); the
  /// loss averages only the positions where it is 1 (supervised
  /// fine-tuning on the response tokens).
  bool lossMask = false;
  /// With lossMask, what the function returns: "mean" (the masked mean
  /// cross-entropy), "dpo" (direct preference optimisation: rows 2i and
  /// 2i + 1 are a pair's chosen and rejected answers, a `ref_logp` input
  /// [batch] holds the reference policy's sequence log-probabilities, and
  /// the loss is the mean of -log sigmoid(beta * ((c - ref_c) - (r -
  /// ref_r)))), or "logprob" (each row's sequence log-probability over the
  /// masked positions, [batch]: the reference's, computed before DPO).
  /// Without a loss mask (gpt only, unrolled): "prefill" (inputs `tokens`
  /// [batch, seq] and `last` [batch], each row's last prompt position;
  /// results the next token's logits [batch, vocab] and every layer's keys
  /// and values [batch, kv_heads, seq, head_dim]) or "decode" (inputs one
  /// token per row [batch, 1], its `positions` [batch] and the caches;
  /// results the logits and the caches with the new position written):
  /// generation's two programs (docs/Models.md, "Generation").
  /// Reinforcement learning (docs/Training.md, "RLHF"), with a loss mask
  /// over the response tokens: "grpo" or "ppo" (inputs `advantages`,
  /// `old_logp` [batch, seq] and, for grpo, `ref_logp` [batch, seq], for
  /// ppo `returns` [batch, seq]; the clipped surrogate objective, grpo
  /// with a k3 KL penalty to the reference, ppo with a value loss), or
  /// "tokenlogp" (no mask: each position's log-probability of its target
  /// [batch, seq] and, with `valueHead`, the values [batch, seq]).
  std::string objective = "mean";
  double dpoBeta = 0.1;
  /// grpo: the KL penalty's weight; grpo and ppo: the ratio's clip range;
  /// ppo: the value loss's weight.
  double klBeta = 0.04, clipRange = 0.2, valueWeight = 0.1;
  /// A scalar value head [embed] after the vocabulary head (ppo).
  bool valueHead = false;
  /// Positions: rotary embeddings instead of a learned table.
  bool rotary = false;
  /// RMSNorm instead of LayerNorm.
  bool rmsNorm = false;
  /// Token embedding (gpt, moe): "onehot" (a one-hot einsum, so a table
  /// split along the vocabulary stays split: Megatron's vocab-parallel
  /// embedding) or "gather" (rows by index: no one-hot tensor and no
  /// embedding FLOPs, but a table split along the vocabulary is gathered).
  std::string embedding = "onehot";
  /// SwiGLU instead of GELU in the MLP.
  bool swiglu = false;
  /// "f32" or "bf16".
  std::string dtype = "f32";
  /// Causal attention (a key after its query is hidden); false: every
  /// position sees every other (an encoder's attention).
  bool causal = true;
  /// gpt, moe on a mesh with a `context` axis of more than one device: how
  /// attention runs on a sequence split over it (docs/LongContext.md):
  /// "ring" (each device keeps its queries; keys and values travel around
  /// the ring, softmaxes combined online) or "ulysses" (an all_to_all turns
  /// the sequence split into a head split around attention).
  std::string contextAttention = "ring";
  /// MoE only (C++ API): also return the first MoE layer's dispatch tensor
  /// [groups, tokens per group, experts, capacity], for tests.
  bool exposeDispatch = false;
};

/// The model names, comma separated.
const char *modelNames();

/// Builds the model with a `partita.mesh @mesh` of `mesh`'s axes. Bad
/// sizes (heads not dividing d_model, ...) are errors naming the flag.
Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildModel(mlir::MLIRContext *context, const ModelConfig &config,
           const Mesh &mesh);

/// The MoE dispatch groups `buildModel` uses for `config` on `mesh`:
/// config.groups, or the `data` axis's size when it divides the batch, or 1.
int64_t moeGroups(const ModelConfig &config, const Mesh &mesh);

/// Per-step figures of a module, computed from the IR alone: parameters
/// from the arguments with role `param`, FLOPs from the ops (loops times
/// their trip counts).
struct ModelSummary {
  int64_t parameters = 0;
  int64_t parameterBytes = 0;
  /// 2 * (product of every index size) per einsum.
  int64_t matmulFlops = 0;
  /// One per element of each arithmetic elementwise op, reduction input
  /// element and cumsum element.
  int64_t vectorFlops = 0;
  /// True when a count reached 2^63 - 1, where every count stops: the model
  /// is too large to count in 64 bits.
  bool saturated() const;
};

/// The summary of the public function of `module` (or its only function).
ModelSummary summarizeModel(mlir::ModuleOp module);

/// The FLOPs of one op as summarizeModel counts them (matrix and vector),
/// with the ops nested in its regions.
int64_t opFlops(mlir::Operation *op);

} // namespace partita

#endif // PARTITA_MODELS_MODELS_H
