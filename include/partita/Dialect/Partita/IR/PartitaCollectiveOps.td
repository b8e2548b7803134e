//===- PartitaCollectiveOps.td - Collectives on local shapes -*- tablegen -*-===//
//
// Collectives appear after partitioning (and inside manual computations).
// They work on per-device shapes. Each names a mesh and the mesh axes whose
// devices form a group: devices whose coordinates agree on every other axis.
// Within a group a device's position is the mixed-radix number of its
// coordinates on the named axes, in the order they are listed.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_COLLECTIVE_OPS_TD
#define PARTITA_COLLECTIVE_OPS_TD

class Partita_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Partita_Op<mnemonic, !listconcat([Pure], traits)> {
  let hasVerifier = 1;
  code commonConstraints = [{
    * `mesh` names a `partita.mesh`; `axes` is non-empty, each axis exists on
      it and appears once;
  }];
}

def Partita_AllGatherOp : Partita_CollectiveOp<"all_gather"> {
  let summary = "Concatenates the group's blocks along a dimension";
  let description = [{
    Every device of a group receives the concatenation, in group order, of the
    group's operands along `dim`.

    **Constraints:**
  }] # commonConstraints # [{
    * `0 <= dim < rank`; the result's `dim` is the operand's times the group
      size, other dimensions and the element type unchanged.

    Example:
    ```mlir
    %g = partita.all_gather %x on @mesh axes = ["model"] dim = 1
        : tensor<8x4xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($operand) `->` type($result)
  }];
}

def Partita_AllSliceOp : Partita_CollectiveOp<"all_slice"> {
  let summary = "Keeps this device's block along a dimension (no traffic)";
  let description = [{
    Splits the operand along `dim` into as many equal blocks as the group has
    devices and keeps the block at the device's group position. Moves no
    data: the inverse of `all_gather` on a replicated value.

    **Constraints:**
  }] # commonConstraints # [{
    * `0 <= dim < rank`; the group size divides the operand's `dim`; the
      result's `dim` is the operand's divided by it.

    Example:
    ```mlir
    %s = partita.all_slice %x on @mesh axes = ["model"] dim = 1
        : tensor<8x16xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($operand) `->` type($result)
  }];
}

def Partita_AllReduceOp : Partita_CollectiveOp<"all_reduce",
    [SameOperandsAndResultType]> {
  let summary = "Combines the group's values elementwise";
  let description = [{
    Every device of a group receives the elementwise `sum`/`max`/`min`/`and`/
    `or` of the group's operands.

    **Constraints:**
  }] # commonConstraints # [{
    * `and`/`or` need an integer element type.

    Example: `%r = partita.all_reduce sum %x on @mesh axes = ["model"] : tensor<8x16xf32>`
  }];
  let arguments = (ins Partita_ReductionKindAttr:$kind, Partita_Tensor:$operand,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `on` $mesh `axes` `=` $axes attr-dict `:` type($result)
  }];
}

def Partita_ReduceScatterOp : Partita_CollectiveOp<"reduce_scatter"> {
  let summary = "Combines the group's values and keeps one block each";
  let description = [{
    The elementwise reduction of the group's operands, split along `dim`
    into group-size blocks; each device keeps the block at its group
    position. Equivalent to `all_reduce` then `all_slice`, with a
    `(n-1)/n` share of the traffic.

    **Constraints:**
  }] # commonConstraints # [{
    * `0 <= dim < rank`; the group size divides the operand's `dim`; the
      result's `dim` is the operand's divided by it; `and`/`or` need integers.

    Example:
    ```mlir
    %r = partita.reduce_scatter sum %x on @mesh axes = ["data"] dim = 0
        : tensor<8x16xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Partita_ReductionKindAttr:$kind, Partita_Tensor:$operand,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($operand) `->` type($result)
  }];
}

def Partita_AllToAllOp : Partita_CollectiveOp<"all_to_all"> {
  let summary = "Exchanges blocks: split one dimension, concatenate another";
  let description = [{
    Each device splits its operand along `split_dim` into group-size blocks
    and sends block `j` to the device at group position `j`; the received
    blocks are concatenated along `concat_dim` in group order.

    **Constraints:**
  }] # commonConstraints # [{
    * both dimensions in range; the group size divides the operand's
      `split_dim`; the result's `split_dim` is divided and its `concat_dim`
      multiplied by the group size (both when they are the same dimension).

    Example:
    ```mlir
    %t = partita.all_to_all %x on @mesh axes = ["model"] split_dim = 0 concat_dim = 1
        : tensor<8x4xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim, I64Attr:$concat_dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim `concat_dim`
    `=` $concat_dim attr-dict `:` type($operand) `->` type($result)
  }];
}

def Partita_CollectivePermuteOp : Partita_CollectiveOp<"collective_permute",
    [SameOperandsAndResultType]> {
  let summary = "Sends each device's value to another position of its group";
  let description = [{
    For each `source -> target` pair (group positions), the device at
    `target` receives the operand of the device at `source`. A device that is
    no pair's target receives zeros.

    **Constraints:**
  }] # commonConstraints # [{
    * every position is in `[0, group size)`; no source and no target appears
      twice.

    Example:
    ```mlir
    %p = partita.collective_permute %x on @mesh axes = ["data"] pairs = [0 -> 1, 1 -> 0]
        : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, DenseI64ArrayAttr:$pairs);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `on` $mesh `axes` `=` $axes `pairs` `=` custom<SourceTargetPairs>($pairs)
    attr-dict `:` type($result)
  }];
}

#endif // PARTITA_COLLECTIVE_OPS_TD
