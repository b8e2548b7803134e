// RUN: partita-opt %s --split-input-file --partita-propagate | FileCheck %s --enable-var-scope
// Propagated IR (shardings and origins) parses back and prints the same.
// RUN: partita-opt %s --split-input-file --partita-propagate > %t.first
// RUN: partita-opt %t.first --split-input-file > %t.second
// RUN: partita-opt %t.second --split-input-file | diff - %t.second

// Megatron MLP: weights annotated only. The hidden activation is split over
// "model" (column-parallel W1); the row-parallel W2 leaves its result partial.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: %{{.*}}: tensor<16x64xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK: %[[H:.*]] = partita.einsum "bd,dh->bh" {{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>
// CHECK: %[[G:.*]] = partita.tanh %[[H]] {{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>
// CHECK: partita.einsum "bh,hd->bd" %[[G]], {{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"model"}>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @megatron_mlp(%x: tensor<16x64xf32> loc("x"),
    %w1: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} loc("w1"),
    %w2: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>} loc("w2"))
    -> tensor<16x64xf32> {
  %h = partita.einsum "bd,dh->bh" %x, %w1 : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32> loc("mlp.up")
  %g = partita.tanh %h : tensor<16x256xf32> loc("mlp.act")
  %y = partita.einsum "bh,hd->bd" %g, %w2 : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32> loc("mlp.down")
  return %y : tensor<16x64xf32>
}

// -----

// A batch-sharded input through attention and an MLP: every activation
// carries the batch sharding; unannotated weights stay replicated.
// CHECK-LABEL: func.func @batch_block
// CHECK-SAME: tensor<8x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {}]>}
// CHECK-SAME: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}, {}]>}
// CHECK-SAME: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: -> (tensor<8x16x64xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {}]>})
// CHECK-COUNT-4: partita.einsum {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}, {}]>
// CHECK: partita.reduce max {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}]>
// CHECK: partita.exp {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}, {}]>
// CHECK: partita.div {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}, {}]>
// CHECK: partita.einsum "bhst,bthk->bshk" {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}, {}]>
// CHECK: partita.einsum "bshk,hkd->bsd" {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}]>
// CHECK: partita.einsum "bsd,df->bsf" {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}]>
// CHECK: partita.add {{.*}}#partita.sharding<@mesh, [{"data"}, {}, {}]>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @batch_block(%x: tensor<8x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {}]>} loc("x"),
    %wq: tensor<64x4x16xf32> loc("wq"), %wk: tensor<64x4x16xf32> loc("wk"), %wv: tensor<64x4x16xf32> loc("wv"),
    %wo: tensor<4x16x64xf32> loc("wo"), %w1: tensor<64x256xf32> loc("w1"), %w2: tensor<256x64xf32> loc("w2"))
    -> tensor<8x16x64xf32> {
  %q = partita.einsum "bsd,dhk->bshk" %x, %wq : (tensor<8x16x64xf32>, tensor<64x4x16xf32>) -> tensor<8x16x4x16xf32> loc("attn.q")
  %k = partita.einsum "bsd,dhk->bshk" %x, %wk : (tensor<8x16x64xf32>, tensor<64x4x16xf32>) -> tensor<8x16x4x16xf32> loc("attn.k")
  %v = partita.einsum "bsd,dhk->bshk" %x, %wv : (tensor<8x16x64xf32>, tensor<64x4x16xf32>) -> tensor<8x16x4x16xf32> loc("attn.v")
  %s = partita.einsum "bshk,bthk->bhst" %q, %k : (tensor<8x16x4x16xf32>, tensor<8x16x4x16xf32>) -> tensor<8x4x16x16xf32> loc("attn.scores")
  %m = partita.reduce max %s dims = [3] : tensor<8x4x16x16xf32> -> tensor<8x4x16xf32> loc("attn.max")
  %mb = partita.broadcast %m dims = [0, 1, 2] : tensor<8x4x16xf32> -> tensor<8x4x16x16xf32> loc("attn.max_b")
  %d = partita.sub %s, %mb : tensor<8x4x16x16xf32> loc("attn.shifted")
  %e = partita.exp %d : tensor<8x4x16x16xf32> loc("attn.exp")
  %z = partita.reduce sum %e dims = [3] : tensor<8x4x16x16xf32> -> tensor<8x4x16xf32> loc("attn.norm")
  %zb = partita.broadcast %z dims = [0, 1, 2] : tensor<8x4x16xf32> -> tensor<8x4x16x16xf32> loc("attn.norm_b")
  %p = partita.div %e, %zb : tensor<8x4x16x16xf32> loc("attn.probs")
  %o = partita.einsum "bhst,bthk->bshk" %p, %v : (tensor<8x4x16x16xf32>, tensor<8x16x4x16xf32>) -> tensor<8x16x4x16xf32> loc("attn.context")
  %a = partita.einsum "bshk,hkd->bsd" %o, %wo : (tensor<8x16x4x16xf32>, tensor<4x16x64xf32>) -> tensor<8x16x64xf32> loc("attn.out")
  %r1 = partita.add %x, %a : tensor<8x16x64xf32> loc("attn.residual")
  %h = partita.einsum "bsd,df->bsf" %r1, %w1 : (tensor<8x16x64xf32>, tensor<64x256xf32>) -> tensor<8x16x256xf32> loc("mlp.up")
  %g = partita.tanh %h : tensor<8x16x256xf32> loc("mlp.act")
  %y = partita.einsum "bsf,fd->bsd" %g, %w2 : (tensor<8x16x256xf32>, tensor<256x64xf32>) -> tensor<8x16x64xf32> loc("mlp.down")
  %r2 = partita.add %r1, %y : tensor<8x16x64xf32> loc("mlp.residual")
  return %r2 : tensor<8x16x64xf32>
}

// -----

// A sharding_constraint is the user's: it reaches back to its input and
// forward to its users, and nothing overrides it or a closed dimension.
// CHECK-LABEL: func.func @constraint_backward
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}
// CHECK: partita.exp {{.*}}#partita.sharding<@mesh, [{"data"}, {}]>
// CHECK: partita.sharding_constraint %{{.*}} <@mesh, [{"data"}, {}]>
// CHECK: partita.neg {{.*}}#partita.sharding<@mesh, [{"data"}, {}]>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @constraint_backward(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = partita.exp %x : tensor<8x8xf32>
  %c = partita.sharding_constraint %e <@mesh, [{"data"}, {}]> : tensor<8x8xf32>
  %n = partita.neg %c : tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

// -----

// A closed replicated dimension stays replicated even when a neighbour
// would split it; an open dimension takes the neighbour's axis.
// CHECK-LABEL: func.func @closed_and_open
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {"model"}]>
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {}]>
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {"model"}]>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @closed_and_open(
    %a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model"}]>},
    %b: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %c: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{?}, {?}]>}) -> tensor<8x8xf32> {
  %s = partita.add %a, %b : tensor<8x8xf32>
  %t = partita.add %s, %c : tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}

// -----

// Priorities: the priority-0 annotation propagates first and claims %mid;
// the priority-1 annotation keeps its own value and does not override it.
// CHECK-LABEL: func.func @priorities
// CHECK: partita.exp {{.*}}#partita.sharding<@mesh, [{}, {"data"}]>
partita.mesh @mesh = <["data"=2]>
func.func @priorities(
    %late: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data", ?}, {?}], priority = 1>},
    %early: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{?}, {"data", ?}], priority = 0>})
    -> tensor<8x8xf32> {
  %mid = partita.exp %late : tensor<8x8xf32>
  %sum = partita.add %mid, %early : tensor<8x8xf32>
  return %sum : tensor<8x8xf32>
}

// -----

// Through a counted loop: the carried value keeps the sharding of its
// initial value inside the body and after the loop.
// CHECK-LABEL: func.func @through_loop
// CHECK: partita.loop 4 times
// CHECK: partita.exp {{.*}}#partita.sharding<@mesh, [{"data"}, {}]>
// CHECK: } {{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>
// CHECK: partita.neg {{.*}}#partita.sharding<@mesh, [{"data"}, {}]>
partita.mesh @mesh = <["data"=2]>
func.func @through_loop(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) -> tensor<8x8xf32> {
  %r = partita.loop 4 times (%i) iter_args(%acc = %x) : tensor<8x8xf32> {
    %n = partita.exp %acc : tensor<8x8xf32>
    partita.yield %n : tensor<8x8xf32>
  }
  %m = partita.neg %r : tensor<8x8xf32>
  return %m : tensor<8x8xf32>
}

// -----

// Through calls: the callee's argument takes the caller's sharding, and
// the call's result the callee's result sharding.
// CHECK-LABEL: func.func private @callee
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}
// CHECK: partita.tanh {{.*}}#partita.sharding<@mesh, [{}, {"model"}]>
// CHECK-LABEL: func.func @caller
// CHECK: call @callee
// CHECK: partita.neg {{.*}}#partita.sharding<@mesh, [{}, {"model"}]>
partita.mesh @mesh = <["model"=4]>
func.func private @callee(%y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %t = partita.tanh %y : tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}
func.func @caller(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}) -> tensor<8x8xf32> {
  %r = call @callee(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %n = partita.neg %r : tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

// -----

// A manual computation's in/out shardings act as annotations at its
// boundary; its body (local shapes) is left as written.
// CHECK-LABEL: func.func @manual_boundary
// CHECK: partita.exp {{.*}}#partita.sharding<@mesh, [{"data"}, {}]>
// CHECK: = partita.manual_computation(
// CHECK-NOT: partita.sharding
// CHECK: partita.yield
// CHECK: partita.neg {{.*}}#partita.sharding<@mesh, [{}]>
partita.mesh @mesh = <["data"=2]>
func.func @manual_boundary(%x: tensor<8x8xf32>) -> tensor<8xf32> {
  %e = partita.exp %x : tensor<8x8xf32>
  %r = partita.manual_computation(%e) in_shardings = [<@mesh, [{"data"}, {}]>] out_shardings = [<@mesh, [{}]>] manual_axes = ["data"] (%l: tensor<4x8xf32>) {
    %s = partita.reduce sum %l dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
    %t = partita.all_reduce sum %s on @mesh axes = ["data"] : tensor<8xf32>
    partita.yield %t : tensor<8xf32>
  } : (tensor<8x8xf32>) -> tensor<8xf32>
  %n = partita.neg %r : tensor<8xf32>
  return %n : tensor<8xf32>
}
