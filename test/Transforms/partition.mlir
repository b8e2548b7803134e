// RUN: partita-opt %s --split-input-file --partita-pipeline | FileCheck %s --enable-var-scope

// A loop is partitioned once: the carried value and the body run on local
// shapes, with no collective.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>
// CHECK: partita.loop 3 times (%{{.*}}) iter_args(%[[A:.*]] = %[[X]]) : tensor<2x8xf32> {
// CHECK-NEXT: partita.exp %[[A]] {{.*}}: tensor<2x8xf32>
// CHECK-NOT: partita.all_
// CHECK: return %{{.*}} : tensor<2x8xf32>
partita.mesh @mesh = <["x"=4]>
func.func @loop(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  %r = partita.loop 3 times (%i) iter_args(%a = %x) : tensor<8x8xf32> {
    %e = partita.exp %a : tensor<8x8xf32>
    partita.yield %e : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
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
func.func @manual(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8xf32> {
  %r = partita.manual_computation(%x) in_shardings = [<@mesh, [{"x"}, {}]>] out_shardings = [<@mesh, [{}]>] manual_axes = ["x"] (%l: tensor<2x8xf32>) {
    %s = partita.reduce sum %l dims = [0] : tensor<2x8xf32> -> tensor<8xf32>
    %t = partita.all_reduce sum %s on @mesh axes = ["x"] : tensor<8xf32>
    partita.yield %t : tensor<8xf32>
  } : (tensor<8x8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
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
func.func private @callee(%y: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %t = partita.tanh %y : tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}
func.func @caller(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %r = call @callee(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// A splat constant is built at its local shape on every device (it never
// exists whole); other constants are built whole and sliced (no traffic);
// an iota along an unsharded dimension is built locally, one along a sharded
// dimension is sliced. Slices keep their sizes on local shapes.
// CHECK-LABEL: func.func @constant_and_slice
// CHECK: %[[C:.*]] = partita.constant {{.*}}dense<1.000000e+00> : tensor<2x8xf32>
// CHECK: partita.add %{{.*}}, %[[C]]
// CHECK: partita.slice %{{.*}} start = [0, 0] limit = [2, 4] stride = [1, 1] {{.*}}: tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: %[[W:.*]] = partita.constant dense<{{\[}}[0.000000e+00, 1.000000e+00], [2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00], [6.000000e+00, 7.000000e+00]]> : tensor<4x2xf32>
// CHECK: partita.all_slice %[[W]] on @mesh axes = ["x"] dim = 0 {{.*}}: tensor<4x2xf32> -> tensor<1x2xf32>
// CHECK: partita.iota dim = 1 {{.*}}: tensor<1x8xi32>
// CHECK: %[[I:.*]] = partita.iota dim = 0 : tensor<4x8xi32>
// CHECK: partita.all_slice %[[I]] on @mesh axes = ["x"] dim = 0 {{.*}}: tensor<4x8xi32> -> tensor<1x8xi32>
partita.mesh @mesh = <["x"=4]>
func.func @constant_and_slice(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
                              %y: tensor<4x2xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
                              %z: tensor<4x8xi32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x8xi32>, tensor<4x8xi32>) {
  %c = partita.constant dense<1.0> : tensor<8x8xf32>
  %s = partita.add %x, %c : tensor<8x8xf32>
  %t = partita.slice %s start = [0, 0] limit = [8, 4] stride = [1, 1] : tensor<8x8xf32> -> tensor<8x4xf32>
  %w = partita.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]> : tensor<4x2xf32>
  %u = partita.add %y, %w : tensor<4x2xf32>
  %i = partita.iota dim = 1 : tensor<4x8xi32>
  %v = partita.add %z, %i : tensor<4x8xi32>
  %j = partita.iota dim = 0 : tensor<4x8xi32>
  %k = partita.add %z, %j : tensor<4x8xi32>
  return %t, %u, %v, %k : tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x8xi32>, tensor<4x8xi32>
}

// -----

// A loop that accumulates into a partial sum keeps it partial through the
// loop (the zero it starts from is partial for free) and reduces once after
// it, here with a reduce_scatter since the result is free to be split.
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[ZERO:.*]] = partita.constant {{.*}}dense<0.000000e+00>
// CHECK: partita.loop 4 times (%{{.*}}) iter_args(%{{.*}} = %[[ZERO]])
// CHECK-NOT: partita.all_reduce
// CHECK-NOT: partita.reduce_scatter
// CHECK: partita.yield
// CHECK: partita.reduce_scatter sum
// CHECK-NOT: partita.all_reduce
partita.mesh @mesh = <["x"=4]>
func.func @accumulate(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>},
                      %w: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>})
    -> tensor<8x8xf32> {
  %zero = partita.constant dense<0.0> : tensor<8x8xf32>
  %r = partita.loop 4 times (%i) iter_args(%acc = %zero) : tensor<8x8xf32> {
    %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %n = partita.add %acc, %p : tensor<8x8xf32>
    partita.yield %n : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}
