// RUN: partita-opt %s --split-input-file --partita-combine-collectives="bucket-bytes=1048576 min-buckets=2 interconnect=%S/Inputs/low-latency.json" | FileCheck %s --enable-var-scope
// On the default link (5 us) a bucket sent early must hold 1.125 MB; these
// do not, so each block keeps one bucket.
// RUN: partita-opt %s --split-input-file --partita-combine-collectives="bucket-bytes=4194304 min-buckets=2" | FileCheck %s --check-prefix=DEFAULT
// DEFAULT-LABEL: func.func @readiness
// DEFAULT: partita.all_reduce sum {{.*}} {partita.reason = "combines 3 all_reduce of 49152 elements
// DEFAULT-NOT: partita.all_reduce
// DEFAULT-LABEL: func.func

partita.mesh @mesh = <["data"=2, "model"=2]>

// With min-buckets (what overlap asks for), buckets fill in the order the
// gradients become ready, not in the order their all_reduces stand: the
// partitioner leaves them after the backward pass in parameter order
// (r1, r2, r3), but g3 is ready first. Each all_reduce moves up to just
// after its gradient; the first bucket (g3, g2: 128 KiB, over the 96 KiB
// fill) goes out right after g2, and the last member (g1) goes out at once
// rather than wait for its first use.
// CHECK-LABEL: func.func @readiness
// CHECK: %[[G3:.*]] = partita.tanh
// CHECK-NEXT: %[[G2:.*]] = partita.exp %[[G3]]
// CHECK: %[[PACK:.*]] = partita.concatenate
// CHECK-NEXT: %[[B:.*]] = partita.all_reduce sum %[[PACK]] {{.*}} {partita.reason = "combines 2 all_reduce of 32768 elements: {{.*}}"}
// CHECK: %[[G1:.*]] = partita.sin %[[G2]]
// CHECK-NEXT: %[[R1:.*]] = partita.all_reduce sum %[[G1]]
// CHECK-NEXT: %[[U1:.*]] = partita.neg %[[R1]]
func.func @readiness(%x: tensor<16384xf32>) -> (tensor<16384xf32>, tensor<16384xf32>, tensor<16384xf32>) {
  %g3 = partita.tanh %x : tensor<16384xf32>
  %g2 = partita.exp %g3 : tensor<16384xf32>
  %g1 = partita.sin %g2 : tensor<16384xf32>
  %r1 = partita.all_reduce sum %g1 on @mesh axes = ["data"] : tensor<16384xf32>
  %r2 = partita.all_reduce sum %g2 on @mesh axes = ["data"] : tensor<16384xf32>
  %r3 = partita.all_reduce sum %g3 on @mesh axes = ["data"] : tensor<16384xf32>
  %u1 = partita.neg %r1 : tensor<16384xf32>
  return %u1, %r2, %r3 : tensor<16384xf32>, tensor<16384xf32>, tensor<16384xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// A tensor-parallel activation all_reduce that reads an earlier one's
// result emits only that one's bucket: the gradients' bucket over "data"
// stays open and takes both gradients.
// CHECK-LABEL: func.func @selective
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"]
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"]
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["data"] {partita.reason = "combines 2 all_reduce of 32 elements: {{.*}}"}
// CHECK-NOT: partita.all_reduce
func.func @selective(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %ga = partita.exp %x : tensor<16xf32>
  %ra = partita.all_reduce sum %ga on @mesh axes = ["data"] : tensor<16xf32>
  %m1 = partita.all_reduce sum %x on @mesh axes = ["model"] : tensor<16xf32>
  %h = partita.tanh %m1 : tensor<16xf32>
  %m2 = partita.all_reduce sum %h on @mesh axes = ["model"] : tensor<16xf32>
  %gb = partita.sin %m2 : tensor<16xf32>
  %rb = partita.all_reduce sum %gb on @mesh axes = ["data"] : tensor<16xf32>
  return %ra, %rb, %m2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// FSDP's gradient reduce_scatters move up the same way: g2's, ready first
// and a full bucket alone, goes right after g2. One of a value from before
// an optimization barrier (g0, computed before the layer recomputed from
// the barrier on) does not move up to the barrier, where it would be
// packed in the middle of the recomputation: it joins g1's bucket, which
// goes out when g1's result is first needed.
// CHECK-LABEL: func.func @scatters
// CHECK: %[[G0:.*]] = partita.sin
// CHECK-NEXT: %[[B:.*]]:2 = partita.optimization_barrier
// CHECK-NEXT: %[[G2:.*]] = partita.tanh %[[B]]#1
// CHECK-NEXT: %[[S2:.*]] = partita.reduce_scatter sum %[[G2]]
// CHECK-NEXT: %[[G1:.*]] = partita.exp %[[B]]#0
// CHECK-NEXT: %[[P1:.*]] = partita.reshape %[[G1]]
// CHECK-NEXT: %[[P0:.*]] = partita.reshape %[[G0]]
// CHECK-NEXT: %[[PACK:.*]] = partita.concatenate %[[P1]], %[[P0]]
// CHECK-NEXT: partita.reduce_scatter sum %[[PACK]] {{.*}} {partita.reason = "combines 2 reduce_scatter
func.func @scatters(%x: tensor<8x1024xf32>, %y: tensor<16x1024xf32>) -> (tensor<4x1024xf32>, tensor<8x1024xf32>, tensor<4x1024xf32>) {
  %g0 = partita.sin %x : tensor<8x1024xf32>
  %b:2 = partita.optimization_barrier %x, %y : tensor<8x1024xf32>, tensor<16x1024xf32>
  %g2 = partita.tanh %b#1 : tensor<16x1024xf32>
  %g1 = partita.exp %b#0 : tensor<8x1024xf32>
  %s1 = partita.reduce_scatter sum %g1 on @mesh axes = ["data"] dim = 0 : tensor<8x1024xf32> -> tensor<4x1024xf32>
  %u = partita.neg %s1 : tensor<4x1024xf32>
  %s2 = partita.reduce_scatter sum %g2 on @mesh axes = ["data"] dim = 0 : tensor<16x1024xf32> -> tensor<8x1024xf32>
  %s0 = partita.reduce_scatter sum %g0 on @mesh axes = ["data"] dim = 0 : tensor<8x1024xf32> -> tensor<4x1024xf32>
  return %u, %s2, %s0 : tensor<4x1024xf32>, tensor<8x1024xf32>, tensor<4x1024xf32>
}

// -----

partita.mesh @mesh = <["data"=2, "model"=2]>

// A weight gradient's all_reduce comes right after the weight gradient,
// which reads an activation gradient's all_reduce: that bucket must go out
// first, but the next activation gradient's all_reduce, a few ops ahead
// and independent of it, moves up (with the op making its operand) and
// goes in the same bucket; one that reads the bucket's member does not.
// CHECK-LABEL: func.func @pull_ahead
// CHECK: %[[T:.*]] = partita.tanh %{{.*}} : tensor<4x8xf32>
// CHECK: partita.concatenate
// CHECK-NEXT: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"] {partita.reason = "combines 2 all_reduce of 64 elements
// CHECK: partita.einsum
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["data"]
// CHECK: partita.exp
// CHECK-NEXT: partita.all_reduce sum %{{.*}} on @mesh axes = ["model"] : tensor<4x8xf32>
// CHECK-NOT: partita.all_reduce
// CHECK: return
// DEFAULT-LABEL: func.func @pull_ahead
func.func @pull_ahead(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = partita.all_reduce sum %x on @mesh axes = ["model"] : tensor<4x8xf32>
  %g = partita.einsum "bd,bf->df" %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %r = partita.all_reduce sum %g on @mesh axes = ["data"] : tensor<8x8xf32>
  %t = partita.tanh %y : tensor<4x8xf32>
  %b = partita.all_reduce sum %t on @mesh axes = ["model"] : tensor<4x8xf32>
  %e = partita.exp %a : tensor<4x8xf32>
  %c = partita.all_reduce sum %e on @mesh axes = ["model"] : tensor<4x8xf32>
  return %r, %b, %c : tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
