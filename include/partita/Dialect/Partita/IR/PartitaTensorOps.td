//===- PartitaTensorOps.td - Tensor ops on global shapes ---*- tablegen -*-===//
//
// The computation ops. Before partitioning they work on global shapes, after
// partitioning on local shapes; their semantics do not change. There is no
// implicit broadcasting: operands of elementwise ops have identical types.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TENSOR_OPS_TD
#define PARTITA_TENSOR_OPS_TD

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Partita_ConstantOp : Partita_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor, HasShardingRule]> {
  let summary = "A tensor literal";
  let description = [{
    Produces the tensor given by `value`; the result type is the type of
    `value`.

    Example: `%c = partita.constant dense<1.0> : tensor<4x8xf32>`
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Partita_IotaOp : Partita_Op<"iota", [Pure, HasShardingRule]> {
  let summary = "Indices along one dimension";
  let description = [{
    Element `[i0, …, ir]` of the result is `i_dim`, converted to the element
    type.

    **Constraints:** `0 <= dim < rank`; the result has rank ≥ 1.

    Example: `%i = partita.iota dim = 1 : tensor<4x8xi32>`
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Partita_UnaryOp<string mnemonic, Type operandType, string desc>
    : Partita_Op<mnemonic, [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "Elementwise " # mnemonic;
  let description = desc # [{

    Operand and result have the same type.

    Example: `%y = partita.}] # mnemonic # [{ %x : tensor<4x8xf32>`
  }];
  let arguments = (ins operandType:$operand);
  let results = (outs operandType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

class Partita_BinaryOp<string mnemonic, Type operandType, string desc>
    : Partita_Op<mnemonic, [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "Elementwise " # mnemonic;
  let description = desc # [{

    Both operands and the result have the same type (no implicit
    broadcasting; use `partita.broadcast`).

    Example: `%z = partita.}] # mnemonic # [{ %x, %y : tensor<4x8xf32>`
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Partita_NegOp : Partita_UnaryOp<"neg", Partita_Tensor, "`-x`.">;
def Partita_AbsOp : Partita_UnaryOp<"abs", Partita_Tensor, "`|x|`.">;
def Partita_SignOp : Partita_UnaryOp<"sign", Partita_Tensor,
    "-1, 0 or 1 with the sign of `x` (NaN stays NaN).">;
def Partita_ExpOp : Partita_UnaryOp<"exp", Partita_FloatTensor, "`e^x`.">;
def Partita_LogOp : Partita_UnaryOp<"log", Partita_FloatTensor, "Natural logarithm.">;
def Partita_Log1pOp : Partita_UnaryOp<"log1p", Partita_FloatTensor, "`log(1 + x)`, accurate near 0.">;
def Partita_TanhOp : Partita_UnaryOp<"tanh", Partita_FloatTensor, "Hyperbolic tangent.">;
def Partita_LogisticOp : Partita_UnaryOp<"logistic", Partita_FloatTensor, "`1 / (1 + e^-x)`.">;
def Partita_SqrtOp : Partita_UnaryOp<"sqrt", Partita_FloatTensor, "Square root.">;
def Partita_RsqrtOp : Partita_UnaryOp<"rsqrt", Partita_FloatTensor, "`1 / sqrt(x)`.">;
def Partita_ErfOp : Partita_UnaryOp<"erf", Partita_FloatTensor, "The Gauss error function.">;
def Partita_SinOp : Partita_UnaryOp<"sin", Partita_FloatTensor, "Sine.">;
def Partita_CosOp : Partita_UnaryOp<"cos", Partita_FloatTensor, "Cosine.">;
def Partita_FloorOp : Partita_UnaryOp<"floor", Partita_FloatTensor, "Largest integer not above `x`.">;
def Partita_NotOp : Partita_UnaryOp<"not", Partita_IntTensor,
    "Bitwise not (logical not on `i1`).">;

def Partita_AddOp : Partita_BinaryOp<"add", Partita_Tensor, "`x + y`.">;
def Partita_SubOp : Partita_BinaryOp<"sub", Partita_Tensor, "`x - y`.">;
def Partita_MulOp : Partita_BinaryOp<"mul", Partita_Tensor, "`x * y`.">;
def Partita_DivOp : Partita_BinaryOp<"div", Partita_Tensor,
    "`x / y`; integer division truncates toward zero.">;
def Partita_RemOp : Partita_BinaryOp<"rem", Partita_Tensor,
    "Remainder of `x / y` with the sign of `x` (C's `fmod` / `%`).">;
def Partita_MaxOp : Partita_BinaryOp<"max", Partita_Tensor,
    "Larger of `x` and `y` (NaN if either is NaN).">;
def Partita_MinOp : Partita_BinaryOp<"min", Partita_Tensor,
    "Smaller of `x` and `y` (NaN if either is NaN).">;
def Partita_PowOp : Partita_BinaryOp<"pow", Partita_FloatTensor, "`x^y`.">;
def Partita_AndOp : Partita_BinaryOp<"and", Partita_IntTensor, "Bitwise and (logical on `i1`).">;
def Partita_OrOp : Partita_BinaryOp<"or", Partita_IntTensor, "Bitwise or (logical on `i1`).">;
def Partita_XorOp : Partita_BinaryOp<"xor", Partita_IntTensor, "Bitwise xor (logical on `i1`).">;
def Partita_ShiftLeftOp : Partita_BinaryOp<"shift_left", Partita_IntTensor,
    "`x << y`, the shift taken as unsigned: 0 once it reaches the bit width.">;
def Partita_ShiftRightLogicalOp : Partita_BinaryOp<"shift_right_logical",
    Partita_IntTensor, [{`x >> y` filling with zeros (the bits of `x` read
    as unsigned), the shift taken as unsigned: 0 once it reaches the bit
    width.}]>;
def Partita_ShiftRightArithmeticOp : Partita_BinaryOp<"shift_right_arithmetic",
    Partita_IntTensor, [{`x >> y` filling with the sign bit, the shift taken
    as unsigned: all sign bits once it reaches the bit width.}]>;

def Partita_CompareOp : Partita_Op<"compare",
    [Pure, SameTypeOperands, InferTypeOpAdaptor, HasShardingRule]> {
  let summary = "Elementwise comparison";
  let description = [{
    Compares two tensors of the same type elementwise; the result has their
    shape and element type `i1`. Comparisons with NaN are false except `ne`.

    Example: `%m = partita.compare lt, %x, %y : tensor<4x8xf32>`
  }];
  let arguments = (ins Partita_CompareDirectionAttr:$direction,
                       Partita_Tensor:$lhs, Partita_Tensor:$rhs);
  let results = (outs Partita_BoolTensor:$result);
  let assemblyFormat = "$direction `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Partita_SelectOp : Partita_Op<"select",
    [Pure, AllTypesMatch<["on_true", "on_false", "result"]>, HasShardingRule]> {
  let summary = "Elementwise choice";
  let description = [{
    `result[i] = pred[i] ? on_true[i] : on_false[i]`.

    **Constraints:** `pred` is an `i1` tensor of the same shape as the values.

    Example: `%r = partita.select %m, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>`
  }];
  let arguments = (ins Partita_BoolTensor:$pred, Partita_Tensor:$on_true,
                       Partita_Tensor:$on_false);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_ConvertOp : Partita_Op<"convert", [Pure, SameOperandsAndResultShape, HasShardingRule]> {
  let summary = "Elementwise element type conversion";
  let description = [{
    Converts each element: float to float rounds to nearest even; float to
    integer truncates toward zero (saturating); integer to float rounds;
    anything to `i1` is `x != 0`.

    Example: `%h = partita.convert %x : tensor<4xf32> -> tensor<4xbf16>`
  }];
  let arguments = (ins Partita_Tensor:$operand);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
}

def Partita_BitcastConvertOp : Partita_Op<"bitcast_convert",
    [Pure, SameOperandsAndResultShape, HasShardingRule]> {
  let summary = "Elementwise reinterpretation of the bits";
  let description = [{
    Each element's bits read as the result's element type, which has the
    operand's bit width (`i32` <-> `f32`: how `jax.random` turns random
    bits into floats). `i1` is not reinterpreted.

    Example: `%f = partita.bitcast_convert %bits : tensor<4xi32> -> tensor<4xf32>`
  }];
  let arguments = (ins Partita_Tensor:$operand);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def Partita_EinsumOp : Partita_Op<"einsum", [Pure, HasShardingRule]> {
  let summary = "Tensor contraction written as an einsum spec";
  let description = [{
    Contracts one or two operands as the einsum `spec` says
    (`"bsd,dh->bsh"`). Each operand dimension has a one-letter label (a-z,
    A-Z); labels shared by operands are multiplied elementwise; labels that are
    absent from the output are summed over. The spec is also the op's factor
    mapping for sharding.

    **Constraints:**
    * one or two operands, one term per operand, and an explicit `->` output;
    * no label repeats within one term (no diagonals);
    * every output label appears in some operand;
    * dimensions with the same label have the same size; the result shape is
      given by the output term;
    * operands have the same element type; the result has it too, or `f32`
      when the operands are `bf16`/`f16` (wider accumulation).

    Example:
    ```mlir
    %y = partita.einsum "bsd,dh->bsh" %x, %w
        : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$spec, Variadic<Partita_Tensor>:$operands);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $spec $operands attr-dict `:` functional-type($operands, $result)
  }];
  let hasVerifier = 1;
}

def Partita_ReduceOp : Partita_Op<"reduce", [Pure, HasShardingRule]> {
  let summary = "Reduction over dimensions";
  let description = [{
    Combines elements along `dims` with `sum`, `max`, `min`, `and` or `or`;
    the reduced dimensions are removed from the result.

    **Constraints:** `dims` are distinct and in range; `and`/`or` need an
    integer operand; the result shape is the operand shape without `dims`, with
    the same element type.

    Example: `%s = partita.reduce sum %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>`
  }];
  let arguments = (ins Partita_ReductionKindAttr:$kind, Partita_Tensor:$operand,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `dims` `=` $dims attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_ArgmaxOp : Partita_Op<"argmax", [Pure, HasShardingRule]> {
  let summary = "Index of the largest element along a dimension";
  let description = [{
    The index of the maximum along `dim` (the first one on ties; NaN counts as
    the largest). The dimension is removed from the result.

    **Constraints:** `0 <= dim < rank`; result shape is the operand shape
    without `dim`; result element type `i32` or `i64`.

    Example: `%i = partita.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<4xi32>`
  }];
  let arguments = (ins Partita_Tensor:$operand, I64Attr:$dim);
  let results = (outs Partita_IndexTensor:$result);
  let assemblyFormat = [{
    $operand `dim` `=` $dim attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_TopKOp : Partita_Op<"top_k", [Pure, HasShardingRule]> {
  let summary = "The k largest elements along a dimension and their indices";
  let description = [{
    Along `dim`, the `k` largest values in descending order (ties: lower index
    first) and their indices.

    **Constraints:** `0 <= dim < rank`; `1 <= k <= size of dim`; both results
    have the operand shape with `dim` replaced by `k`; `values` has the operand
    element type, `indices` is `i32` or `i64`.

    Example:
    ```mlir
    %v, %i = partita.top_k %x dim = 1 k = 2
        : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, I64Attr:$dim, I64Attr:$k);
  let results = (outs Partita_Tensor:$values, Partita_IndexTensor:$indices);
  let assemblyFormat = [{
    $operand `dim` `=` $dim `k` `=` $k attr-dict `:` type($operand) `->`
    type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def Partita_CumsumOp : Partita_Op<"cumsum", [Pure, SameOperandsAndResultType, HasShardingRule]> {
  let summary = "Inclusive prefix sum along a dimension";
  let description = [{
    `result[.., i, ..] = sum(operand[.., j, ..] for j <= i)` along `dim`; with
    `reverse`, the sum runs over `j >= i`.

    **Constraints:** `0 <= dim < rank`.

    Example: `%c = partita.cumsum %x dim = 1 reverse : tensor<4x8xf32>`
  }];
  let arguments = (ins Partita_Tensor:$operand, I64Attr:$dim, UnitAttr:$reverse);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `dim` `=` $dim (`reverse` $reverse^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Partita_BroadcastOp : Partita_Op<"broadcast", [Pure, HasShardingRule]> {
  let summary = "Broadcast to a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]`; other result
    dimensions are new. An operand dimension of size 1 may expand.

    **Constraints:** one entry of `dims` per operand dimension, strictly
    increasing and below the result rank; each operand dimension has size 1 or
    the size of its result dimension; same element type.

    Example: `%b = partita.broadcast %x dims = [1] : tensor<8xf32> -> tensor<4x8xf32>`
  }];
  let arguments = (ins Partita_Tensor:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `dims` `=` $dims attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_ReshapeOp : Partita_Op<"reshape", [Pure, HasShardingRule]> {
  let summary = "Row-major reshape";
  let description = [{
    Reinterprets the elements in row-major order with a new shape.

    **Constraints:** same number of elements and element type.

    Example: `%r = partita.reshape %x : tensor<4x8xf32> -> tensor<32xf32>`
  }];
  let arguments = (ins Partita_Tensor:$operand);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def Partita_TransposeOp : Partita_Op<"transpose", [Pure, HasShardingRule]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is operand dimension `perm[i]`.

    **Constraints:** `perm` is a permutation of the operand's dimensions; the
    result shape and element type match.

    Example: `%t = partita.transpose %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>`
  }];
  let arguments = (ins Partita_Tensor:$operand, DenseI64ArrayAttr:$perm);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `perm` `=` $perm attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_SliceOp : Partita_Op<"slice", [Pure, HasShardingRule]> {
  let summary = "Static strided slice";
  let description = [{
    Along each dimension takes indices `start, start + stride, …` below
    `limit`.

    **Constraints:** one entry per dimension in `start`, `limit`, `stride`;
    `0 <= start <= limit <= size`; `stride >= 1`; result dimension is
    `ceil((limit - start) / stride)`; same element type.

    Example:
    ```mlir
    %s = partita.slice %x start = [0, 2] limit = [4, 8] stride = [1, 2]
        : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `start` `=` $start `limit` `=` $limit `stride` `=` $stride attr-dict
    `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_DynamicSliceOp : Partita_Op<"dynamic_slice", [Pure, HasShardingRule]> {
  let summary = "Slice at run-time start indices";
  let description = [{
    Takes a block of static size `sizes` starting at the run-time indices
    (one 0-d integer tensor per dimension). Each start index is clamped to
    `[0, size - sizes[d]]`, so the block is always in bounds.

    **Constraints:** one start index and one size per dimension;
    `0 <= sizes[d] <= size`; the result shape is `sizes`; same element type.

    Example:
    ```mlir
    %s = partita.dynamic_slice %x[%i, %j] sizes = [1, 8]
        : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1x8xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand,
                       Variadic<Partita_ScalarIndex>:$start_indices,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $start_indices `]` `sizes` `=` $sizes attr-dict `:`
    type($operand) `,` type($start_indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_DynamicUpdateSliceOp : Partita_Op<"dynamic_update_slice",
    [Pure, AllTypesMatch<["operand", "result"]>, HasShardingRule]> {
  let summary = "Overwrite a block at run-time start indices";
  let description = [{
    The operand with the block starting at the run-time indices replaced by
    `update`. Start indices are clamped as in `dynamic_slice`.

    **Constraints:** one start index per dimension; `update` has the operand's
    rank and element type and no larger dimensions.

    Example:
    ```mlir
    %r = partita.dynamic_update_slice %x, %u[%i, %j]
        : tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, Partita_Tensor:$update,
                       Variadic<Partita_ScalarIndex>:$start_indices);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $update `[` $start_indices `]` attr-dict `:` type($operand) `,`
    type($update) `,` type($start_indices)
  }];
  let hasVerifier = 1;
}

def Partita_ConcatenateOp : Partita_Op<"concatenate", [Pure, HasShardingRule]> {
  let summary = "Joins tensors along a dimension";
  let description = [{
    **Constraints:** at least one input; all inputs have the same rank and
    element type and agree on every dimension but `dim`; the result's `dim` is
    the sum of theirs.

    Example:
    ```mlir
    %c = partita.concatenate %a, %b dim = 0
        : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<5x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Partita_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` `=` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def Partita_PadOp : Partita_Op<"pad", [Pure, HasShardingRule]> {
  let summary = "Pads with a constant value";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after each dimension `d`,
    filled with the 0-d `padding_value`.

    **Constraints:** one non-negative entry per dimension in `low` and `high`;
    the padding value has the operand's element type; result dimension is
    `low + size + high`.

    Example:
    ```mlir
    %p = partita.pad %x, %zero low = [0, 1] high = [2, 0]
        : tensor<4x8xf32>, tensor<f32> -> tensor<6x9xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$operand, Partita_ScalarTensor:$padding_value,
                       DenseI64ArrayAttr:$low, DenseI64ArrayAttr:$high);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $padding_value `low` `=` $low `high` `=` $high attr-dict `:`
    type($operand) `,` type($padding_value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Partita_GatherOp : Partita_Op<"gather", [Pure, HasShardingRule]> {
  let summary = "Rows of a table by index";
  let description = [{
    `result[i..., r...] = table[clamp(indices[i...]), r...]`: looks up rows
    (slices along dimension 0) of `table`. Indices are clamped to
    `[0, rows - 1]`, as `scatter_add` does, so the two are exact adjoints.

    **Constraints:** `table` has rank ≥ 1; the result shape is
    `indices.shape ++ table.shape[1:]` with the table's element type.

    Example:
    ```mlir
    %e = partita.gather %table[%tokens]
        : tensor<1000x64xf32>, tensor<2x16xi32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$table, Partita_IndexTensor:$indices);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` type($table) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Partita_ScatterAddOp : Partita_Op<"scatter_add",
    [Pure, AllTypesMatch<["table", "result"]>, HasShardingRule]> {
  let summary = "Adds rows into a table by index";
  let description = [{
    The table with `updates[i..., r...]` added to row `clamp(indices[i...])`
    for every index position; repeated indices accumulate. The adjoint of
    `gather`.

    **Constraints:** `updates` has shape `indices.shape ++ table.shape[1:]` and
    the table's element type.

    Example:
    ```mlir
    %t = partita.scatter_add %table, %tokens, %grads
        : tensor<1000x64xf32>, tensor<2x16xi32>, tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Partita_Tensor:$table, Partita_IndexTensor:$indices,
                       Partita_Tensor:$updates);
  let results = (outs Partita_Tensor:$result);
  let assemblyFormat = [{
    $table `,` $indices `,` $updates attr-dict `:` type($table) `,`
    type($indices) `,` type($updates)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Control
//===----------------------------------------------------------------------===//

def Partita_LoopOp : Partita_Op<"loop",
    [RecursiveMemoryEffects, SingleBlock, HasShardingRule]> {
  let summary = "A counted loop with carried values";
  let description = [{
    Runs its body `trip_count` times. The body's first argument is the
    iteration number (a `tensor<i32>` counting from 0); the others are the
    carried values, initialised from the operands and replaced each iteration
    by the values the body yields. The results are the final carried values.
    Used for layer stacks and micro-batches.

    **Constraints:** `trip_count >= 0`; the body takes `tensor<i32>` followed
    by one argument per operand of the same type, and yields one value per
    operand of the same type; the results have the operands' types.

    Example:
    ```mlir
    %r = partita.loop 4 times (%i) iter_args(%acc = %x) : tensor<8xf32> {
      %n = partita.add %acc, %acc : tensor<8xf32>
      partita.yield %n : tensor<8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Partita_Tensor>:$inits, I64Attr:$trip_count);
  let results = (outs Variadic<Partita_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The iteration-number argument of the body.
    ::mlir::BlockArgument getIterationNumber() { return getBody().getArgument(0); }
    /// The carried-value arguments of the body.
    ::mlir::Block::BlockArgListType getCarried() {
      return getBody().getArguments().drop_front();
    }
  }];
}

def Partita_YieldOp : Partita_Op<"yield",
    [Pure, ReturnLike, Terminator,
     ParentOneOf<["LoopOp", "ManualComputationOp"]>]> {
  let summary = "Ends a loop body or manual computation";
  let description = [{
    Returns the values of a region: the next carried values of a `loop`, the
    local results of a `manual_computation`. The parent checks the types.

    Example: `partita.yield %a, %b : tensor<8xf32>, tensor<f32>`
  }];
  let arguments = (ins Variadic<Partita_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Partita_OptimizationBarrierOp : Partita_Op<"optimization_barrier",
    [InferTypeOpAdaptor, HasShardingRule]> {
  let summary = "Stops optimizations from moving computation across it";
  let description = [{
    Returns its operands unchanged. Passes treat it as opaque, so a value
    recomputed after the barrier is not merged with the original
    (activation checkpointing relies on this).

    **Constraints:** results have the operands' types.

    Example: `%a2, %b2 = partita.optimization_barrier %a, %b : tensor<8xf32>, tensor<4xf32>`
  }];
  let arguments = (ins Variadic<Partita_Tensor>:$operands);
  let results = (outs Variadic<Partita_Tensor>:$results);
  let assemblyFormat = "$operands attr-dict `:` type($operands)";
}

#endif // PARTITA_TENSOR_OPS_TD
