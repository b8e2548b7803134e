//===- Passes.td - Partita's passes ------------------------*- tablegen -*-===//
//
// Every pass of Partita: one definition here, one implementation file in
// lib/Transforms named after it, one test file test/Transforms/<flag>.mlir
// (and <flag>-errors.mlir for bad input). Passes that only tests use are
// not here: they live in test/lib and only partita-opt links them.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_PASSES_TD
#define PARTITA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SetMeshPass : Pass<"partita-set-mesh", "mlir::ModuleOp"> {
  let summary = "Replaces the axes of a module's mesh (the CLI's --mesh)";
  let description = [{
    Gives a `partita.mesh` new axes, so that one program can be compiled for
    several machine shapes: `mesh=data=2,model=4` replaces the only mesh of the
    module; `mesh=NAME:data=2,model=4` replaces the mesh `@NAME` when the
    module has several. Explicit `device_ids` of the old mesh are dropped (the
    new mesh numbers its devices row-major).

    Shardings and collectives that name axes the new mesh lacks are errors,
    reported at each offending value by the verifier that runs after the pass.

    **Constraints:**
    * the option is a valid mesh spec (`name=size,...`, sizes positive, names
      distinct);
    * without a `NAME:` prefix the module has exactly one mesh; with one, a
      mesh of that name exists.

    Example: `partita-opt --partita-set-mesh="mesh=data=4,model=2" in.mlir`
    turns `partita.mesh @mesh = <["data"=2, "model"=4]>` into
    `partita.mesh @mesh = <["data"=4, "model"=2]>`.
  }];
  let options = [
    Option<"meshSpec", "mesh", "std::string", /*default=*/"\"\"",
           "New mesh: 'data=2,model=4' or 'NAME:data=2,model=4'">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def ApplyRulesPass : Pass<"partita-apply-rules", "mlir::ModuleOp"> {
  let summary = "Turns logical axis names into shardings with a rules table";
  let description = [{
    Maps the logical axes models put on their arguments
    (`partita.logical_axes = ["batch", "seq", "embed"]`) to mesh axes with an
    ordered rules table — a preset (`dp`, `zero1`, `zero2`, `fsdp`, `tp`,
    `dp+tp`, `fsdp+tp`, `tp+sp`, `ep`) or a JSON file — and writes the
    result as each argument's `partita.sharding` (an argument that already
    has one keeps it). A `partita.logical_constraint` becomes a
    `sharding_constraint` when rules qualified with the `activation` role map
    one of its axes, and disappears otherwise. With no rules it only removes
    the logical constraints.

    The first rule whose logical axis and role match, whose mesh axes are
    unused on that tensor and which divides the dimension wins (a rule that
    does not divide is skipped with a warning). See
    `include/partita/Transforms/LogicalRules.h` and `docs/Models.md`.

    **Constraints:** the module has one `partita.mesh` when rules are given;
    the rules name a preset or a readable JSON file whose mesh axes exist.

    Example: `partita-opt --partita-apply-rules="rules=dp+tp" gpt.mlir`
    shards `wq` (logical axes embed, heads, head_dim) over "model" along its
    heads and `tokens` (batch, seq) over "data" along the batch.
  }];
  let options = [
    Option<"rules", "rules", "std::string", /*default=*/"\"\"",
           "A preset name or a JSON rules file">,
    Option<"maxPadding", "max-padding", "double", /*default=*/"0.25",
           "A named rule whose split would make padding more than this fraction of the dimension is skipped">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def GradPass : Pass<"partita-grad", "mlir::ModuleOp"> {
  let summary = "Adds the reverse-mode gradient of the module's loss function";
  let description = [{
    For the module's public function (a scalar float loss first), adds
    `@<name>_grad` with the same arguments returning the loss and its
    gradient with respect to every argument with role `param` (or the
    arguments listed in `wrt`), and makes the loss function private. Loops
    are differentiated by iterating backwards over the carries the forward
    loop saves; calls are inlined. docs/Autodiff.md lists the rules.

    **Constraints:** one public function with a body, returning a scalar
    float first; every op has a gradient rule (manual computations and
    collectives do not: differentiate the global program).

    Example: `partita-opt --partita-grad mlp.mlir` adds `@mlp_loss_grad`
    returning `(loss, d loss/d w1, d loss/d b1, ...)`.
  }];
  let options = [
    ListOption<"wrt", "wrt", "unsigned",
               "Argument indices to differentiate (default: role param)">,
    Option<"remat", "remat", "::partita::Remat",
           /*default=*/"::partita::Remat::None",
           "Activation checkpointing: none, per-layer or full",
           [{::llvm::cl::values(
               clEnumValN(::partita::Remat::None, "none",
                          "keep every forward value"),
               clEnumValN(::partita::Remat::PerLayer, "per-layer",
                          "recompute each layer"),
               clEnumValN(::partita::Remat::Full, "full",
                          "recompute the forward pass"))}]>
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def TrainStepPass : Pass<"partita-train-step", "mlir::ModuleOp"> {
  let summary = "Turns the module's loss function into a training step";
  let description = [{
    Replaces the module's public loss function `@f` by `@f_train_step`:
    forward, backward and an optimizer update in one function, with the
    parameters and optimizer state as donated arguments (role `opt_state`
    for the state, which shares its parameter's logical axes) whose new
    values are results marked `partita.aliases`. `optimizer=adamw` (moments
    m and v, bias correction from an i32 `step` input, decoupled weight
    decay) or `optimizer=sgd` (momentum). The learning rate is an `lr`
    input unless `lr` is given. `mixed-precision` keeps f32 master weights
    (as optimizer state) and f32 moments for a bf16 loss function.

    **Constraints:** as for `partita-grad`, and at least one argument with
    role `param`.

    Example: `partita-opt --partita-train-step="optimizer=sgd lr=0.1" mlp.mlir`
  }];
  let options = [
    Option<"optimizer", "optimizer", "::partita::TrainOptimizer",
           /*default=*/"::partita::TrainOptimizer::AdamW", "adamw or sgd",
           [{::llvm::cl::values(
               clEnumValN(::partita::TrainOptimizer::AdamW, "adamw", "AdamW"),
               clEnumValN(::partita::TrainOptimizer::SGD, "sgd",
                          "SGD with momentum"))}]>,
    Option<"learningRate", "lr", "double", /*default=*/"0.0",
           "A constant learning rate (default: an lr input)">,
    Option<"mixedPrecision", "mixed-precision", "bool", /*default=*/"false",
           "f32 master weights and state for a bf16 loss">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip the gradients to this global L2 norm (0: no clipping)">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Gradient accumulation over this many micro-batches (the loss "
           "function sees one)">,
    Option<"remat", "remat", "::partita::Remat",
           /*default=*/"::partita::Remat::None",
           "Activation checkpointing: none, per-layer or full",
           [{::llvm::cl::values(
               clEnumValN(::partita::Remat::None, "none",
                          "keep every forward value"),
               clEnumValN(::partita::Remat::PerLayer, "per-layer",
                          "recompute each layer"),
               clEnumValN(::partita::Remat::Full, "full",
                          "recompute the forward pass"))}]>
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def PropagatePass : Pass<"partita-propagate", "mlir::ModuleOp"> {
  let summary = "Fills in the sharding of every tensor from a few annotations";
  let description = [{
    Gives every tensor of the module a sharding, starting from the
    annotations a user wrote (function arguments and results, op results,
    `sharding_constraint`, `reshard`, `manual_computation` boundaries) and
    moving them through each op's sharding rule, through calls, loop bodies
    and returns, to a fixed point. Only open dimensions change; closed
    dimensions and the axes a user wrote are kept. Annotations take effect
    by priority level (lower first); conflicts at an op are settled by the
    estimated time of the reshards each choice implies (see
    docs/Propagation.md), with a tie-break that does not depend on op order.

    Writes `partita.sharding` on every tensor result, argument and function
    result, and `partita.origin` recording, per dimension, the annotation the
    axes came from and the op that brought them.

    **Constraints:**
    * all shardings in the module name the same mesh;
    * two closed annotations of one value (two constraints on it, or its own
      annotation and a constraint) must agree.

    Example: with `%w: tensor<64x256xf32> {partita.sharding =
    #partita.sharding<@mesh, [{}, {"model"} ]>}`, the result of
    `partita.einsum "bd,dh->bh" %x, %w` gets `[{}, {"model"} ]`.
  }];
  let options = [
    Option<"interconnectFile", "interconnect", "std::string", /*default=*/"\"\"",
           "Interconnect spec (JSON) with per-axis bandwidth and latency">,
    Option<"reportConflicts", "report-conflicts", "bool", /*default=*/"false",
           "Emit a remark at each op whose tensors disagreed, with the cost of every option">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "Ops without a sharding rule are errors instead of warnings">,
    Option<"maxPadding", "max-padding", "double", /*default=*/"0.25",
           "Warn where padding makes up more than this fraction of a padded dimension">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def PartitionPass : Pass<"partita-partition", "mlir::ModuleOp"> {
  let summary = "Rewrites the propagated global program into the per-device program";
  let description = [{
    Every tensor op becomes its local form on local shapes and every function
    takes local shapes. For each op the pass chooses an op-level sharding (an
    assignment of mesh axes to the op's factors, by the same cost as
    propagation), reshards each operand to what the op needs with the
    cheapest plan of collectives (the reshard planner), and runs the op
    locally. Partial results stay partial until a consumer needs them whole
    (then `all_reduce`, or `reduce_scatter` when the consumer wants them
    split). `loop` bodies are partitioned once; `manual_computation` bodies
    are kept as written and inlined on their local operands; constants and
    iotas are built whole and sliced (no traffic).

    Every inserted collective has the location of the op that needed it and
    a `partita.reason` naming the op, the operand, the factors and the
    from → to shardings. Each result gets its actual `partita.sharding`.

    **Constraints:**
    * every sharded dimension divides evenly by its shard count (padding is
      not implemented; the error names the value, dimension, size and count);
    * ops without a sharding rule only see replicated values.

    Example: `partita-opt --partita-propagate --partita-partition in.mlir`
  }];
  let options = [
    Option<"interconnectFile", "interconnect", "std::string", /*default=*/"\"\"",
           "Interconnect spec (JSON) for the cost model">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def SplitAxesPass : Pass<"partita-split-axes", "mlir::ModuleOp"> {
  let summary = "Declares the sub-axes a reshape needs before propagation";
  let description = [{
    A reshape that splits a dimension into factors smaller than a mesh axis
    (16 columns into 2 KV heads of 8, over a "model" axis of 4 devices) can
    keep only a part of that axis on its major factor. When a reshape of the
    module has such a factor — the axis divides the dimension, not the
    factor, and shares a divisor g with it — the axis is declared as two
    sub-axes, `model:(1)g` and `model:(g)n/g` (several divisors: a chain of
    parts, or its prime factors), and every sharding naming the axis names
    both parts instead. No device moves: the parts list the axis's devices
    in the same order. Axes that a manual computation or an existing
    collective names stay whole. `partita-join-axes` undoes the split
    wherever the parts stay together (docs/Propagation.md, "Sub-axes").

    Example: with `partita.mesh @mesh = <["data"=2, "model"=4]>` and
    `partita.reshape %v : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>`, the mesh
    becomes `<["data"=2, "model:(1)2"=2, "model:(2)2"=2]>` and `{"model"}`
    becomes `{"model:(1)2", "model:(2)2"}`.
  }];
}

def JoinAxesPass : Pass<"partita-join-axes", "mlir::ModuleOp"> {
  let summary = "Names a mesh axis whole again where its sub-axes stay together";
  let description = [{
    The inverse of `partita-split-axes`: when every sharding and collective
    of the module lists the parts of a split axis together and in order, the
    parts become the axis again and the mesh gets its original axis back.
    Where a part is used alone (a value gathered over the minor part only),
    the module keeps the sub-axes everywhere.
  }];
}

def CleanupCollectivesPass : Pass<"partita-cleanup-collectives", "mlir::ModuleOp"> {
  let summary = "Removes collectives that cancel and merges duplicates";
  let description = [{
    After partitioning (outside code that came from `manual_computation`
    bodies, which stays as written):
    * a collective followed by its inverse on the same axes and dimensions
      (all_slice then all_gather, all_gather then all_slice of a replicated
      value, all_to_all and back) is removed;
    * identical collectives of one value are merged;
    * an `all_reduce` whose only use is an `all_slice` over the same axes
      becomes a `reduce_scatter`.

    Example: `%g = all_gather(%s)` with `%s = all_slice(%x)` on the same
    axes and dimension is replaced by `%x`.
  }];
}

def CombineCollectivesPass
    : Pass<"partita-combine-collectives", "mlir::ModuleOp"> {
  let summary = "Packs independent all_reduces into fewer, larger ones";
  let description = [{
    Many small collectives pay the per-collective latency many times: a
    gradient under data parallelism is one all_reduce per parameter. This
    pass packs all_reduces of the same reduction, mesh, axes and element type
    in one block into buckets (as XLA's all-reduce combiner and PyTorch DDP's
    gradient buckets do): the members' operands are flattened and
    concatenated, one all_reduce runs on the bucket, and each member's result
    is sliced back out and reshaped.

    A bucket is filled in program order and emitted just before the first op
    that uses one of its members' results (so a member is never delayed past
    its first use), or when the next member would take it over
    `bucket-bytes` of operand bytes per device (so a full bucket does not
    wait for values produced much later). A bucket of one stays as it was.
    The combined all_reduce carries the members' locations (a fused
    location) and a `partita.reason` that counts and lists them, so the
    report lists it once.

    With `min-buckets=N`, a bucket is also emitted right after the member
    that fills it to 1/N of the bytes its block packs (or 64 KiB, if more):
    asynchronous collectives
    (partita-overlap-collectives) then reduce the first buckets while the
    rest of the backward pass computes.

    **Constraints:** none; `bucket-bytes=0` leaves the module unchanged;
    a negative `bucket-bytes` (the default) takes `combine_bytes` from the
    `interconnect` spec, else 25 MiB.

    Example: `partita-opt --partita-combine-collectives="bucket-bytes=1048576" step.mlir`
    turns two independent `all_reduce sum` over `data` of `tensor<4x8xf32>`
    and `tensor<8xf32>` into one of `tensor<40xf32>` between concatenation
    and slices.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"-1",
           "Largest bucket, in operand bytes per device (0: no combining; "
           "negative: the interconnect spec's combine_bytes, else 25 MiB)">,
    Option<"interconnectFile", "interconnect", "std::string",
           /*default=*/"\"\"",
           "Interconnect spec (JSON) whose combine_bytes sets the bucket size">,
    Option<"minBuckets", "min-buckets", "int64_t", /*default=*/"1",
           "Emit a bucket as soon as it holds 1/N of its block's packable "
           "bytes (at least 64 KiB, and at least what an all_reduce moves in "
           "one latency of the link), so that early buckets overlap the "
           "computation of later members (the pipeline asks for 4 when "
           "collectives overlap)">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def OverlapCollectivesPass
    : Pass<"partita-overlap-collectives", "mlir::ModuleOp"> {
  let summary = "Starts collectives early and waits for them late";
  let description = [{
    Marks the module `partita.async_collectives`: every collective that
    moves data (all_gather, all_reduce, reduce_scatter, all_to_all,
    collective_permute) then runs asynchronously. It starts where it stands
    and is waited for just before the first op that uses its result (or the
    block's terminator), so the ops in between compute while it moves data.
    The buffer plan keeps its operand alive until that wait, and an
    all_reduce whose operand dies at it runs in place (docs/Runtime.md,
    "Overlapping communication").

    Then each collective moves up its block, to just after the ops that
    define its operands, but not above an `optimization_barrier` nor above
    the first use of the collective before it. A weight that FSDP gathers
    from a parameter is thus gathered while the previous layer computes
    (one collective ahead: at most two gathered weights are alive at once);
    a gradient's all_reduce already stands right after the gradient and
    stays there. A reduce_scatter moves up to just after its operand (with
    the reshapes and concatenation packing its bucket), ahead of earlier
    collectives but not above an `optimization_barrier`, and is waited for
    before the next reduce_scatter starts
    when that comes before its result's first use: a train step holds one
    or two whole gradients, not every one until the update.

    **Constraints:** none; a module without collectives is only marked.

    Example: `partita-opt --partita-overlap-collectives step.mlir` moves
    `%w1 = all_gather(%p1)` of the second layer from just before its
    einsum to just before the first layer's einsum, the first use of
    `%w0 = all_gather(%p0)`.
  }];
  let dependentDialects = ["::partita::PartitaDialect"];
}

def ReplicateAroundManualPass
    : Pass<"partita-replicate-around-manual", "mlir::ModuleOp"> {
  let summary = "Replicates everything outside manual computations";
  let description = [{
    A program with `partita.manual_computation` regions (JAX's shard_map)
    cannot run unpartitioned: the regions' bodies are per-device code. The
    reference that `partita run --check` compares such a program with is the
    same program with every annotation outside those regions replaced by
    replication, partitioned by the compiler: only the manual regions stay
    per-device. This pass makes that program: arguments and results of every
    function with a body become replicated on the mesh of the first manual
    computation, op shardings outside manual regions are dropped, and
    `sharding_constraint` ops outside them are removed (their input takes
    their place). Inside manual regions nothing changes. A module without a
    manual computation (or whose manual computations name no mesh) is left
    as it is.

    **Constraints:** none; every module is accepted.

    Example: `partita-opt --partita-replicate-around-manual shard-map.mlir`
    gives the argument `%x` of docs/examples/shard-map.mlir, split over
    `data`, the replicated sharding (every dimension `{}`) instead; the manual
    computation inside keeps its `in_shardings` and its body.
  }];
  let dependentDialects = ["::partita::PartitaDialect"];
}

#endif // PARTITA_TRANSFORMS_PASSES_TD
