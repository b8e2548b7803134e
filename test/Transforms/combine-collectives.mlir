// RUN: partita-opt %s --split-input-file --partita-combine-collectives | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --split-input-file --partita-combine-collectives="bucket-bytes=150" | FileCheck %s --enable-var-scope --check-prefix=SMALL
// RUN: partita-opt %s --split-input-file --partita-combine-collectives="bucket-bytes=0" | FileCheck %s --enable-var-scope --check-prefix=OFF

partita.mesh @mesh = <["data"=2, "model"=2]>

// Two independent all_reduces, each used right after it: one all_reduce of
// both, flattened and concatenated; the uses wait for it.
// CHECK-LABEL: func.func @independent
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[NB:.*]] = partita.neg %[[B]]
// CHECK: %[[FA:.*]] = partita.reshape %[[A]] : tensor<4x8xf32> -> tensor<1x32xf32>
// CHECK: %[[FB:.*]] = partita.reshape %[[NB]] : tensor<8xf32> -> tensor<1x8xf32>
// CHECK: %[[PACK:.*]] = partita.concatenate %[[FA]], %[[FB]] dim = 1 : (tensor<1x32xf32>, tensor<1x8xf32>) -> tensor<1x40xf32>
// CHECK: %[[ALL:.*]] = partita.all_reduce sum %[[PACK]] on @mesh axes = ["data"] {partita.reason = "combines 2 all_reduce of 40 elements: {{.*}}"} : tensor<1x40xf32>
// CHECK-NOT: partita.all_reduce
// CHECK: %[[SA:.*]] = partita.slice %[[ALL]] start = [0, 0] limit = [1, 32] stride = [1, 1]
// CHECK: %[[RA:.*]] = partita.reshape %[[SA]] : tensor<1x32xf32> -> tensor<4x8xf32>
// CHECK: %[[SB:.*]] = partita.slice %[[ALL]] start = [0, 32] limit = [1, 40] stride = [1, 1]
// CHECK: %[[RB:.*]] = partita.reshape %[[SB]] : tensor<1x8xf32> -> tensor<8xf32>
// CHECK: %[[UA:.*]] = partita.exp %[[RA]]
// CHECK: %[[UB:.*]] = partita.exp %[[RB]]
// CHECK: return %[[UA]], %[[UB]]
// With room for only one: nothing changes.
// SMALL-LABEL: func.func @independent
// SMALL-COUNT-2: partita.all_reduce sum
// SMALL-NOT: partita.concatenate
// OFF-LABEL: func.func @independent
// OFF-COUNT-2: partita.all_reduce sum
// OFF-NOT: partita.concatenate
func.func @independent(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %ra = partita.all_reduce sum %a on @mesh axes = ["data"] : tensor<4x8xf32>
  %ua = partita.exp %ra : tensor<4x8xf32>
  %nb = partita.neg %b : tensor<8xf32>
  %rb = partita.all_reduce sum %nb on @mesh axes = ["data"] : tensor<8xf32>
  %ub = partita.exp %rb : tensor<8xf32>
  return %ua, %ub : tensor<4x8xf32>, tensor<8xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// Different axes, reductions or element types never share a bucket (the
// two sums over "data" of f32 do), and an all_reduce of a value computed
// from a bucket's result starts a new bucket after it.
// CHECK-LABEL: func.func @apart
// SMALL-LABEL: func.func @apart
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"] : tensor<8xf32>
// CHECK: partita.all_reduce max %{{.*}} on @mesh axes = ["data"] : tensor<8xf32>
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["data"] : tensor<8xi32>
// CHECK: %[[ALL:.*]] = partita.all_reduce sum %{{.*}} on @mesh axes = ["data"] {partita.reason = "combines 2 all_reduce of 12 elements: {{.*}}"} : tensor<1x12xf32>
// CHECK: %[[S:.*]] = partita.slice %[[ALL]] start = [0, 8] limit = [1, 12]
// CHECK: %[[F:.*]] = partita.reshape %[[S]] : tensor<1x4xf32> -> tensor<4xf32>
// CHECK: %[[E:.*]] = partita.exp %[[F]]
// CHECK: partita.all_reduce sum %[[E]] on @mesh axes = ["data"] : tensor<4xf32>
func.func @apart(%x: tensor<8xf32>, %i: tensor<8xi32>, %y: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<4xf32>) {
  %a = partita.all_reduce sum %x on @mesh axes = ["data"] : tensor<8xf32>
  %b = partita.all_reduce sum %x on @mesh axes = ["model"] : tensor<8xf32>
  %c = partita.all_reduce max %x on @mesh axes = ["data"] : tensor<8xf32>
  %d = partita.all_reduce sum %i on @mesh axes = ["data"] : tensor<8xi32>
  %f = partita.all_reduce sum %y on @mesh axes = ["data"] : tensor<4xf32>
  %e = partita.exp %f : tensor<4xf32>
  %g = partita.all_reduce sum %e on @mesh axes = ["data"] : tensor<4xf32>
  return %a, %b, %c, %d, %g : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<4xf32>
}

// -----

partita.mesh @mesh = <["data"=2]>

// Inside a loop body the bucket is the body's: both per-iteration
// all_reduces become one, before the yield.
// CHECK-LABEL: func.func @in_loop
// CHECK: partita.loop 3 times
// CHECK: %[[PACK:.*]] = partita.concatenate
// CHECK: partita.all_reduce sum %[[PACK]] on @mesh axes = ["data"] {partita.reason = "combines 2 all_reduce of 16 elements: {{.*}}"} : tensor<1x16xf32>
// CHECK-NOT: partita.all_reduce
// CHECK: partita.yield
func.func @in_loop(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r:2 = partita.loop 3 times (%k) iter_args(%a = %x, %b = %y) : tensor<8xf32>, tensor<8xf32> {
    %ra = partita.all_reduce sum %a on @mesh axes = ["data"] : tensor<8xf32>
    %rb = partita.all_reduce sum %b on @mesh axes = ["data"] : tensor<8xf32>
    partita.yield %ra, %rb : tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// Waiting for a bucket keeps the inputs of the ops that wait alive longer:
// past a bucket's worth of such bytes the bucket goes first. Here the mul
// waiting for %ra would hold %big (4 KiB): with 25 MiB buckets both
// all_reduces pack; with 150-byte buckets (room for both 64-byte operands,
// not for %big as well) they stay apart.
// CHECK-LABEL: func.func @held
// CHECK: partita.all_reduce sum %{{.*}} {partita.reason = "combines 2 all_reduce of 32 elements: {{.*}}"} : tensor<1x32xf32>
// SMALL-LABEL: func.func @held
// SMALL: %[[RA:.*]] = partita.all_reduce sum %{{.*}} : tensor<16xf32>
// SMALL: %[[BRA:.*]] = partita.broadcast %[[RA]]
// SMALL: partita.mul %{{.*}}, %[[BRA]]
// SMALL: partita.all_reduce sum %{{.*}} : tensor<16xf32>
func.func @held(%a: tensor<16xf32>, %b: tensor<16xf32>, %big: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %ra = partita.all_reduce sum %a on @mesh axes = ["data"] : tensor<16xf32>
  %bra = partita.broadcast %ra dims = [1] : tensor<16xf32> -> tensor<64x16xf32>
  %u = partita.mul %big, %bra : tensor<64x16xf32>
  %rb = partita.all_reduce sum %b on @mesh axes = ["data"] : tensor<16xf32>
  return %u, %rb : tensor<64x16xf32>, tensor<16xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// reduce_scatters pack too (gradient buckets under ZeRO and FSDP): each
// operand's scattered dimension is moved to the front and the members sit
// side by side in a [group, ...] matrix, scattered along its rows; each
// member's block is sliced out and its dimensions put back.
// CHECK-LABEL: func.func @scatters
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<3x2x4xf32>)
// CHECK: %[[FA:.*]] = partita.reshape %[[A]] : tensor<8x4xf32> -> tensor<2x16xf32>
// CHECK: %[[TB:.*]] = partita.transpose %[[B]] perm = [2, 0, 1] : tensor<3x2x4xf32> -> tensor<4x3x2xf32>
// CHECK: %[[FB:.*]] = partita.reshape %[[TB]] : tensor<4x3x2xf32> -> tensor<2x12xf32>
// CHECK: %[[PACK:.*]] = partita.concatenate %[[FA]], %[[FB]] dim = 1 : (tensor<2x16xf32>, tensor<2x12xf32>) -> tensor<2x28xf32>
// CHECK: %[[RS:.*]] = partita.reduce_scatter sum %[[PACK]] on @mesh axes = ["data"] dim = 0 {partita.reason = "combines 2 reduce_scatter of 56 elements: {{.*}}"} : tensor<2x28xf32> -> tensor<1x28xf32>
// CHECK: %[[SA:.*]] = partita.slice %[[RS]] start = [0, 0] limit = [1, 16]
// CHECK: partita.reshape %[[SA]] : tensor<1x16xf32> -> tensor<4x4xf32>
// CHECK: %[[SB:.*]] = partita.slice %[[RS]] start = [0, 16] limit = [1, 28]
// CHECK: %[[RB:.*]] = partita.reshape %[[SB]] : tensor<1x12xf32> -> tensor<2x3x2xf32>
// CHECK: partita.transpose %[[RB]] perm = [1, 2, 0] : tensor<2x3x2xf32> -> tensor<3x2x2xf32>
// OFF-LABEL: func.func @scatters
// OFF-COUNT-2: partita.reduce_scatter
func.func @scatters(%a: tensor<8x4xf32>, %b: tensor<3x2x4xf32>) -> (tensor<4x4xf32>, tensor<3x2x2xf32>) {
  %ra = partita.reduce_scatter sum %a on @mesh axes = ["data"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %rb = partita.reduce_scatter sum %b on @mesh axes = ["data"] dim = 2 : tensor<3x2x4xf32> -> tensor<3x2x2xf32>
  return %ra, %rb : tensor<4x4xf32>, tensor<3x2x2xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// A member scattered along a later dimension that an einsum makes for it
// alone (a weight gradient) comes out of the einsum in the packed layout,
// its output term reordered (and its sharding with it), instead of through
// a transpose; an einsum whose result has another use keeps it.
// CHECK-LABEL: func.func @einsum_scatters
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[Y:.*]]: tensor<4x8xf32>, %[[A:.*]]: tensor<8x4xf32>)
// CHECK: %[[G:.*]] = partita.einsum "bd,bf->fd" %[[X]], %[[Y]] {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}], partial = sum{"data"}>} : (tensor<4x6xf32>, tensor<4x8xf32>) -> tensor<8x6xf32>
// CHECK-NOT: partita.einsum "bd,bf->df"
// CHECK: %[[H:.*]] = partita.einsum "bd,bf->df" %[[X]], %[[Y]] : (tensor<4x6xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[FA:.*]] = partita.reshape %[[A]] : tensor<8x4xf32> -> tensor<2x16xf32>
// CHECK: %[[FG:.*]] = partita.reshape %[[G]] : tensor<8x6xf32> -> tensor<2x24xf32>
// CHECK: %[[TH:.*]] = partita.transpose %[[H]] perm = [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
// CHECK: %[[FH:.*]] = partita.reshape %[[TH]] : tensor<8x6xf32> -> tensor<2x24xf32>
// CHECK: partita.concatenate %[[FA]], %[[FG]], %[[FH]] dim = 1
// CHECK: partita.reduce_scatter sum
// CHECK-NOT: partita.einsum
// CHECK: return
func.func @einsum_scatters(%x: tensor<4x6xf32>, %y: tensor<4x8xf32>, %a: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x8xf32>) {
  %g = partita.einsum "bd,bf->df" %x, %y {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}], partial = sum{"data"}>} : (tensor<4x6xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %h = partita.einsum "bd,bf->df" %x, %y : (tensor<4x6xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %ra = partita.reduce_scatter sum %a on @mesh axes = ["data"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %rg = partita.reduce_scatter sum %g on @mesh axes = ["data"] dim = 1 : tensor<6x8xf32> -> tensor<6x4xf32>
  %rh = partita.reduce_scatter sum %h on @mesh axes = ["data"] dim = 1 : tensor<6x8xf32> -> tensor<6x4xf32>
  return %ra, %rg, %rh, %h : tensor<4x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x8xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// The all_gathers of a function's results (every one alive at the return
// anyway) share one: each operand flattened into the columns of a row, the
// row gathered into [group, columns], each member's columns sliced out and
// its group's blocks put back along its gathered dimension. A gather that
// feeds anything else, or over other axes, stays alone.
// CHECK-LABEL: func.func @result_gathers
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<3x2xf32>, %[[C:.*]]: tensor<4xf32>, %[[D:.*]]: tensor<4xf32>)
// CHECK: %[[U:.*]] = partita.all_gather %[[C]] on @mesh axes = ["data", "model"] dim = 0
// CHECK: %[[V:.*]] = partita.all_gather %[[D]] on @mesh axes = ["model"] dim = 0
// CHECK: %[[FA:.*]] = partita.reshape %[[A]] : tensor<4xf32> -> tensor<1x4xf32>
// CHECK: %[[FB:.*]] = partita.reshape %[[B]] : tensor<3x2xf32> -> tensor<1x6xf32>
// CHECK: %[[P:.*]] = partita.concatenate %[[FA]], %[[FB]] dim = 1
// CHECK: %[[G:.*]] = partita.all_gather %[[P]] on @mesh axes = ["data", "model"] dim = 0 {partita.reason = "combines 2 all_gather of function results: result 0; result 1"} : tensor<1x10xf32> -> tensor<4x10xf32>
// CHECK: %[[SA:.*]] = partita.slice %[[G]] start = [0, 0] limit = [4, 4]
// CHECK: %[[RA:.*]] = partita.reshape %[[SA]] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK: %[[WA:.*]] = partita.reshape %[[RA]] : tensor<4x4xf32> -> tensor<16xf32>
// CHECK: %[[SB:.*]] = partita.slice %[[G]] start = [0, 4] limit = [4, 10]
// CHECK: %[[RB:.*]] = partita.reshape %[[SB]] : tensor<4x6xf32> -> tensor<4x3x2xf32>
// CHECK: %[[TB:.*]] = partita.transpose %[[RB]] perm = [1, 0, 2] : tensor<4x3x2xf32> -> tensor<3x4x2xf32>
// CHECK: %[[WB:.*]] = partita.reshape %[[TB]] : tensor<3x4x2xf32> -> tensor<3x8xf32>
// CHECK: return %[[WA]], %[[WB]], %{{.*}}, %[[V]]
// OFF-LABEL: func.func @result_gathers
// OFF-COUNT-4: partita.all_gather
func.func @result_gathers(%a: tensor<4xf32>, %b: tensor<3x2xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>) -> (tensor<16xf32>, tensor<3x8xf32>, tensor<16xf32>, tensor<8xf32>) {
  %ga = partita.all_gather %a on @mesh axes = ["data", "model"] dim = 0 {partita.reason = "result 0: [{}]"} : tensor<4xf32> -> tensor<16xf32>
  %gb = partita.all_gather %b on @mesh axes = ["data", "model"] dim = 1 {partita.reason = "result 1: [{}]"} : tensor<3x2xf32> -> tensor<3x8xf32>
  %gc = partita.all_gather %c on @mesh axes = ["data", "model"] dim = 0 {partita.reason = "operand"} : tensor<4xf32> -> tensor<16xf32>
  %n = partita.neg %gc : tensor<16xf32>
  %gd = partita.all_gather %d on @mesh axes = ["model"] dim = 0 {partita.reason = "result 3: [{}]"} : tensor<4xf32> -> tensor<8xf32>
  return %ga, %gb, %n, %gd : tensor<16xf32>, tensor<3x8xf32>, tensor<16xf32>, tensor<8xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// A reduce_scatter bucket and an all_reduce bucket of the same reduction,
// mesh and axes that go out together, small enough that one latency costs
// more than the scattered bytes sent twice, go out as one all_reduce: the
// scatter's [group, columns] matrix flattened ahead of the all_reduce's
// row, each device keeping its row of it (all_slice, no traffic).
// CHECK-LABEL: func.func @joined
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<f32>)
// CHECK: %[[FA:.*]] = partita.reshape %[[A]] : tensor<8x4xf32> -> tensor<2x16xf32>
// CHECK: %[[FB:.*]] = partita.reshape %[[B]] : tensor<4xf32> -> tensor<1x4xf32>
// CHECK: %[[FC:.*]] = partita.reshape %[[C]] : tensor<f32> -> tensor<1x1xf32>
// CHECK: %[[PB:.*]] = partita.concatenate %[[FB]], %[[FC]] dim = 1
// CHECK: %[[ROW:.*]] = partita.reshape %[[FA]] : tensor<2x16xf32> -> tensor<1x32xf32>
// CHECK: %[[ALL:.*]] = partita.concatenate %[[ROW]], %[[PB]] dim = 1 : (tensor<1x32xf32>, tensor<1x5xf32>) -> tensor<1x37xf32>
// CHECK: %[[AR:.*]] = partita.all_reduce sum %[[ALL]] on @mesh axes = ["data"] {partita.reason = "combines 2 all_reduce of 5 elements: {{.*}} and combines 1 reduce_scatter of 32 elements: {{.*}} (one all_reduce, each device then keeping its blocks, costs less than two latencies)"} : tensor<1x37xf32>
// CHECK: %[[S:.*]] = partita.slice %[[AR]] start = [0, 0] limit = [1, 32]
// CHECK: %[[G:.*]] = partita.reshape %[[S]] : tensor<1x32xf32> -> tensor<2x16xf32>
// CHECK: %[[MINE:.*]] = partita.all_slice %[[G]] on @mesh axes = ["data"] dim = 0 : tensor<2x16xf32> -> tensor<1x16xf32>
// CHECK: %[[R:.*]] = partita.slice %[[AR]] start = [0, 32] limit = [1, 37]
// CHECK: %[[MA:.*]] = partita.slice %[[MINE]] start = [0, 0] limit = [1, 16]
// CHECK: partita.reshape %[[MA]] : tensor<1x16xf32> -> tensor<4x4xf32>
// CHECK-NOT: partita.reduce_scatter
// CHECK: return
// OFF-LABEL: func.func @joined
// OFF: partita.reduce_scatter
// OFF-COUNT-2: partita.all_reduce
func.func @joined(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %c: tensor<f32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<f32>) {
  %ra = partita.reduce_scatter sum %a on @mesh axes = ["data"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %rb = partita.all_reduce sum %b on @mesh axes = ["data"] : tensor<4xf32>
  %rc = partita.all_reduce sum %c on @mesh axes = ["data"] : tensor<f32>
  return %ra, %rb, %rc : tensor<4x4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// Gradients of 8 MiB over 2 devices: all-reduced, each device would send
// 9.3 us more than the reduce_scatter does on the default link (450 GB/s),
// more than the one latency saved (5 us): the buckets stay two.
// CHECK-LABEL: func.func @kept_apart
// CHECK: partita.reduce_scatter sum
// CHECK: partita.all_reduce sum
func.func @kept_apart(%a: tensor<2048x1024xf32>, %b: tensor<4xf32>, %c: tensor<f32>) -> (tensor<1024x1024xf32>, tensor<4xf32>, tensor<f32>) {
  %ra = partita.reduce_scatter sum %a on @mesh axes = ["data"] dim = 0 : tensor<2048x1024xf32> -> tensor<1024x1024xf32>
  %rb = partita.all_reduce sum %b on @mesh axes = ["data"] : tensor<4xf32>
  %rc = partita.all_reduce sum %c on @mesh axes = ["data"] : tensor<f32>
  return %ra, %rb, %rc : tensor<1024x1024xf32>, tensor<4xf32>, tensor<f32>
}
