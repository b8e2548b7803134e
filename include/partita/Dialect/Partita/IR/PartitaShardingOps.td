//===- PartitaShardingOps.td - Ops users write about shardings -*- tablegen -*-===//
#ifndef PARTITA_SHARDING_OPS_TD
#define PARTITA_SHARDING_OPS_TD

def Partita_ShardingConstraintOp : Partita_Op<"sharding_constraint",
    [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "The value must have this sharding here";
  let description = [{
    JAX's `with_sharding_constraint`: returns its input unchanged, and
    requires the value to have `sharding` at this point of the program.
    Propagation treats the sharding as a user annotation; the partitioner
    inserts a reshard here when the input arrives sharded differently. Open
    dimensions (`{?}`) leave that dimension to propagation.

    **Constraints:** the sharding is valid for the mesh it names and has one
    dimension per input dimension.

    Example:
    ```mlir
    %y = partita.sharding_constraint %x <@mesh, [{"data"}, {?} ]> : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$input, Partita_ShardingAttr:$sharding);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Partita_LogicalConstraintOp : Partita_Op<"logical_constraint",
    [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "A layout named in logical axes, for the rules to map";
  let description = [{
    Returns its input unchanged. `axes` names a logical axis per dimension
    (`""` for none). The logical-rules pass (`partita-apply-rules`) turns it
    into a `sharding_constraint` when rules map one of its axes to a mesh
    axis, and removes it otherwise. Activations (the default) use only the
    rules qualified with the `activation` role (sequence parallelism's
    layout between blocks, say); `role = "param"` (or another argument
    role) applies that role's rules, as for one layer's slice of weights
    stacked for a scanned layer loop. Left in place it is an identity with
    no preference.

    **Constraints:** one axis name per input dimension.

    Example:
    ```mlir
    %y = partita.logical_constraint %x ["batch", "seq", "embed"] : tensor<8x128x512xf32>
    %w = partita.logical_constraint %s ["embed", "mlp"] {role = "param"} : tensor<512x2048xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$input, StrArrayAttr:$axes,
                       OptionalAttr<StrAttr>:$role);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Partita_ReshardOp : Partita_Op<"reshard",
    [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "Explicitly changes a value's sharding";
  let description = [{
    Returns its input with sharding `sharding`. Unlike
    `sharding_constraint`, it does not say anything about its input: the
    input keeps its own sharding and the partitioner moves the data.

    **Constraints:** the sharding is valid for its mesh and the input's rank.

    Example:
    ```mlir
    %y = partita.reshard %x <@mesh, [{}, {"model"} ]> : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$input, Partita_ShardingAttr:$sharding);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Partita_ManualComputationOp : Partita_Op<"manual_computation",
    [RecursiveMemoryEffects, SingleBlock, IsolatedFromAbove]> {
  let summary = "A region written on per-device shapes (shard_map)";
  let description = [{
    JAX's `shard_map`. The operands (global shapes) are split as
    `in_shardings` say over the `manual_axes`; the body runs once per device
    on the local blocks and may use collectives over those axes; its yielded
    local values are assembled into the results as `out_shardings` say.
    Axes of the mesh that are not manual are left to the compiler.

    **Constraints:**
    * one in-sharding per operand, one out-sharding per result, all on one mesh
      and closed (no `{?}`), none partial;
    * manual axes exist on that mesh, are distinct, and shardings name no axes
      outside them;
    * every sharded dimension divides evenly by its shard count;
    * body argument `i` has the local shape of operand `i`, and the body
      yields values of the local shapes of the results.

    Example:
    ```mlir
    %r = partita.manual_computation(%x) in_shardings = [<@mesh, [{"data"}, {} ]>]
        out_shardings = [<@mesh, [{"data"}, {} ]>] manual_axes = ["data"]
        (%lx: tensor<4x16xf32>) {
      %e = partita.exp %lx : tensor<4x16xf32>
      partita.yield %e : tensor<4x16xf32>
    } : (tensor<8x16xf32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Partita_Tensor>:$operands,
                       TypedArrayAttrBase<Partita_ShardingAttr, "shardings">:$in_shardings,
                       TypedArrayAttrBase<Partita_ShardingAttr, "shardings">:$out_shardings,
                       StrArrayAttr:$manual_axes);
  let results = (outs Variadic<Partita_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
}

#endif // PARTITA_SHARDING_OPS_TD
