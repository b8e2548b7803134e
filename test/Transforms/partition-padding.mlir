// RUN: partita-opt %s --split-input-file --partita-propagate --partita-partition 2>/dev/null | FileCheck %s --enable-var-scope
//
// Uneven dimensions (docs/Partitioning.md): a dimension of size n split k
// ways holds ceil(n/k) elements per device. Collectives move even blocks:
// the partitioner pads before a split and cuts the padding after a gather,
// and masks the padding before a reduction over it.

// A whole value split 4 ways along 6 rows: padded to 8, then sliced. The
// argument records its global shape.
// CHECK-LABEL: func.func @split(
// CHECK-SAME: %[[A:.*]]: tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: -> (tensor<2x8xf32> {partita.global_shape = array<i64: 6, 8>
// CHECK: %[[ZERO:.*]] = partita.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[PAD:.*]] = partita.pad %[[A]], %[[ZERO]] low = [0, 0] high = [2, 0] {partita.reason = "padding of an uneven dimension"} : tensor<6x8xf32>, tensor<f32> -> tensor<8x8xf32>
// CHECK: %[[S:.*]] = partita.all_slice %[[PAD]] on @mesh axes = ["x"] dim = 0 {{.*}} : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK: return %[[S]]
partita.mesh @mesh = <["x"=4]>
func.func @split(%a: tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) -> (tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  return %a : tensor<6x8xf32>
}

// -----

// Gathered whole: the gathered rows 6 and 7 are padding and are cut.
// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[A:.*]]: tensor<2x8xf32> {partita.global_shape = array<i64: 6, 8>
// CHECK: %[[G:.*]] = partita.all_gather %[[A]] on @mesh axes = ["x"] dim = 0 {{.*}} : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK: %[[C:.*]] = partita.slice %[[G]] start = [0, 0] limit = [6, 8] stride = [1, 1] {partita.reason = "drops the padding of an uneven dimension"} : tensor<8x8xf32> -> tensor<6x8xf32>
// CHECK: return %[[C]]
partita.mesh @mesh = <["x"=4]>
func.func @gather(%a: tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  return %a : tensor<6x8xf32>
}

// -----

// all_to_all between two uneven dimensions: pad the one split, cut the one
// joined.
// CHECK-LABEL: func.func @swap(
// CHECK: %[[PAD:.*]] = partita.pad %{{.*}} low = [0, 0] high = [0, 2] {{.*}} -> tensor<2x12xf32>
// CHECK: %[[T:.*]] = partita.all_to_all %[[PAD]] on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 {{.*}} : tensor<2x12xf32> -> tensor<8x3xf32>
// CHECK: partita.slice %[[T]] start = [0, 0] limit = [6, 3] {{.*}} : tensor<8x3xf32> -> tensor<6x3xf32>
partita.mesh @mesh = <["x"=4]>
func.func @swap(%a: tensor<6x10xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<6x10xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  return %a : tensor<6x10xf32>
}

// -----

// A maximum over a padded dimension sees -inf in the padding: this device's
// positions (an iota over the padded 8, sliced like the operand) below 6.
// CHECK-LABEL: func.func @max(
// CHECK-SAME: %[[A:.*]]: tensor<8x2xf32>
// CHECK: %[[IOTA:.*]] = partita.iota dim = 0 : tensor<8xi32>
// CHECK: %[[POS:.*]] = partita.all_slice %[[IOTA]] on @mesh axes = ["x"] dim = 0 {{.*}} : tensor<8xi32> -> tensor<2xi32>
// CHECK: %[[N:.*]] = partita.constant dense<6> : tensor<2xi32>
// CHECK: %[[VALID:.*]] = partita.compare lt, %[[POS]], %[[N]] : tensor<2xi32>
// CHECK: %[[MASK:.*]] = partita.broadcast %[[VALID]] dims = [1] : tensor<2xi1> -> tensor<8x2xi1>
// CHECK: %[[INF:.*]] = partita.constant dense<0xFF800000> : tensor<8x2xf32>
// CHECK: %[[M:.*]] = partita.select %[[MASK]], %[[A]], %[[INF]] {partita.reason = "masks the padding of dimension 1 (size 6) for a reduction over it"}
// CHECK: %[[R:.*]] = partita.reduce max %[[M]] dims = [1]
// CHECK: partita.all_reduce max %[[R]]
partita.mesh @mesh = <["x"=4]>
func.func @max(%a: tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}]>}) {
  %m = partita.reduce max %a dims = [1] : tensor<8x6xf32> -> tensor<8xf32>
  return %m : tensor<8xf32>
}

// -----

// A contraction over a padded dimension: both operands get zeros there (so
// that padding holding inf or NaN cannot leak in), from one position mask.
// CHECK-LABEL: func.func @contract(
// CHECK-SAME: %[[A:[^:]*]]: tensor<8x2xf32>
// CHECK-SAME: %[[B:[^:]*]]: tensor<2x3xf32>
// CHECK: %[[VALID:.*]] = partita.compare lt
// CHECK: %[[MA:.*]] = partita.broadcast %[[VALID]] dims = [1] : tensor<2xi1> -> tensor<8x2xi1>
// CHECK: %[[XA:.*]] = partita.select %[[MA]], %[[A]]
// CHECK: %[[MB:.*]] = partita.broadcast %[[VALID]] dims = [0] : tensor<2xi1> -> tensor<2x3xi1>
// CHECK: %[[XB:.*]] = partita.select %[[MB]], %[[B]]
// CHECK: partita.einsum "ij,jk->ik" %[[XA]], %[[XB]]
partita.mesh @mesh = <["x"=4]>
func.func @contract(%a: tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}, %b: tensor<6x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x3xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  %c = partita.einsum "ij,jk->ik" %a, %b : (tensor<8x6xf32>, tensor<6x3xf32>) -> tensor<8x3xf32>
  return %c : tensor<8x3xf32>
}

// -----

// Elementwise ops and a sum over an even dimension need no mask.
// CHECK-LABEL: func.func @rows(
// CHECK-NOT: partita.select
// CHECK: partita.exp
// CHECK-NOT: partita.select
// CHECK: partita.reduce sum
partita.mesh @mesh = <["x"=4]>
func.func @rows(%a: tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<6xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}]>}) {
  %e = partita.exp %a : tensor<6x8xf32>
  %s = partita.reduce sum %e dims = [1] : tensor<6x8xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// -----

// Merging a padded dimension into another (6x8 -> 48) cannot keep the
// padded blocks: the operand is gathered (and the padding cut) first.
// CHECK-LABEL: func.func @merge(
// CHECK: %[[G:.*]] = partita.all_gather
// CHECK: %[[C:.*]] = partita.slice %[[G]] {{.*}} : tensor<8x8xf32> -> tensor<6x8xf32>
// CHECK: partita.reshape %[[C]] {{.*}} : tensor<6x8xf32> -> tensor<48xf32>
partita.mesh @mesh = <["x"=4]>
func.func @merge(%a: tensor<6x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<48xf32> {
  %r = partita.reshape %a : tensor<6x8xf32> -> tensor<48xf32>
  return %r : tensor<48xf32>
}
