// Bad collectives: one case per verifier message.
// RUN: partita-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// The group: mesh and axes (shared by every collective)
//===----------------------------------------------------------------------===//

partita.mesh @grid = <["data"=2, "model"=4]>
// The mesh symbol names a partita.mesh.
func.func @group_mesh(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_gather' op refers to mesh @mesh, but no partita.mesh has that name}}
  %g = partita.all_gather %x on @mesh axes = ["model"] dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A group spans at least one axis.
func.func @group_empty(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_reduce' op needs at least one mesh axis}}
  %r = partita.all_reduce sum %x on @grid axes = [] : tensor<8x4xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Group axes exist on the mesh; the message lists the mesh's axes.
func.func @group_unknown_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.all_slice' op unknown mesh axis 'tensor'; @grid has axes 'data', 'model'}}
  %s = partita.all_slice %x on @grid axes = ["data", "tensor"] dim = 1 : tensor<8x16xf32> -> tensor<8x2xf32>
  return
}

// -----

partita.mesh @single = <[]>
// A mesh without axes has no groups.
func.func @group_axisless_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reduce_scatter' op unknown mesh axis 'x'; @single has no axes}}
  %s = partita.reduce_scatter sum %x on @single axes = ["x"] dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Group axes are listed once.
func.func @group_axis_twice(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.all_to_all' op mesh axis 'model' is listed twice}}
  %t = partita.all_to_all %x on @grid axes = ["model", "data", "model"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<1x128xf32>
  return
}

//===----------------------------------------------------------------------===//
// all_gather, all_slice
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The gathered dimension is in range.
func.func @all_gather_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_gather' op dim 2 is out of range for rank 2}}
  %g = partita.all_gather %x on @grid axes = ["model"] dim = 2 : tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The gathered dimension grows by the size of the whole group (here 2 x 4).
func.func @all_gather_result(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_gather' op result 'tensor<8x16xf32>' should be 'tensor<8x32xf32>'}}
  %g = partita.all_gather %x on @grid axes = ["data", "model"] dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The sliced dimension is in range.
func.func @all_slice_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.all_slice' op dim -1 is out of range for rank 2}}
  %s = partita.all_slice %x on @grid axes = ["model"] dim = -1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The group size divides the sliced dimension.
func.func @all_slice_divisible(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'partita.all_slice' op dimension 1 of size 6 is not divisible by the group size 4}}
  %s = partita.all_slice %x on @grid axes = ["model"] dim = 1 : tensor<8x6xf32> -> tensor<8x1xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Slicing keeps the element type.
func.func @all_slice_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.all_slice' op result 'tensor<8x4xf16>' should be 'tensor<8x4xf32>'}}
  %s = partita.all_slice %x on @grid axes = ["model"] dim = 1 : tensor<8x16xf32> -> tensor<8x4xf16>
  return
}

//===----------------------------------------------------------------------===//
// all_reduce, reduce_scatter
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// and/or combine integers only.
func.func @all_reduce_logical_float(%x: tensor<8xf32>) {
  // expected-error @+1 {{'partita.all_reduce' op 'and' needs an integer element type, got 'f32'}}
  %r = partita.all_reduce and %x on @grid axes = ["data"] : tensor<8xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The scattered dimension is in range.
func.func @reduce_scatter_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reduce_scatter' op dim 5 is out of range for rank 2}}
  %r = partita.reduce_scatter sum %x on @grid axes = ["data"] dim = 5 : tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The group size divides the scattered dimension.
func.func @reduce_scatter_divisible(%x: tensor<6x16xf32>) {
  // expected-error @+1 {{'partita.reduce_scatter' op dimension 0 of size 6 is not divisible by the group size 8}}
  %r = partita.reduce_scatter max %x on @grid axes = ["model", "data"] dim = 0 : tensor<6x16xf32> -> tensor<1x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// and/or scatter integers only.
func.func @reduce_scatter_logical_float(%x: tensor<8x16xbf16>) {
  // expected-error @+1 {{'partita.reduce_scatter' op 'or' needs an integer element type, got 'bf16'}}
  %r = partita.reduce_scatter or %x on @grid axes = ["data"] dim = 0 : tensor<8x16xbf16> -> tensor<4x16xbf16>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The scattered dimension shrinks by the group size.
func.func @reduce_scatter_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reduce_scatter' op result 'tensor<8x16xf32>' should be 'tensor<4x16xf32>'}}
  %r = partita.reduce_scatter sum %x on @grid axes = ["data"] dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// all_to_all
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The split dimension is in range.
func.func @all_to_all_split_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_to_all' op split_dim 2 is out of range for rank 2}}
  %t = partita.all_to_all %x on @grid axes = ["model"] split_dim = 2 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The concatenated dimension is in range.
func.func @all_to_all_concat_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_to_all' op concat_dim -1 is out of range for rank 2}}
  %t = partita.all_to_all %x on @grid axes = ["model"] split_dim = 0 concat_dim = -1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The group size divides the split dimension.
func.func @all_to_all_divisible(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_to_all' op dimension 1 of size 4 is not divisible by the group size 8}}
  %t = partita.all_to_all %x on @grid axes = ["data", "model"] split_dim = 1 concat_dim = 0 : tensor<8x4xf32> -> tensor<64x1xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Split shrinks one dimension and concatenation grows the other.
func.func @all_to_all_result(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.all_to_all' op result 'tensor<32x1xf32>' should be 'tensor<2x16xf32>'}}
  %t = partita.all_to_all %x on @grid axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<32x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// collective_permute
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Pairs come in twos (generic form: the custom syntax always writes pairs).
func.func @permute_odd(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.collective_permute' op pairs must hold (source, target) pairs; got 3 numbers}}
  %p = "partita.collective_permute"(%x) <{mesh = @grid, axes = ["model"], pairs = array<i64: 0, 1, 2>}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Positions are inside the group.
func.func @permute_position(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.collective_permute' op position 4 is outside the group of 4 devices}}
  %p = partita.collective_permute %x on @grid axes = ["model"] pairs = [0 -> 1, 3 -> 4] : tensor<4xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A device sends once.
func.func @permute_source(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.collective_permute' op source 0 appears twice}}
  %p = partita.collective_permute %x on @grid axes = ["model"] pairs = [0 -> 1, 0 -> 2] : tensor<4xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A device receives once.
func.func @permute_target(%x: tensor<4xf32>) {
  // expected-error @+1 {{'partita.collective_permute' op target 1 appears twice}}
  %p = partita.collective_permute %x on @grid axes = ["data", "model"] pairs = [0 -> 1, 7 -> 1] : tensor<4xf32>
  return
}
