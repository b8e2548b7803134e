// RUN: partita-opt %s --split-input-file --partita-propagate --partita-partition | FileCheck %s --enable-var-scope
//
// Sums over different axes join over the axes they share
// (docs/Propagation.md, "Partial values"): a gradient partial over data and
// model added to a sum kept partial over data is all-reduced over model
// alone, and the sum stays partial over data (a pipelined step's gradient
// accumulator beside tensor parallelism).

// CHECK-LABEL: func.func @join_over_shared_axes
// CHECK: %[[G:.*]] = partita.einsum "bd,bf->df"
// CHECK-SAME: partial = sum{"data", "model"}
// CHECK-NOT: axes = ["data"
// CHECK: %[[R:.*]] = partita.all_reduce sum %[[G]] on @mesh axes = ["model"] {partita.reason = "operand 1 of partita.add {{.*}}(joins a sum over fewer axes)
// CHECK-NOT: axes = ["data"
// CHECK: partita.add %arg2, %[[R]]
// CHECK-SAME: partial = sum{"data"}
// CHECK-NOT: partita.all_reduce
// CHECK: return
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @join_over_shared_axes(
    %x: tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{"data", "model"}, {}]>},
    %y: tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data", "model"}, {}]>},
    %acc: tensor<6x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>})
    -> (tensor<6x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>}) {
  %g = partita.einsum "bd,bf->df" %x, %y : (tensor<8x6xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %sum = partita.add %acc, %g : tensor<6x4xf32>
  return %sum : tensor<6x4xf32>
}

// -----

// Sums over the same axes join as they are: nothing is reduced.
// CHECK-LABEL: func.func @sum_and_sum_same_axes
// CHECK-NOT: partita.all_reduce
// CHECK: partita.add
// CHECK-SAME: partial = sum{"data"}
// CHECK-NOT: partita.all_reduce
// CHECK: return
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @sum_and_sum_same_axes(
    %x: tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %y: tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %acc: tensor<6x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>})
    -> (tensor<6x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>}) {
  %g = partita.einsum "bd,bf->df" %x, %y : (tensor<8x6xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %sum = partita.add %acc, %g : tensor<6x4xf32>
  return %sum : tensor<6x4xf32>
}
