// RUN: partita-opt %s --split-input-file --partita-cleanup-collectives | FileCheck %s --enable-var-scope

partita.mesh @mesh = <["x"=4]>
// A slice undone by a gather on the same axes and dimension disappears.
// CHECK-LABEL: func.func @cancel
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>)
// CHECK-NOT: partita.all_
// CHECK: return %[[X]]
func.func @cancel(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = partita.all_slice %x on @mesh axes = ["x"] dim = 0 {partita.reason = "a"} : tensor<8x8xf32> -> tensor<2x8xf32>
  %g = partita.all_gather %s on @mesh axes = ["x"] dim = 0 {partita.reason = "b"} : tensor<2x8xf32> -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}
// An all_to_all and its inverse disappear.
// CHECK-LABEL: func.func @cancel_all_to_all
// CHECK-NOT: partita.all_to_all
func.func @cancel_all_to_all(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %a = partita.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 {partita.reason = "a"} : tensor<2x8xf32> -> tensor<8x2xf32>
  %b = partita.all_to_all %a on @mesh axes = ["x"] split_dim = 0 concat_dim = 1 {partita.reason = "b"} : tensor<8x2xf32> -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}
// Two identical gathers of one value become one.
// CHECK-LABEL: func.func @merge
// CHECK-COUNT-1: partita.all_gather
// CHECK-NOT: partita.all_gather
// CHECK: partita.add %[[G:.*]], %[[G]]
func.func @merge(%x: tensor<2x8xf32>) -> tensor<8x8xf32> {
  %a = partita.all_gather %x on @mesh axes = ["x"] dim = 0 {partita.reason = "first use"} : tensor<2x8xf32> -> tensor<8x8xf32>
  %b = partita.all_gather %x on @mesh axes = ["x"] dim = 0 {partita.reason = "second use"} : tensor<2x8xf32> -> tensor<8x8xf32>
  %s = partita.add %a, %b : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
// An all_reduce followed by an all_slice on the same axes is a reduce_scatter.
// CHECK-LABEL: func.func @fuse
// CHECK: partita.reduce_scatter sum %{{.*}} on @mesh axes = ["x"] dim = 1 {partita.reason = "needed whole"
// CHECK-NOT: partita.all_reduce
func.func @fuse(%x: tensor<8x8xf32>) -> tensor<8x2xf32> {
  %r = partita.all_reduce sum %x on @mesh axes = ["x"] {partita.reason = "needed whole"} : tensor<8x8xf32>
  %s = partita.all_slice %r on @mesh axes = ["x"] dim = 1 {partita.reason = "needed split"} : tensor<8x8xf32> -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}
// A reduce_scatter over "x" gathered back over ("y", "x") along the same
// dimension: an all_reduce over "x" (which packs with the gradients'
// bucket) and a gather over "y" alone, the same bytes.
// CHECK-LABEL: func.func @scatter_then_gather
// CHECK: %[[R:.*]] = partita.all_reduce sum %{{.*}} on @mesh2 axes = ["x"] {partita.reason = "partial"} : tensor<8x2xf32>
// CHECK-NEXT: %[[G:.*]] = partita.all_gather %[[R]] on @mesh2 axes = ["y"] dim = 0 {partita.reason = "whole"} : tensor<8x2xf32> -> tensor<16x2xf32>
// CHECK-NEXT: %[[W:.*]] = partita.all_reduce sum %{{.*}} on @mesh2 axes = ["x"] {partita.reason = "partial"} : tensor<8x2xf32>
// CHECK-NEXT: return %[[G]], %[[W]]
partita.mesh @mesh2 = <["y"=2, "x"=2]>
func.func @scatter_then_gather(%p: tensor<8x2xf32>, %q: tensor<8x2xf32>) -> (tensor<16x2xf32>, tensor<8x2xf32>) {
  %s = partita.reduce_scatter sum %p on @mesh2 axes = ["x"] dim = 0 {partita.reason = "partial"} : tensor<8x2xf32> -> tensor<4x2xf32>
  %g = partita.all_gather %s on @mesh2 axes = ["y", "x"] dim = 0 {partita.reason = "whole"} : tensor<4x2xf32> -> tensor<16x2xf32>
  %t = partita.reduce_scatter sum %q on @mesh2 axes = ["x"] dim = 0 {partita.reason = "partial"} : tensor<8x2xf32> -> tensor<4x2xf32>
  %w = partita.all_gather %t on @mesh2 axes = ["x"] dim = 0 {partita.reason = "whole"} : tensor<4x2xf32> -> tensor<8x2xf32>
  return %g, %w : tensor<16x2xf32>, tensor<8x2xf32>
}
// Making a zero partial moves nothing.
// CHECK-LABEL: func.func @zero
// CHECK-NOT: partita.collective_permute
func.func @zero() -> tensor<8xf32> {
  %z = partita.constant dense<0.0> : tensor<8xf32>
  %p = partita.collective_permute %z on @mesh axes = ["x"] pairs = [0 -> 0] {partita.reason = "partial"} : tensor<8xf32>
  return %p : tensor<8xf32>
}
// Collectives a user wrote (no reason) stay as written.
// CHECK-LABEL: func.func @users_own
// CHECK: partita.all_slice
// CHECK: partita.all_gather
func.func @users_own(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = partita.all_slice %x on @mesh axes = ["x"] dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
  %g = partita.all_gather %s on @mesh axes = ["x"] dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}
