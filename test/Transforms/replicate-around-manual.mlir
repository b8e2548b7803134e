// RUN: partita-opt %s --partita-replicate-around-manual -split-input-file | FileCheck %s -enable-var-scope

partita.mesh @mesh = <["data"=4, "model"=2]>

// Arguments and results become replicated, shardings and constraints outside
// the manual region go, the region's own shardings and body stay.
// CHECK-LABEL: func.func @around
// CHECK-SAME: %[[X:.*]]: tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: %[[W:.*]]: tensor<4x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: -> (tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>})
// CHECK-NOT: partita.sharding_constraint
// CHECK: %[[XW:.*]] = partita.einsum "bd,dh->bh" %[[X]], %[[W]]
// CHECK-NOT: partita.sharding =
// CHECK: partita.manual_computation(%[[XW]])
// CHECK-SAME: in_shardings = [<@mesh, [{"data"}, {}]>]
// CHECK: %[[SQ:.*]] = partita.mul %{{.*}}, %{{.*}} {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
func.func @around(%x: tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                  %w: tensor<4x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>})
    -> (tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  %c = partita.sharding_constraint %x <@mesh, [{"data"}, {}]> : tensor<8x4xf32>
  %xw = partita.einsum "bd,dh->bh" %c, %w {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model"}]>} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %r = partita.manual_computation(%xw)
      in_shardings = [<@mesh, [{"data"}, {}]>]
      out_shardings = [<@mesh, [{"data"}, {}]>]
      manual_axes = ["data"]
      (%local: tensor<2x4xf32>) {
    %sq = partita.mul %local, %local {partita.sharding = #partita.sharding<@mesh, [{}, {}]>} : tensor<2x4xf32>
    partita.yield %sq : tensor<2x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

partita.mesh @mesh = <["data"=4]>

// Without a manual computation the module is left as it is.
// CHECK-LABEL: func.func @no_manual
// CHECK-SAME: partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>
// CHECK: partita.sharding_constraint
func.func @no_manual(%x: tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) -> tensor<8x4xf32> {
  %c = partita.sharding_constraint %x <@mesh, [{}, {}]> : tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}
