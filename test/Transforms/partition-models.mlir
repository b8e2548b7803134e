// RUN: partita-opt %s --split-input-file --partita-pipeline="stage=partitioned" | FileCheck %s --enable-var-scope

// Megatron MLP forward on model=4: column- then row-parallel, exactly one
// all_reduce (of the block's output).
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32> {{.*}}, %[[A:.*]]: tensor<64x64xf32> {{.*}}, %[[B:.*]]: tensor<64x64xf32> {{.*}}) -> (tensor<16x64xf32>
// CHECK-NOT: partita.all_
// CHECK: %[[H:.*]] = partita.einsum "bd,df->bf" %[[X]], %[[A]] {{.*}} -> tensor<16x64xf32>
// CHECK: %[[G:.*]] = partita.tanh %[[H]]
// CHECK: %[[Y:.*]] = partita.einsum "bf,fd->bd" %[[G]], %[[B]] {{.*}}partial = sum{"model"}{{.*}} -> tensor<16x64xf32>
// CHECK: %[[R:.*]] = partita.all_reduce sum %[[Y]] on @mesh axes = ["model"] {{.*}}partita.reason = "result 0 of @megatron_mlp: [{}, {}], partial = sum{\22model\22} -> [{}, {}]"
// CHECK-NOT: partita.all_
// CHECK: return %[[R]]
partita.mesh @mesh = <["model"=4]>
func.func @megatron_mlp(%x: tensor<16x64xf32>,
    %a: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
    %b: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  %h = partita.einsum "bd,df->bf" %x, %a : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32>
  %g = partita.tanh %h : tensor<16x256xf32>
  %y = partita.einsum "bf,fd->bd" %g, %b : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// Data parallel only: no collective in the forward pass.
// CHECK-LABEL: func.func @data_parallel
// CHECK-NOT: partita.all_
// CHECK-NOT: partita.reduce_scatter
// CHECK-NOT: partita.collective_permute
// CHECK: return
partita.mesh @mesh = <["data"=4]>
func.func @data_parallel(%x: tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %a: tensor<64x256xf32>, %b: tensor<256x64xf32>)
    -> (tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  %h = partita.einsum "bd,df->bf" %x, %a : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32>
  %g = partita.tanh %h : tensor<16x256xf32>
  %y = partita.einsum "bf,fd->bd" %g, %b : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  %r = partita.add %y, %x : tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// One transformer layer with tensor parallelism only: exactly two
// all_reduces in the forward pass (after attention and after the MLP).
// CHECK-LABEL: func.func @tp_layer
// CHECK-NOT: partita.all_gather
// CHECK: partita.einsum "bshk,hkd->bsd"
// CHECK-NEXT: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"]
// CHECK-NOT: partita.all_
// CHECK: partita.einsum "bsf,fd->bsd"
// CHECK-NEXT: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"]
// CHECK-NOT: partita.all_
// CHECK-NOT: partita.reduce_scatter
// CHECK: return
partita.mesh @mesh = <["model"=4]>
func.func @tp_layer(%x: tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}, {}]>},
    %wq: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wk: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>},
    %wv: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wo: tensor<4x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}, {}]>},
    %w1: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}, %w2: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}, {}]>}) {
  %q = partita.einsum "bsd,dhk->bshk" %x, %wq : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %k = partita.einsum "bsd,dhk->bshk" %x, %wk : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %v = partita.einsum "bsd,dhk->bshk" %x, %wv : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %s = partita.einsum "bshk,bthk->bhst" %q, %k : (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %m = partita.reduce max %s dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %mb = partita.broadcast %m dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %d = partita.sub %s, %mb : tensor<2x4x16x16xf32>
  %e = partita.exp %d : tensor<2x4x16x16xf32>
  %z = partita.reduce sum %e dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %zb = partita.broadcast %z dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %p = partita.div %e, %zb : tensor<2x4x16x16xf32>
  %o = partita.einsum "bhst,bthk->bshk" %p, %v : (tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
  %a = partita.einsum "bshk,hkd->bsd" %o, %wo : (tensor<2x16x4x16xf32>, tensor<4x16x64xf32>) -> tensor<2x16x64xf32>
  %r1 = partita.add %x, %a : tensor<2x16x64xf32>
  %h = partita.einsum "bsd,df->bsf" %r1, %w1 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %g = partita.tanh %h : tensor<2x16x256xf32>
  %y = partita.einsum "bsf,fd->bsd" %g, %w2 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %r2 = partita.add %r1, %y : tensor<2x16x64xf32>
  return %r2 : tensor<2x16x64xf32>
}

// -----

// Sequence parallelism: the residual stream is split over "model" along the
// sequence; each all_reduce becomes an all_gather before the block and a
// reduce_scatter after it.
// CHECK-LABEL: func.func @sp_layer
// CHECK-NOT: partita.all_reduce
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["model"] dim = 1
// CHECK-NOT: partita.all_reduce
// CHECK: partita.einsum "bshk,hkd->bsd"
// CHECK-NEXT: partita.reduce_scatter sum %{{.*}} on @mesh axes = ["model"] dim = 1
// CHECK-NOT: partita.all_reduce
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["model"] dim = 1
// CHECK: partita.einsum "bsf,fd->bsd"
// CHECK-NEXT: partita.reduce_scatter sum %{{.*}} on @mesh axes = ["model"] dim = 1
// CHECK-NOT: partita.all_
// CHECK: return
partita.mesh @mesh = <["model"=4]>
func.func @sp_layer(%x: tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>},
    %wq: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wk: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>},
    %wv: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wo: tensor<4x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}, {}]>},
    %w1: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}, %w2: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}) {
  %q = partita.einsum "bsd,dhk->bshk" %x, %wq : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %k = partita.einsum "bsd,dhk->bshk" %x, %wk : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %v = partita.einsum "bsd,dhk->bshk" %x, %wv : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %s = partita.einsum "bshk,bthk->bhst" %q, %k : (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %m = partita.reduce max %s dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %mb = partita.broadcast %m dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %d = partita.sub %s, %mb : tensor<2x4x16x16xf32>
  %e = partita.exp %d : tensor<2x4x16x16xf32>
  %z = partita.reduce sum %e dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %zb = partita.broadcast %z dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %p = partita.div %e, %zb : tensor<2x4x16x16xf32>
  %o = partita.einsum "bhst,bthk->bshk" %p, %v : (tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
  %a = partita.einsum "bshk,hkd->bsd" %o, %wo : (tensor<2x16x4x16xf32>, tensor<4x16x64xf32>) -> tensor<2x16x64xf32>
  %r1 = partita.add %x, %a : tensor<2x16x64xf32>
  %r1c = partita.sharding_constraint %r1 <@mesh, [{}, {"model"}, {}]> : tensor<2x16x64xf32>
  %h = partita.einsum "bsd,df->bsf" %r1c, %w1 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %g = partita.tanh %h : tensor<2x16x256xf32>
  %y = partita.einsum "bsf,fd->bsd" %g, %w2 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %r2 = partita.add %r1c, %y : tensor<2x16x64xf32>
  return %r2 : tensor<2x16x64xf32>
}
