// RUN: partita-opt %s --split-input-file --partita-overlap-collectives | FileCheck %s --enable-var-scope

partita.mesh @mesh = <["x"=4]>

// FSDP's shape: each layer gathers its weight just before its einsum. The
// second gather moves up to just before the first gather's first use (one
// collective ahead), the third to just before the second's; the module is
// marked asynchronous.
// CHECK: module attributes {partita.async_collectives}
// CHECK-LABEL: func.func @layers
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[P0:.*]]: tensor<4x16xf32>, %[[P1:.*]]: tensor<4x16xf32>, %[[P2:.*]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[W0:.*]] = partita.all_gather %[[P0]]
// CHECK-NEXT: %[[W1:.*]] = partita.all_gather %[[P1]]
// CHECK-NEXT: %[[H0:.*]] = partita.einsum "bd,dh->bh" %[[X]], %[[W0]]
// CHECK-NEXT: %[[T0:.*]] = partita.tanh %[[H0]]
// CHECK-NEXT: %[[W2:.*]] = partita.all_gather %[[P2]]
// CHECK-NEXT: %[[H1:.*]] = partita.einsum "bd,dh->bh" %[[T0]], %[[W1]]
// CHECK-NEXT: %[[T1:.*]] = partita.tanh %[[H1]]
// CHECK-NEXT: %[[H2:.*]] = partita.einsum "bd,dh->bh" %[[T1]], %[[W2]]
// CHECK-NEXT: return %[[H2]]
func.func @layers(%x: tensor<8x16xf32>, %p0: tensor<4x16xf32>, %p1: tensor<4x16xf32>, %p2: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %w0 = partita.all_gather %p0 on @mesh axes = ["x"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %h0 = partita.einsum "bd,dh->bh" %x, %w0 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %t0 = partita.tanh %h0 : tensor<8x16xf32>
  %w1 = partita.all_gather %p1 on @mesh axes = ["x"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %h1 = partita.einsum "bd,dh->bh" %t0, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %t1 = partita.tanh %h1 : tensor<8x16xf32>
  %w2 = partita.all_gather %p2 on @mesh axes = ["x"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %h2 = partita.einsum "bd,dh->bh" %t1, %w2 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %h2 : tensor<8x16xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// A collective stays after the op defining its operand (a gradient's
// all_reduce right after the gradient) and below an optimization barrier.
// CHECK-LABEL: func.func @bounded
// CHECK: %[[G:.*]] = partita.neg
// CHECK-NEXT: %[[R:.*]] = partita.all_reduce sum %[[G]]
// CHECK-NEXT: %[[U:.*]] = partita.add %[[R]]
// CHECK-NEXT: %[[E:.*]] = partita.exp
// CHECK-NEXT: %[[B:.*]] = partita.optimization_barrier %[[E]]
// CHECK-NEXT: %[[W:.*]] = partita.all_gather
// CHECK-NEXT: %[[S:.*]] = partita.sin %[[B]]
func.func @bounded(%a: tensor<16xf32>, %p: tensor<4xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %g = partita.neg %a : tensor<16xf32>
  %r = partita.all_reduce sum %g on @mesh axes = ["x"] : tensor<16xf32>
  %u = partita.add %r, %a : tensor<16xf32>
  %e = partita.exp %a : tensor<16xf32>
  %b = partita.optimization_barrier %e : tensor<16xf32>
  %s = partita.sin %b : tensor<16xf32>
  %w = partita.all_gather %p on @mesh axes = ["x"] dim = 0 : tensor<4xf32> -> tensor<16xf32>
  return %u, %s, %w : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// A combined bucket's members are sliced out of it where each is first
// needed, not right after it (the wait would follow the start at once),
// and before the elementwise ops of the same element count just above that
// use (which fuse with it): %a's before the tanh of its update's chain,
// %b's before the constant feeding its update, after the update of %a.
// CHECK-LABEL: func.func @views
// CHECK: %[[R:.*]] = partita.all_reduce sum
// CHECK-NEXT: %[[SA:.*]] = partita.slice %[[R]] start = [0, 0]
// CHECK-NEXT: %[[A:.*]] = partita.reshape %[[SA]]
// CHECK-NEXT: %[[T:.*]] = partita.tanh
// CHECK-NEXT: %[[UA:.*]] = partita.add %[[A]], %[[T]]
// CHECK-NEXT: %[[SB:.*]] = partita.slice %[[R]] start = [0, 8]
// CHECK-NEXT: %[[B:.*]] = partita.reshape %[[SB]]
// CHECK-NEXT: %[[C:.*]] = partita.constant
// CHECK-NEXT: %[[UB:.*]] = partita.mul %[[B]], %[[C]]
func.func @views(%g: tensor<1x24xf32>, %x: tensor<8xf32>) -> (tensor<8xf32>, tensor<16xf32>) {
  %r = partita.all_reduce sum %g on @mesh axes = ["x"] : tensor<1x24xf32>
  %sa = partita.slice %r start = [0, 0] limit = [1, 8] stride = [1, 1] : tensor<1x24xf32> -> tensor<1x8xf32>
  %a = partita.reshape %sa : tensor<1x8xf32> -> tensor<8xf32>
  %sb = partita.slice %r start = [0, 8] limit = [1, 24] stride = [1, 1] : tensor<1x24xf32> -> tensor<1x16xf32>
  %b = partita.reshape %sb : tensor<1x16xf32> -> tensor<16xf32>
  %t = partita.tanh %x : tensor<8xf32>
  %ua = partita.add %a, %t : tensor<8xf32>
  %c = partita.constant dense<2.0> : tensor<16xf32>
  %ub = partita.mul %b, %c : tensor<16xf32>
  return %ua, %ub : tensor<8xf32>, tensor<16xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// After the last collective, ops run in the order of the collectives they
// wait for: the update of %q (reduced first) before that of %p (reduced
// last), although the program updates %p first; the constant goes with its
// user, the ops that need no collective first.
// CHECK-LABEL: func.func @tail
// CHECK: %[[RQ:.*]] = partita.all_reduce sum %[[GQ:.*]] on
// CHECK: %[[RP:.*]] = partita.all_reduce sum
// CHECK-NEXT: %[[N:.*]] = partita.neg %{{.*}} : tensor<4xf32>
// CHECK-NEXT: %[[CQ:.*]] = partita.constant dense<3.000000e+00>
// CHECK-NEXT: %[[UQ:.*]] = partita.mul %[[RQ]], %[[CQ]]
// CHECK-NEXT: %[[CP:.*]] = partita.constant dense<2.000000e+00>
// CHECK-NEXT: %[[UP:.*]] = partita.mul %[[RP]], %[[CP]]
// CHECK-NEXT: return %[[UP]], %[[UQ]], %[[N]]
func.func @tail(%x: tensor<16xf32>, %s: tensor<4xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<4xf32>) {
  %gq = partita.tanh %x : tensor<16xf32>
  %rq = partita.all_reduce sum %gq on @mesh axes = ["x"] : tensor<16xf32>
  %gp = partita.exp %gq : tensor<16xf32>
  %rp = partita.all_reduce sum %gp on @mesh axes = ["x"] : tensor<16xf32>
  %cp = partita.constant dense<2.0> : tensor<16xf32>
  %up = partita.mul %rp, %cp : tensor<16xf32>
  %cq = partita.constant dense<3.0> : tensor<16xf32>
  %uq = partita.mul %rq, %cq : tensor<16xf32>
  %n = partita.neg %s : tensor<4xf32>
  return %up, %uq, %n : tensor<16xf32>, tensor<16xf32>, tensor<4xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// A norm under FSDP: scale and bias gathered, each used inside the chain
// that applies them. The next gather (the bias's) starts before that
// chain, not at the scale's first use in its middle, where the fusion pass
// would have to split the chain; then the weight's gather, for the same
// reason, before the same chain.
// CHECK-LABEL: func.func @norm
// CHECK-NEXT: %[[S:.*]] = partita.all_gather %{{.*}} dim = 0
// CHECK-NEXT: %[[B:.*]] = partita.all_gather %{{.*}} dim = 0
// CHECK-NEXT: %[[W:.*]] = partita.all_gather %{{.*}} dim = 0
// CHECK-NEXT: %[[T:.*]] = partita.tanh
// CHECK-NEXT: partita.broadcast %[[S]]
// CHECK-NEXT: partita.mul
// CHECK-NEXT: partita.broadcast %[[B]]
// CHECK-NEXT: partita.add
// CHECK-NEXT: partita.einsum "bd,dh->bh" %{{.*}}, %[[W]]
func.func @norm(%x: tensor<8x16xf32>, %ps: tensor<4xf32>, %pb: tensor<4xf32>, %pw: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %s = partita.all_gather %ps on @mesh axes = ["x"] dim = 0 : tensor<4xf32> -> tensor<16xf32>
  %t = partita.tanh %x : tensor<8x16xf32>
  %sb = partita.broadcast %s dims = [1] : tensor<16xf32> -> tensor<8x16xf32>
  %m = partita.mul %t, %sb : tensor<8x16xf32>
  %b = partita.all_gather %pb on @mesh axes = ["x"] dim = 0 : tensor<4xf32> -> tensor<16xf32>
  %bb = partita.broadcast %b dims = [1] : tensor<16xf32> -> tensor<8x16xf32>
  %a = partita.add %m, %bb : tensor<8x16xf32>
  %w = partita.all_gather %pw on @mesh axes = ["x"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %h = partita.einsum "bd,dh->bh" %a, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %h : tensor<8x16xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// A reduce_scatter holds a whole gradient until its wait: it moves up to
// just after its gradient, ahead of the gather started before it (whose
// first use is the return), instead of waiting behind it in the tail.
// CHECK-LABEL: func.func @gradients
// CHECK: %[[G1:.*]] = partita.einsum "bh,bd->dh"
// CHECK-NEXT: %[[R1:.*]] = partita.reduce_scatter sum %[[G1]]
// CHECK: %[[G0:.*]] = partita.einsum "bh,bd->dh"
// CHECK-NEXT: %[[R0:.*]] = partita.reduce_scatter sum %[[G0]]
// CHECK-NEXT: return %[[R1]], %[[R0]]
func.func @gradients(%x: tensor<8x16xf32>, %dy: tensor<8x16xf32>, %p: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x16xf32>) {
  %w = partita.all_gather %p on @mesh axes = ["x"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %g1 = partita.einsum "bh,bd->dh" %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %t = partita.tanh %dy : tensor<8x16xf32>
  %g0 = partita.einsum "bh,bd->dh" %t, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %r1 = partita.reduce_scatter sum %g1 on @mesh axes = ["x"] dim = 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  %r0 = partita.reduce_scatter sum %g0 on @mesh axes = ["x"] dim = 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  return %r1, %r0, %w : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x16xf32>
}

// -----

partita.mesh @mesh = <["x"=4]>

// A gradient computed before an optimization barrier is reduced right
// after it is computed, above the barrier (which its value does not pass
// through): held until after the barrier, every layer's gradient of a
// recomputed step stayed alive through the backward pass.
// CHECK-LABEL: func.func @behind_barrier
// CHECK: partita.einsum
// CHECK-NEXT: partita.reduce_scatter
// CHECK-NEXT: partita.optimization_barrier
// CHECK-NEXT: partita.tanh
func.func @behind_barrier(%x: tensor<8x16xf32>, %dy: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %g = partita.einsum "bh,bd->dh" %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %b = partita.optimization_barrier %dy : tensor<8x16xf32>
  %t = partita.tanh %b : tensor<8x16xf32>
  %r = partita.reduce_scatter sum %g on @mesh axes = ["x"] dim = 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  return %r, %t : tensor<4x16xf32>, tensor<8x16xf32>
}
