// Round trip of the collectives (local shapes): custom form, and through the
// generic form.
// RUN: partita-opt %s | partita-opt | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --mlir-print-op-generic | partita-opt | FileCheck %s --enable-var-scope

partita.mesh @grid = <["data"=2, "model"=4]>
partita.mesh @cube = <["pipe"=2, "data"=2, "model"=2], device_ids = [7, 6, 5, 4, 3, 2, 1, 0]>

// all_gather multiplies the gathered dimension by the group size: 4 on one
// axis, 8 on two axes (listed order is the group order), 8 on a 3-D mesh.
// CHECK-LABEL: func.func @all_gather
func.func @all_gather(%x: tensor<8x4xf32>) -> (tensor<8x16xf32>, tensor<64x4xf32>, tensor<8x32xf32>) {
  // CHECK: %[[A:.*]] = partita.all_gather %{{.*}} on @grid axes = ["model"] dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  %a = partita.all_gather %x on @grid axes = ["model"] dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  // CHECK: %[[B:.*]] = partita.all_gather %{{.*}} on @grid axes = ["model", "data"] dim = 0 : tensor<8x4xf32> -> tensor<64x4xf32>
  %b = partita.all_gather %x on @grid axes = ["model", "data"] dim = 0 : tensor<8x4xf32> -> tensor<64x4xf32>
  // CHECK: %[[C:.*]] = partita.all_gather %{{.*}} on @cube axes = ["pipe", "data", "model"] dim = 1 : tensor<8x4xf32> -> tensor<8x32xf32>
  %c = partita.all_gather %x on @cube axes = ["pipe", "data", "model"] dim = 1 : tensor<8x4xf32> -> tensor<8x32xf32>
  // CHECK: return %[[A]], %[[B]], %[[C]]
  return %a, %b, %c : tensor<8x16xf32>, tensor<64x4xf32>, tensor<8x32xf32>
}

// all_slice divides the sliced dimension by the group size, on one and on
// several axes.
// CHECK-LABEL: func.func @all_slice
func.func @all_slice(%x: tensor<8x16xi32>) -> (tensor<8x4xi32>, tensor<1x16xi32>) {
  // CHECK: %[[A:.*]] = partita.all_slice %{{.*}} on @grid axes = ["model"] dim = 1 : tensor<8x16xi32> -> tensor<8x4xi32>
  %a = partita.all_slice %x on @grid axes = ["model"] dim = 1 : tensor<8x16xi32> -> tensor<8x4xi32>
  // CHECK: %[[B:.*]] = partita.all_slice %{{.*}} on @grid axes = ["data", "model"] dim = 0 : tensor<8x16xi32> -> tensor<1x16xi32>
  %b = partita.all_slice %x on @grid axes = ["data", "model"] dim = 0 : tensor<8x16xi32> -> tensor<1x16xi32>
  // CHECK: return %[[A]], %[[B]]
  return %a, %b : tensor<8x4xi32>, tensor<1x16xi32>
}

// all_reduce of every kind on floats (sum, max, min) and integers (and, or on
// i1 and i32), on one and several axes; the type is unchanged.
// CHECK-LABEL: func.func @all_reduce
func.func @all_reduce(%x: tensor<8x16xbf16>, %m: tensor<8xi1>, %n: tensor<4xi32>) -> (tensor<8x16xbf16>, tensor<8xi1>, tensor<4xi32>) {
  // CHECK: %[[S:.*]] = partita.all_reduce sum %{{.*}} on @grid axes = ["model"] : tensor<8x16xbf16>
  %s = partita.all_reduce sum %x on @grid axes = ["model"] : tensor<8x16xbf16>
  // CHECK: %[[MX:.*]] = partita.all_reduce max %[[S]] on @grid axes = ["data", "model"] : tensor<8x16xbf16>
  %mx = partita.all_reduce max %s on @grid axes = ["data", "model"] : tensor<8x16xbf16>
  // CHECK: %[[MN:.*]] = partita.all_reduce min %[[MX]] on @cube axes = ["model", "pipe"] : tensor<8x16xbf16>
  %mn = partita.all_reduce min %mx on @cube axes = ["model", "pipe"] : tensor<8x16xbf16>
  // CHECK: %[[AND:.*]] = partita.all_reduce and %{{.*}} on @grid axes = ["data"] : tensor<8xi1>
  %and = partita.all_reduce and %m on @grid axes = ["data"] : tensor<8xi1>
  // CHECK: %[[OR:.*]] = partita.all_reduce or %{{.*}} on @cube axes = ["pipe", "data", "model"] : tensor<4xi32>
  %or = partita.all_reduce or %n on @cube axes = ["pipe", "data", "model"] : tensor<4xi32>
  // CHECK: return %[[MN]], %[[AND]], %[[OR]]
  return %mn, %and, %or : tensor<8x16xbf16>, tensor<8xi1>, tensor<4xi32>
}

// reduce_scatter reduces and keeps one block of the scattered dimension:
// float and integer kinds, on one and several axes.
// CHECK-LABEL: func.func @reduce_scatter
func.func @reduce_scatter(%x: tensor<8x16xf32>, %b: tensor<16xi8>) -> (tensor<4x16xf32>, tensor<8x2xf32>, tensor<8x16xf32>, tensor<2xi8>, tensor<8xi8>) {
  // CHECK: %[[A:.*]] = partita.reduce_scatter sum %{{.*}} on @grid axes = ["data"] dim = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  %a = partita.reduce_scatter sum %x on @grid axes = ["data"] dim = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK: %[[MX:.*]] = partita.reduce_scatter max %{{.*}} on @grid axes = ["model", "data"] dim = 1 : tensor<8x16xf32> -> tensor<8x2xf32>
  %mx = partita.reduce_scatter max %x on @grid axes = ["model", "data"] dim = 1 : tensor<8x16xf32> -> tensor<8x2xf32>
  // CHECK: %[[MN:.*]] = partita.reduce_scatter min %{{.*}} on @cube axes = ["pipe"] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %mn = partita.reduce_scatter min %x on @cube axes = ["pipe"] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %mg = partita.all_gather %mn on @cube axes = ["pipe"] dim = 1 : tensor<8x8xf32> -> tensor<8x16xf32>
  // CHECK: %[[AND:.*]] = partita.reduce_scatter and %{{.*}} on @cube axes = ["pipe", "data", "model"] dim = 0 : tensor<16xi8> -> tensor<2xi8>
  %and = partita.reduce_scatter and %b on @cube axes = ["pipe", "data", "model"] dim = 0 : tensor<16xi8> -> tensor<2xi8>
  // CHECK: %[[OR:.*]] = partita.reduce_scatter or %{{.*}} on @grid axes = ["data"] dim = 0 : tensor<16xi8> -> tensor<8xi8>
  %or = partita.reduce_scatter or %b on @grid axes = ["data"] dim = 0 : tensor<16xi8> -> tensor<8xi8>
  // CHECK: return %[[A]], %[[MX]], %{{.*}}, %[[AND]], %[[OR]]
  return %a, %mx, %mg, %and, %or : tensor<4x16xf32>, tensor<8x2xf32>, tensor<8x16xf32>, tensor<2xi8>, tensor<8xi8>
}

// all_to_all between two dimensions, within one dimension (the shape is
// unchanged), and on a group of two axes.
// CHECK-LABEL: func.func @all_to_all
func.func @all_to_all(%x: tensor<8x4xf32>) -> (tensor<2x16xf32>, tensor<8x4xf32>, tensor<1x32xf32>) {
  // CHECK: %[[A:.*]] = partita.all_to_all %{{.*}} on @grid axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  %a = partita.all_to_all %x on @grid axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  // CHECK: %[[B:.*]] = partita.all_to_all %{{.*}} on @grid axes = ["model"] split_dim = 1 concat_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %b = partita.all_to_all %x on @grid axes = ["model"] split_dim = 1 concat_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: %[[C:.*]] = partita.all_to_all %{{.*}} on @grid axes = ["data", "model"] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<1x32xf32>
  %c = partita.all_to_all %x on @grid axes = ["data", "model"] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<1x32xf32>
  // CHECK: return %[[A]], %[[B]], %[[C]]
  return %a, %b, %c : tensor<2x16xf32>, tensor<8x4xf32>, tensor<1x32xf32>
}

// collective_permute: a swap, a partial shift (position 0 receives zeros),
// a ring on a group of two axes, and no pairs at all.
// CHECK-LABEL: func.func @collective_permute
func.func @collective_permute(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[A:.*]] = partita.collective_permute %{{.*}} on @grid axes = ["data"] pairs = [0 -> 1, 1 -> 0] : tensor<4x16xf32>
  %a = partita.collective_permute %x on @grid axes = ["data"] pairs = [0 -> 1, 1 -> 0] : tensor<4x16xf32>
  // CHECK: %[[B:.*]] = partita.collective_permute %[[A]] on @grid axes = ["model"] pairs = [0 -> 1, 1 -> 2, 2 -> 3] : tensor<4x16xf32>
  %b = partita.collective_permute %a on @grid axes = ["model"] pairs = [0 -> 1, 1 -> 2, 2 -> 3] : tensor<4x16xf32>
  // CHECK: %[[C:.*]] = partita.collective_permute %[[B]] on @grid axes = ["model", "data"] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 4, 4 -> 5, 5 -> 6, 6 -> 7, 7 -> 0] : tensor<4x16xf32>
  %c = partita.collective_permute %b on @grid axes = ["model", "data"] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 4, 4 -> 5, 5 -> 6, 6 -> 7, 7 -> 0] : tensor<4x16xf32>
  // CHECK: %[[D:.*]] = partita.collective_permute %[[C]] on @cube axes = ["pipe"] pairs = [] : tensor<4x16xf32>
  %d = partita.collective_permute %c on @cube axes = ["pipe"] pairs = [] : tensor<4x16xf32>
  // CHECK: return %[[D]]
  return %d : tensor<4x16xf32>
}

// Collectives on 0-d values (all_reduce, collective_permute need no dimension)
// and sharding annotations on a collective's result.
// CHECK-LABEL: func.func @scalars_and_annotations
func.func @scalars_and_annotations(%s: tensor<f32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<8x16xf32>) {
  // CHECK: %[[R:.*]] = partita.all_reduce sum %{{.*}} on @cube axes = ["data"] : tensor<f32>
  %r = partita.all_reduce sum %s on @cube axes = ["data"] : tensor<f32>
  // CHECK: %[[P:.*]] = partita.collective_permute %[[R]] on @cube axes = ["data"] pairs = [1 -> 0] : tensor<f32>
  %p = partita.collective_permute %r on @cube axes = ["data"] pairs = [1 -> 0] : tensor<f32>
  // CHECK: %[[G:.*]] = partita.all_gather %{{.*}} on @grid axes = ["model"] dim = 1 {partita.sharding = #partita.sharding<@grid, [{"data"}, {}]>} : tensor<8x4xf32> -> tensor<8x16xf32>
  %g = partita.all_gather %x on @grid axes = ["model"] dim = 1 {partita.sharding = #partita.sharding<@grid, [{"data"}, {}]>} : tensor<8x4xf32> -> tensor<8x16xf32>
  // CHECK: return %[[P]], %[[G]]
  return %p, %g : tensor<f32>, tensor<8x16xf32>
}
