// RUN: partita-opt %s --split-input-file --partita-partition | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --split-input-file --partita-partition --partita-cleanup-collectives | FileCheck %s --enable-var-scope --check-prefix=CLEANUP

// The input is what --partita-propagate makes of each case: every value
// carries its sharding.

// A loop is partitioned once: the carried value and the body run on local
// shapes, with no collective.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>
// CHECK: partita.loop 3 times (%{{.*}}) iter_args(%[[A:.*]] = %[[X]]) : tensor<2x8xf32> {
// CHECK-NEXT: partita.exp %[[A]] {{.*}}: tensor<2x8xf32>
// CHECK-NOT: partita.all_
// CHECK: return %{{.*}} : tensor<2x8xf32>
partita.mesh @mesh = <["x"=4]>
func.func @loop(%arg0: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = partita.loop 3 times (%arg1) iter_args(%arg2 = %arg0) : tensor<8x8xf32> {
    %1 = partita.exp %arg2 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<8x8xf32>
    partita.yield %1 : tensor<8x8xf32>
  } {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}
  return %0 : tensor<8x8xf32>
}

// -----

// A manual computation's body is kept as written and inlined on the local
// operands; its collectives carry no partitioner reason.
// CHECK-LABEL: func.func @manual
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>
// CHECK-NOT: partita.manual_computation
// CHECK: %[[S:.*]] = partita.reduce sum %[[X]] dims = [0]
// CHECK: %[[T:.*]] = partita.all_reduce sum %[[S]] on @mesh axes = ["x"] : tensor<8xf32>
// CHECK: return %[[T]]
partita.mesh @mesh = <["x"=4]>
func.func @manual(%arg0: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}]>}) {
  %0 = partita.manual_computation(%arg0) in_shardings = [<@mesh, [{"x"}, {}]>] out_shardings = [<@mesh, [{}]>] manual_axes = ["x"] (%arg1: tensor<2x8xf32>) {
    %1 = partita.reduce sum %arg1 dims = [0] : tensor<2x8xf32> -> tensor<8xf32>
    %2 = partita.all_reduce sum %1 on @mesh axes = ["x"] : tensor<8xf32>
    partita.yield %2 : tensor<8xf32>
  } : (tensor<8x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Calls: the callee takes local shapes; the caller reshards its argument to
// the callee's sharding.
// CHECK-LABEL: func.func private @callee
// CHECK-SAME: (%{{.*}}: tensor<8x2xf32> {{.*}}) -> (tensor<8x2xf32>
// CHECK-LABEL: func.func @caller
// CHECK: %[[M:.*]] = partita.all_to_all %{{.*}} on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 {partita.reason = "argument 0 of the call to @callee: [{\22x\22}, {}] -> [{}, {\22x\22}]"
// CHECK: call @callee(%[[M]]) {{.*}}: (tensor<8x2xf32>) -> tensor<8x2xf32>
partita.mesh @mesh = <["x"=4]>
func.func private @callee(%arg0: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = partita.tanh %arg0 {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func @caller(%arg0: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = call @callee(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// A splat constant is built at its local shape on every device (it never
// exists whole); other constants are built whole and sliced (no traffic);
// an iota along an unsharded dimension is built locally; for one along a
// sharded dimension only that dimension is built whole (a vector), sliced,
// and broadcast to the local shape, so the whole iota never exists on a
// device (a batch x sequence x vocabulary one-hot iota was 64 GiB per device
// of a 65B GPT at data=128). Slices keep their sizes on local shapes.
// CHECK-LABEL: func.func @constant_and_slice
// CHECK: %[[C:.*]] = partita.constant {{.*}}dense<1.000000e+00> : tensor<2x8xf32>
// CHECK: partita.add %{{.*}}, %[[C]]
// CHECK: partita.slice %{{.*}} start = [0, 0] limit = [2, 4] stride = [1, 1] {{.*}}: tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: %[[W:.*]] = partita.constant dense<{{\[}}[0.000000e+00, 1.000000e+00], [2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00], [6.000000e+00, 7.000000e+00]]> : tensor<4x2xf32>
// CHECK: partita.all_slice %[[W]] on @mesh axes = ["x"] dim = 0 {{.*}}: tensor<4x2xf32> -> tensor<1x2xf32>
// CHECK: partita.iota dim = 1 {{.*}}: tensor<1x8xi32>
// CHECK-NOT: tensor<4x8xi32>
// CHECK: %[[I:.*]] = partita.iota dim = 0 : tensor<4xi32>
// CHECK: %[[IS:.*]] = partita.all_slice %[[I]] on @mesh axes = ["x"] dim = 0 {{.*}}: tensor<4xi32> -> tensor<1xi32>
// CHECK: partita.broadcast %[[IS]] dims = [0] {{.*}}: tensor<1xi32> -> tensor<1x8xi32>
partita.mesh @mesh = <["x"=4]>
func.func @constant_and_slice(%arg0: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x2xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<4x8xi32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}, tensor<4x2xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}, tensor<4x8xi32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}, tensor<4x8xi32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = partita.constant {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} dense<1.000000e+00> : tensor<8x8xf32>
  %1 = partita.add %arg0, %0 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<8x8xf32>
  %2 = partita.slice %1 start = [0, 0] limit = [8, 4] stride = [1, 1] {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<8x8xf32> -> tensor<8x4xf32>
  %3 = partita.constant {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} dense<[[0.000000e+00, 1.000000e+00], [2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00], [6.000000e+00, 7.000000e+00]]> : tensor<4x2xf32>
  %4 = partita.add %arg1, %3 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<4x2xf32>
  %5 = partita.iota dim = 1 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<4x8xi32>
  %6 = partita.add %arg2, %5 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<4x8xi32>
  %7 = partita.iota dim = 0 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<4x8xi32>
  %8 = partita.add %arg2, %7 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<4x8xi32>
  return %2, %4, %6, %8 : tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x8xi32>, tensor<4x8xi32>
}

// -----

// A loop that accumulates into a partial sum keeps it partial through the
// loop and reduces once after it, here with a reduce_scatter since the
// result is free to be split. The replicated zero it starts from becomes
// partial by a permute 0 -> 0 (zeros on the other devices), which
// partita-cleanup-collectives removes: the zero is partial for free.
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[ZERO:.*]] = partita.constant {{.*}}dense<0.000000e+00>
// CHECK: %[[PARTIAL:.*]] = partita.collective_permute %[[ZERO]] on @mesh axes = ["x"] pairs = [0 -> 0]
// CHECK: partita.loop 4 times (%{{.*}}) iter_args(%{{.*}} = %[[PARTIAL]])
// CHECK-NOT: partita.all_reduce
// CHECK-NOT: partita.reduce_scatter
// CHECK: partita.yield
// CHECK: partita.reduce_scatter sum
// CHECK-NOT: partita.all_reduce
// CLEANUP-LABEL: func.func @accumulate
// CLEANUP: %[[ZERO:.*]] = partita.constant {{.*}}dense<0.000000e+00>
// CLEANUP: partita.loop 4 times (%{{.*}}) iter_args(%{{.*}} = %[[ZERO]])
partita.mesh @mesh = <["x"=4]>
func.func @accumulate(%arg0: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = partita.constant {partita.sharding = #partita.sharding<@mesh, [{}, {}]>} dense<0.000000e+00> : tensor<8x8xf32>
  %1 = partita.loop 4 times (%arg2) iter_args(%arg3 = %0) : tensor<8x8xf32> {
    %2 = partita.einsum "bd,df->bf" %arg0, %arg1 {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %3 = partita.add %arg3, %2 {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>} : tensor<8x8xf32>
    partita.yield %3 : tensor<8x8xf32>
  } {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>}
  return %1 : tensor<8x8xf32>
}

// -----

// A bias [1, 8] split along its columns, stretched over the rows of
// activations split along their rows: the add needs the broadcast split by
// rows. The bias is gathered at its source (8 elements) and each device
// broadcasts it into its own block, instead of moving the broadcast
// between the two splits with an all_to_all.
// CHECK-LABEL: func.func @stretched_bias
// CHECK-NOT: partita.all_to_all
// CHECK: %[[G:.*]] = partita.all_gather %{{.*}} on @mesh axes = ["data"] dim = 1 {{.*}}: tensor<1x2xf32> -> tensor<1x8xf32>
// CHECK: %[[B:.*]] = partita.broadcast %[[G]] dims = [0, 1] {{.*}}: tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK: partita.add %{{.*}}, %[[B]]
// CHECK-NOT: partita.all_to_all
partita.mesh @mesh = <["data"=4]>
func.func @stretched_bias(%x: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}, %b: tensor<1x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"data"}]>}) -> (tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  %bb = partita.broadcast %b dims = [0, 1] {partita.sharding = #partita.sharding<@mesh, [{}, {"data"}]>} : tensor<1x8xf32> -> tensor<16x8xf32>
  %y = partita.add %x, %bb {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} : tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
