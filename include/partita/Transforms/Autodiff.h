//===- Autodiff.h - Reverse-mode differentiation and train steps -*- C++ -*-===//
//
// A training step is one program: forward, backward and update, which the
// compiler then partitions like any other. buildGradient differentiates a
// scalar loss function in reverse mode (docs/Autodiff.md lists the rules);
// buildTrainStep adds an optimizer (SGD with momentum, AdamW) whose state
// and parameters are donated arguments updated in place.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_AUTODIFF_H
#define PARTITA_TRANSFORMS_AUTODIFF_H

#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace partita {

/// Adds to `loss`'s module a function `name` with `loss`'s arguments that
/// returns (loss, d loss / d argument for each index in `wrt`). `loss`
/// returns a scalar float first (further results are ignored). Calls are
/// inlined; loops are differentiated by iterating backwards over the
/// carries the forward loop saves. Integer and boolean values, compare,
/// argmax, iota and top_k's indices carry no gradient. Errors (an op
/// without a gradient rule, a collective) name the op and its location.
///
/// `remat` is the activation checkpointing policy: None keeps every
/// forward value for the backward; PerLayer recomputes each layer (ops
/// named `layerN.…`) from its inputs just before differentiating it, so a
/// layer's intermediates die in the forward pass; Full recomputes the
/// whole forward pass. An optimization_barrier over the recomputation's
/// inputs keeps it from being merged back into the forward pass.
///
/// With `keepOtherResults`, `loss`'s further results are returned after
/// the gradients, as the forward pass computes them (pipelining splits the
/// function there, docs/Pipeline.md).
Expected<mlir::func::FuncOp> buildGradient(mlir::func::FuncOp loss,
                                           const std::vector<unsigned> &wrt,
                                           const std::string &name,
                                           Remat remat = Remat::None,
                                           bool keepOtherResults = false);

/// The optimizer of a train step.
struct TrainStepOptions {
  /// AdamW or SGD (with momentum).
  TrainOptimizer optimizer = TrainOptimizer::AdamW;
  /// > 0: a constant learning rate; otherwise the step takes an `lr` input
  /// (a schedule lives outside the step).
  double learningRate = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weightDecay = 0.01;
  double momentum = 0.9;
  /// For a loss function with bf16 parameters: the parameters and
  /// gradients stay bf16, and the optimizer state holds f32 master weights
  /// (first) and f32 moments; the update applies to the master weights and
  /// the new parameters are their bf16 rounding (as Megatron and DeepSpeed
  /// keep them: 2 + 2 + 12 bytes per parameter with Adam).
  bool mixedPrecision = false;
  /// Gradient accumulation: the loss function sees one micro-batch; the
  /// step's inputs with a `batch` logical axis are this many times larger
  /// and a loop runs forward and backward on each slice, summing gradients
  /// (kept partial through the loop), averaged once at the end.
  int64_t microBatches = 1;
  /// Activation checkpointing (see buildGradient).
  Remat remat = Remat::None;
  /// > 0: the gradients are scaled by min(1, clipNorm / ||g||), ||g|| the
  /// global L2 norm over every gradient (computed in f32 across all shards:
  /// the partitioner inserts the reductions), before the optimizer.
  double clipNorm = 0;
  /// With clipNorm: ||g||² comes in as the step's last input (an f32
  /// scalar after the optional `lr`) instead of being computed from this
  /// step's gradients: a pipeline stage's update, whose gradients are a part
  /// of the model's (docs/Pipeline.md, "Clipping").
  bool normInput = false;
};

/// Σ x² over every element of `values`, in f32, added in their order (a
/// null Value for none): the squared global norm that clipping divides by.
mlir::Value sumOfSquares(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::ValueRange values);

/// Replaces the loss function `loss` (scalar loss first; arguments with
/// role `param` are trained) by the public function `name`:
///
///   (params..., grads..., state..., other arguments..., [step: i32],
///    [lr: f32], [norm²: f32]) -> (loss, new params..., grads..., new state...)
///
/// Parameters, gradient buffers and state are donated (updated in place);
/// the gradient buffers (role `grad`) receive the step's averaged
/// gradients, in the layout the rules give them (replicated under zero1,
/// split under zero2), and state carries role `opt_state`; both share their
/// parameter's logical axes. SGD keeps one momentum per parameter; AdamW
/// two moments and takes the step number (counting from 0) for bias
/// correction, computed in f32 for bf16 and f16 parameters. With mixed
/// precision the f32 master weights come first in the state and the step
/// number is taken by either optimizer: at step 0 the master weights start
/// from the parameters (the state's initial zeros are ignored).
Expected<mlir::func::FuncOp> buildTrainStep(mlir::func::FuncOp loss,
                                            const TrainStepOptions &options,
                                            const std::string &name);

} // namespace partita

#endif // PARTITA_TRANSFORMS_AUTODIFF_H
