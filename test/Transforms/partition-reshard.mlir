// RUN: partita-opt %s --split-input-file --partita-partition | FileCheck %s --enable-var-scope

// 1-D mesh: the five basic moves.
partita.mesh @mesh = <["x"=4]>
// CHECK-LABEL: func.func @gather
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["x"] dim = 0 {partita.reason = "partita.reshard at {{.*}}: [{\22x\22}, {}] -> [{}, {}]"
// CHECK-SAME: : tensor<2x8xf32> -> tensor<8x8xf32>
func.func @gather(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  %r = partita.reshard %a <@mesh, [{}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @slice
// CHECK: partita.all_slice %{{.*}} on @mesh axes = ["x"] dim = 1 {{.*}}: tensor<8x8xf32> -> tensor<8x2xf32>
func.func @slice(%a: tensor<8x8xf32>) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %r = partita.reshard %a <@mesh, [{}, {"x"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @all_to_all
// CHECK: partita.all_to_all %{{.*}} on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 {{.*}}: tensor<2x8xf32> -> tensor<8x2xf32>
func.func @all_to_all(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %r = partita.reshard %a <@mesh, [{}, {"x"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @partial_to_replicated
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["x"] {{.*}}: tensor<8x8xf32>
func.func @partial_to_replicated(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>}) -> tensor<8x8xf32> {
  %r = partita.reshard %a <@mesh, [{}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @partial_to_sharded
// CHECK: partita.reduce_scatter sum %{{.*}} on @mesh axes = ["x"] dim = 0 {{.*}}: tensor<8x8xf32> -> tensor<2x8xf32>
func.func @partial_to_sharded(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  %r = partita.reshard %a <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @partial_max
// CHECK: partita.all_reduce max
func.func @partial_max(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = max{"x"}>}) -> tensor<8x8xf32> {
  %r = partita.reshard %a <@mesh, [{}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// 2-D mesh: multi-axis dimensions and axes changing places.
partita.mesh @mesh = <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @multi_axis_gather
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["a", "b"] dim = 0 {{.*}}: tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK-NOT: partita.all_gather
func.func @multi_axis_gather(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) -> tensor<8x8xf32> {
  %r = partita.reshard %x <@mesh, [{}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @swap_dims
// CHECK: partita.collective_permute %{{.*}} on @mesh axes = ["a", "b"] pairs = [0 -> 0, 1 -> 2, 2 -> 1, 3 -> 3]
func.func @swap_dims(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"b"}, {"a"}]>}) {
  %r = partita.reshard %x <@mesh, [{"b"}, {"a"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @reorder_axes
// CHECK: partita.collective_permute %{{.*}} on @mesh axes = ["a", "b"]
func.func @reorder_axes(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"b", "a"}, {}]>}) {
  %r = partita.reshard %x <@mesh, [{"b", "a"}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @move_minor_axis
// CHECK: partita.all_to_all %{{.*}} on @mesh axes = ["b"] split_dim = 1 concat_dim = 0 {{.*}}: tensor<2x8xf32> -> tensor<4x4xf32>
func.func @move_minor_axis(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %r = partita.reshard %x <@mesh, [{"a"}, {"b"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// 3-D mesh: several axes at once.
partita.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
// CHECK-LABEL: func.func @partial_two_axes_to_sharded
// CHECK: partita.reduce_scatter sum %{{.*}} on @mesh axes = ["a", "b"] dim = 0 {{.*}}: tensor<8x8xf32> -> tensor<2x8xf32>
func.func @partial_two_axes_to_sharded(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"a", "b"}>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) {
  %r = partita.reshard %x <@mesh, [{"a", "b"}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @three_dims
// CHECK: partita.
// CHECK: return %{{.*}} : tensor<4x4x4xf32>
func.func @three_dims(%x: tensor<8x8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}, {"c"}]>}) -> (tensor<8x8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"c"}, {"b"}, {"a"}]>}) {
  %r = partita.reshard %x <@mesh, [{"c"}, {"b"}, {"a"}]> : tensor<8x8x8xf32>
  return %r : tensor<8x8x8xf32>
}
