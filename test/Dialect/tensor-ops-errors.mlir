// Bad tensor ops: one case per verifier and parser message.
// The loop case that needs a foreign terminator uses an unregistered op.
// RUN: partita-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

//===----------------------------------------------------------------------===//
// iota, select
//===----------------------------------------------------------------------===//

// The iota dimension is a dimension of the result.
func.func @iota_dim() {
  // expected-error @+1 {{'partita.iota' op dim 2 is out of range for rank 2}}
  %i = partita.iota dim = 2 : tensor<4x8xi32>
  return
}

// -----

// The predicate has the values' shape.
func.func @select_shape(%p: tensor<4xi1>, %x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.select' op predicate shape 'tensor<4xi1>' differs from the value shape 'tensor<8xf32>'}}
  %s = partita.select %p, %x, %x : tensor<4xi1>, tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// einsum
//===----------------------------------------------------------------------===//

// -----

// One or two operands only.
func.func @einsum_three(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.einsum' op takes one or two operands, got 3}}
  %r = partita.einsum "a,a,a->a" %x, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The output is explicit.
func.func @einsum_no_arrow(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum spec 'ab' needs an explicit output after '->'}}
  %r = partita.einsum "ab" %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// One input term per operand.
func.func @einsum_term_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum spec 'ab,bc->ac' has 2 input terms for 1 operands}}
  %r = partita.einsum "ab,bc->ac" %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Input labels are letters.
func.func @einsum_input_label(%x: tensor<4x8xf32>, %y: tensor<8x2xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum input term 1 has '1'; labels must be letters a-z or A-Z}}
  %r = partita.einsum "ab,b1->a" %x, %y : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4xf32>
  return
}

// -----

// Output labels are letters.
func.func @einsum_output_label(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum output term 0 has '_'; labels must be letters a-z or A-Z}}
  %r = partita.einsum "ab->a_" %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// No diagonals in an input term.
func.func @einsum_input_repeat(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum label 'a' repeats in input term 0 (diagonals are not supported)}}
  %r = partita.einsum "aa->a" %x : (tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

// No repeated label in the output either.
func.func @einsum_output_repeat(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum label 'a' repeats in output term 0 (diagonals are not supported)}}
  %r = partita.einsum "a->aa" %x : (tensor<4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// Every output label comes from an input.
func.func @einsum_output_unknown(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum output label 'c' appears in no input term}}
  %r = partita.einsum "ab->ac" %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Operands share an element type.
func.func @einsum_element_types(%x: tensor<4x8xf32>, %y: tensor<8x2xbf16>) {
  // expected-error @+1 {{'partita.einsum' op operands have different element types ('f32' and 'bf16')}}
  %r = partita.einsum "ab,bc->ac" %x, %y : (tensor<4x8xf32>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  return
}

// -----

// A term has one label per operand dimension.
func.func @einsum_term_rank(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum term 'abc' has 3 labels but operand 0 has rank 2}}
  %r = partita.einsum "abc->a" %x : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// A shared label has one size.
func.func @einsum_label_size(%x: tensor<4x8xf32>, %y: tensor<6x2xf32>) {
  // expected-error @+1 {{'partita.einsum' op einsum label 'b' has size 8 and size 6}}
  %r = partita.einsum "ab,bc->ac" %x, %y : (tensor<4x8xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

// The result shape follows the output term.
func.func @einsum_result_shape(%x: tensor<4x8xf32>, %y: tensor<8x2xf32>) {
  // expected-error @+1 {{'partita.einsum' op result shape 'tensor<2x4xf32>' does not match the expected shape [4, 2]}}
  %r = partita.einsum "ab,bc->ac" %x, %y : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Low-precision operands may widen to f32 only, not to another type.
func.func @einsum_result_element(%x: tensor<4x8xbf16>, %y: tensor<8x2xbf16>) {
  // expected-error @+1 {{'partita.einsum' op result element type 'f16' differs from the operand element type 'bf16'}}
  %r = partita.einsum "ab,bc->ac" %x, %y : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf16>
  return
}

//===----------------------------------------------------------------------===//
// reduce, argmax, top_k, cumsum
//===----------------------------------------------------------------------===//

// -----

// Reduced dimensions are in range.
func.func @reduce_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reduce' op reduced dimension 2 is out of range for rank 2}}
  %r = partita.reduce sum %x dims = [2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Each dimension is reduced once.
func.func @reduce_twice(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reduce' op reduces dimension 1 twice}}
  %r = partita.reduce max %x dims = [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// and/or reduce integers only.
func.func @reduce_logical_float(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reduce' op 'or' needs an integer operand, got 'f32'}}
  %r = partita.reduce or %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// The reduced dimensions disappear from the result.
func.func @reduce_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reduce' op result shape 'tensor<4x1xf32>' does not match the expected shape [4]}}
  %r = partita.reduce sum %x dims = [1] : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}

// -----

// The result keeps the operand's element type.
func.func @reduce_result_element(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'partita.reduce' op result element type 'i64' differs from the operand element type 'i32'}}
  %r = partita.reduce sum %x dims = [0, 1] : tensor<4x8xi32> -> tensor<i64>
  return
}

// -----

// argmax's dimension is in range.
func.func @argmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.argmax' op dim -1 is out of range for rank 2}}
  %r = partita.argmax %x dim = -1 : tensor<4x8xf32> -> tensor<4xi32>
  return
}

// -----

// argmax removes its dimension.
func.func @argmax_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.argmax' op result shape 'tensor<8xi32>' must be the operand shape without dimension 1}}
  %r = partita.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<8xi32>
  return
}

// -----

// top_k's dimension is in range.
func.func @top_k_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.top_k' op dim 3 is out of range for rank 2}}
  %v, %i = partita.top_k %x dim = 3 k = 2 : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  return
}

// -----

// k is at least 1 (and is reported as written, sign included).
func.func @top_k_k(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.top_k' op k = -1 must be in [1, 8], the size of dimension 1}}
  %v, %i = partita.top_k %x dim = 1 k = -1 : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  return
}

// -----

// The values have k elements along the dimension.
func.func @top_k_values(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.top_k' op result shape 'tensor<4x3xf32>' does not match the expected shape [4, 2]}}
  %v, %i = partita.top_k %x dim = 1 k = 2 : tensor<4x8xf32> -> tensor<4x3xf32>, tensor<4x2xi32>
  return
}

// -----

// The indices have the values' shape.
func.func @top_k_indices(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.top_k' op indices shape 'tensor<2x4xi64>' must equal the values shape}}
  %v, %i = partita.top_k %x dim = 1 k = 4 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<2x4xi64>
  return
}

// -----

// cumsum's dimension is in range.
func.func @cumsum_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.cumsum' op dim 2 is out of range for rank 2}}
  %c = partita.cumsum %x dim = 2 reverse : tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// broadcast, reshape, transpose
//===----------------------------------------------------------------------===//

// -----

// One broadcast dimension per operand dimension.
func.func @broadcast_dims_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.broadcast' op dims has 2 entries; expected one per dimension (1)}}
  %b = partita.broadcast %x dims = [0, 1] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Broadcast dimensions are result dimensions.
func.func @broadcast_dims_range(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.broadcast' op dims[0] = 2 is out of range for result rank 2}}
  %b = partita.broadcast %x dims = [2] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Broadcast does not permute.
func.func @broadcast_dims_order(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.broadcast' op dims must be strictly increasing; use partita.transpose to permute}}
  %b = partita.broadcast %x dims = [2, 1] : tensor<4x8xf32> -> tensor<2x8x4xf32>
  return
}

// -----

// Only size-1 dimensions expand.
func.func @broadcast_size(%x: tensor<3xf32>) {
  // expected-error @+1 {{'partita.broadcast' op operand dimension 0 of size 3 cannot broadcast to result dimension 1 of size 8}}
  %b = partita.broadcast %x dims = [1] : tensor<3xf32> -> tensor<4x8xf32>
  return
}

// -----

// Broadcast keeps the element type.
func.func @broadcast_element(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.broadcast' op result element type differs from the operand's}}
  %b = partita.broadcast %x dims = [1] : tensor<8xf32> -> tensor<4x8xf16>
  return
}

// -----

// Reshape keeps the element count.
func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reshape' op cannot reshape 'tensor<4x8xf32>' (32 elements) to 'tensor<30xf32>' (30 elements)}}
  %r = partita.reshape %x : tensor<4x8xf32> -> tensor<30xf32>
  return
}

// -----

// Reshape keeps the element type.
func.func @reshape_element(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.reshape' op result element type differs from the operand's}}
  %r = partita.reshape %x : tensor<4x8xf32> -> tensor<32xi32>
  return
}

// -----

// One perm entry per dimension.
func.func @transpose_perm_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.transpose' op perm has 1 entries; expected one per dimension (2)}}
  %t = partita.transpose %x perm = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// perm is a permutation.
func.func @transpose_perm(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.transpose' op perm [1, 1] is not a permutation of the operand's 2 dimensions}}
  %t = partita.transpose %x perm = [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

// The result is the permuted operand shape.
func.func @transpose_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.transpose' op result shape 'tensor<4x8xf32>' does not match the expected shape [8, 4]}}
  %t = partita.transpose %x perm = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// slice, dynamic_slice, dynamic_update_slice
//===----------------------------------------------------------------------===//

// -----

// One stride per dimension.
func.func @slice_stride_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.slice' op stride has 1 entries; expected one per dimension (2)}}
  %s = partita.slice %x start = [0, 0] limit = [4, 8] stride = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Bounds stay inside the operand and start does not pass limit.
func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.slice' op dimension 1: need 0 <= start (6) <= limit (4) <= size (8)}}
  %s = partita.slice %x start = [0, 6] limit = [4, 4] stride = [1, 1] : tensor<4x8xf32> -> tensor<4x0xf32>
  return
}

// -----

// Strides are positive.
func.func @slice_stride(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.slice' op dimension 0: stride 0 must be at least 1}}
  %s = partita.slice %x start = [0, 0] limit = [4, 8] stride = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// The result has ceil((limit - start) / stride) elements per dimension,
// computed without overflow even for a huge stride.
func.func @slice_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.slice' op result shape 'tensor<4x2xf32>' does not match the expected shape [4, 1]}}
  %s = partita.slice %x start = [0, 1] limit = [4, 8] stride = [1, 9223372036854775807] : tensor<4x8xf32> -> tensor<4x2xf32>
  return
}

// -----

// One start index per dimension.
func.func @dynamic_slice_indices(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_slice' op has 1 start indices; expected one per dimension (2)}}
  %s = partita.dynamic_slice %x[%i] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32> -> tensor<1x8xf32>
  return
}

// -----

// One size per dimension.
func.func @dynamic_slice_sizes_count(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_slice' op sizes has 1 entries; expected one per dimension (2)}}
  %s = partita.dynamic_slice %x[%i, %i] sizes = [1] : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1xf32>
  return
}

// -----

// The block fits in the operand.
func.func @dynamic_slice_size(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_slice' op sizes[1] = 9 must be in [0, 8]}}
  %s = partita.dynamic_slice %x[%i, %i] sizes = [1, 9] : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1x9xf32>
  return
}

// -----

// The result shape is `sizes`.
func.func @dynamic_slice_result(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_slice' op result shape 'tensor<1x4xf32>' does not match the expected shape [1, 8]}}
  %s = partita.dynamic_slice %x[%i, %i] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1x4xf32>
  return
}

// -----

// One start index per dimension for updates too.
func.func @dynamic_update_slice_indices(%x: tensor<4x8xf32>, %u: tensor<1x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_update_slice' op has 3 start indices; expected one per dimension (2)}}
  %r = partita.dynamic_update_slice %x, %u[%i, %i, %i] : tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>
  return
}

// -----

// The update has the operand's rank.
func.func @dynamic_update_slice_rank(%x: tensor<4x8xf32>, %u: tensor<8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_update_slice' op update rank 1 differs from the operand rank 2}}
  %r = partita.dynamic_update_slice %x, %u[%i, %i] : tensor<4x8xf32>, tensor<8xf32>, tensor<i32>, tensor<i32>
  return
}

// -----

// The update has the operand's element type.
func.func @dynamic_update_slice_element(%x: tensor<4x8xf32>, %u: tensor<1x8xbf16>, %i: tensor<i32>) {
  // expected-error @+1 {{'partita.dynamic_update_slice' op update element type differs from the operand's}}
  %r = partita.dynamic_update_slice %x, %u[%i, %i] : tensor<4x8xf32>, tensor<1x8xbf16>, tensor<i32>, tensor<i32>
  return
}

// -----

// The update fits in the operand.
func.func @dynamic_update_slice_size(%x: tensor<4x8xf32>, %u: tensor<1x9xf32>, %i: tensor<i64>) {
  // expected-error @+1 {{'partita.dynamic_update_slice' op update dimension 1 (9) is larger than the operand's (8)}}
  %r = partita.dynamic_update_slice %x, %u[%i, %i] : tensor<4x8xf32>, tensor<1x9xf32>, tensor<i64>, tensor<i64>
  return
}

//===----------------------------------------------------------------------===//
// concatenate, pad
//===----------------------------------------------------------------------===//

// -----

// Nothing to concatenate.
func.func @concatenate_empty() {
  // expected-error @+1 {{'partita.concatenate' op needs at least one input}}
  %c = partita.concatenate dim = 0 : () -> tensor<4xf32>
  return
}

// -----

// The dimension is in range.
func.func @concatenate_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'partita.concatenate' op dim 2 is out of range for rank 2}}
  %c = partita.concatenate %x, %x dim = 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

// Inputs share rank and element type.
func.func @concatenate_rank(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'partita.concatenate' op input 1 ('tensor<8xf32>') differs in rank or element type from input 0 ('tensor<4x8xf32>')}}
  %c = partita.concatenate %x, %y dim = 0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<12x8xf32>
  return
}

// -----

// Inputs agree on every other dimension.
func.func @concatenate_sizes(%x: tensor<4x8xf32>, %y: tensor<2x6xf32>) {
  // expected-error @+1 {{'partita.concatenate' op input 1 has size 6 in dimension 1 but input 0 has 8}}
  %c = partita.concatenate %x, %y dim = 0 : (tensor<4x8xf32>, tensor<2x6xf32>) -> tensor<6x8xf32>
  return
}

// -----

// The result's dimension is the sum of the inputs'.
func.func @concatenate_result(%x: tensor<4x8xf32>, %y: tensor<2x8xf32>) {
  // expected-error @+1 {{'partita.concatenate' op result shape 'tensor<8x8xf32>' does not match the expected shape [6, 8]}}
  %c = partita.concatenate %x, %y dim = 0 : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

// One low padding per dimension.
func.func @pad_low_count(%x: tensor<4x8xf32>, %z: tensor<f32>) {
  // expected-error @+1 {{'partita.pad' op low has 3 entries; expected one per dimension (2)}}
  %p = partita.pad %x, %z low = [0, 0, 0] high = [0, 0] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return
}

// -----

// The padding value has the operand's element type.
func.func @pad_value(%x: tensor<4x8xf32>, %z: tensor<i32>) {
  // expected-error @+1 {{'partita.pad' op padding value type 'tensor<i32>' does not match the operand element type 'f32'}}
  %p = partita.pad %x, %z low = [0, 0] high = [0, 0] : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>
  return
}

// -----

// Padding does not crop.
func.func @pad_negative(%x: tensor<4x8xf32>, %z: tensor<f32>) {
  // expected-error @+1 {{'partita.pad' op dimension 1: padding must be non-negative (use partita.slice to crop)}}
  %p = partita.pad %x, %z low = [0, 1] high = [0, -2] : tensor<4x8xf32>, tensor<f32> -> tensor<4x7xf32>
  return
}

// -----

// The result grows by low + high.
func.func @pad_result(%x: tensor<4x8xf32>, %z: tensor<f32>) {
  // expected-error @+1 {{'partita.pad' op result shape 'tensor<4x8xf32>' does not match the expected shape [5, 10]}}
  %p = partita.pad %x, %z low = [1, 0] high = [0, 2] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// gather, scatter_add
//===----------------------------------------------------------------------===//

// -----

// A table has rows.
func.func @gather_scalar_table(%t: tensor<f32>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{'partita.gather' op table must have rank at least 1}}
  %g = partita.gather %t[%ids] : tensor<f32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

// The result is indices.shape ++ table.shape[1:].
func.func @gather_result(%t: tensor<100x16xf32>, %ids: tensor<2x5xi32>) {
  // expected-error @+1 {{'partita.gather' op result shape 'tensor<10x16xf32>' does not match the expected shape [2, 5, 16]}}
  %g = partita.gather %t[%ids] : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<10x16xf32>
  return
}

// -----

// scatter_add needs a table with rows too.
func.func @scatter_scalar_table(%t: tensor<f32>, %ids: tensor<4xi32>, %u: tensor<4xf32>) {
  // expected-error @+1 {{'partita.scatter_add' op table must have rank at least 1}}
  %s = partita.scatter_add %t, %ids, %u : tensor<f32>, tensor<4xi32>, tensor<4xf32>
  return
}

// -----

// Updates have the gathered shape and the table's element type.
func.func @scatter_updates(%t: tensor<100x16xf32>, %ids: tensor<2x5xi32>, %u: tensor<2x5x16xbf16>) {
  // expected-error @+1 {{'partita.scatter_add' op updates 'tensor<2x5x16xbf16>' must have shape indices.shape ++ table.shape[1:] = [2, 5, 16] and the table's element type}}
  %s = partita.scatter_add %t, %ids, %u : tensor<100x16xf32>, tensor<2x5xi32>, tensor<2x5x16xbf16>
  return
}

//===----------------------------------------------------------------------===//
// loop, yield
//===----------------------------------------------------------------------===//

// -----

// The custom syntax needs one type per carried value.
func.func @loop_types(%x: tensor<8xf32>) {
  // expected-error @+1 {{custom op 'partita.loop' loop has 2 carried values but 1 types}}
  %r:2 = partita.loop 2 times (%i) iter_args(%a = %x, %b = %x) : tensor<8xf32> {
    partita.yield %a, %b : tensor<8xf32>, tensor<8xf32>
  }
  return
}

// -----

// A loop cannot run a negative number of times.
func.func @loop_negative(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op trip count -1 must be non-negative}}
  %r = partita.loop -1 times (%i) iter_args(%a = %x) : tensor<8xf32> {
    partita.yield %a : tensor<8xf32>
  }
  return
}

// -----

// One result per carried value (generic form: the custom syntax cannot say it).
func.func @loop_results(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op has 2 results for 1 carried values}}
  %r:2 = "partita.loop"(%x) <{trip_count = 1 : i64}> ({
  ^bb0(%i: tensor<i32>, %a: tensor<8xf32>):
    partita.yield %a : tensor<8xf32>
  }) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// The body takes the iteration number and the carried values.
func.func @loop_body_arguments(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op body takes 1 arguments; expected the iteration number and 1 carried values}}
  %r = "partita.loop"(%x) <{trip_count = 1 : i64}> ({
  ^bb0(%a: tensor<8xf32>):
    partita.yield %a : tensor<8xf32>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// The iteration number is a tensor<i32>.
func.func @loop_counter(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op the iteration number must be a tensor<i32>, got 'tensor<i64>'}}
  %r = "partita.loop"(%x) <{trip_count = 1 : i64}> ({
  ^bb0(%i: tensor<i64>, %a: tensor<8xf32>):
    partita.yield %a : tensor<8xf32>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Body arguments have the carried values' types.
func.func @loop_carried(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op carried value 0 is 'tensor<8xf32>' but the body argument is 'tensor<4xf32>'}}
  %r = "partita.loop"(%x) <{trip_count = 1 : i64}> ({
  ^bb0(%i: tensor<i32>, %a: tensor<4xf32>):
    partita.yield %a : tensor<4xf32>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Results have the carried values' types.
func.func @loop_result_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op result 0 differs in type from its initial value}}
  %r = "partita.loop"(%x) <{trip_count = 1 : i64}> ({
  ^bb0(%i: tensor<i32>, %a: tensor<8xf32>):
    partita.yield %a : tensor<8xf32>
  }) : (tensor<8xf32>) -> tensor<8xi32>
  return
}

// -----

// The body ends with partita.yield, not with another terminator.
func.func @loop_terminator(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.loop' op body must end with partita.yield}}
  %r = partita.loop 1 times (%i) iter_args(%a = %x) : tensor<8xf32> {
    "test.terminator"() : () -> ()
  }
  return
}

// -----

// The body yields the next carried values.
func.func @loop_yield(%x: tensor<8xf32>, %s: tensor<f32>) {
  %r:2 = partita.loop 1 times (%i) iter_args(%a = %x, %b = %s) : tensor<8xf32>, tensor<f32> {
    // expected-error @+1 {{'partita.yield' op yields 1 values whose types differ from the loop's 2 carried values}}
    partita.yield %a : tensor<8xf32>
  }
  return
}

// -----

func.func @bitcast_width(%x: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'partita.bitcast_convert' op reinterprets elements of one bit width wider than 1 as another type of that width, got 'i64' -> 'f32'}}
  %0 = partita.bitcast_convert %x : tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @shift_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'partita.shift_left' op operand #0 must be statically shaped tensor of}}
  %0 = partita.shift_left %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
