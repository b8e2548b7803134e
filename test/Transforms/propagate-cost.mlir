// RUN: partita-opt %s --split-input-file --partita-propagate="report-conflicts=true" --verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --split-input-file --partita-propagate="report-conflicts=true interconnect=%S/Inputs/slow-data.json" 2>&1 >/dev/null | FileCheck %s --check-prefix=SLOW

// Cost decides, both ways. x [B, 1024] and W [1024, 4096] are both split
// over "data" on dimension 0; y = x @ W is returned unannotated (whole).
// Option A (i: data) keeps x and gathers W: 7 x 2 MiB per device.
// Option B (j: data) moves x to P(None, "data") with an all_to_all, contracts
// over the split d, and reduce-scatters y into P("data", None).

// With B = 8, B costs ~0.11 MiB and wins.
// CHECK-LABEL: func.func @small_batch
// CHECK-SAME: -> (tensor<8x4096xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
// CHECK: partita.einsum {{.*}}partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>
// With a slow "data" link (5 GB/s, 20 us) the choice holds and the costs grow.
// SLOW: remark: shardings disagree; {{.*}} {j: "data"} 63.654 us (chosen); {i: "data"} 2956.013 us;
partita.mesh @mesh = <["data"=8]>
func.func @small_batch(
    %x: tensor<8x1024xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %w: tensor<1024x4096xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
    -> tensor<8x4096xf32> {
  // expected-remark @+1 {{shardings disagree; rule ([i, j], [j, k]) -> ([i, k]) {i=8, j=1024 reduction, k=4096} reduction=sum partial=single(0, 1) sum; options by estimated reshard time: {j: "data"} 10.263 us (chosen); {i: "data"} 37.622 us; {} 42.686 us;}}
  %y = partita.einsum "bd,df->bf" %x, %w : (tensor<8x1024xf32>, tensor<1024x4096xf32>) -> tensor<8x4096xf32>
  return %y : tensor<8x4096xf32>
}

// -----

// With B = 4096, B costs 1.75 + 56 MiB and A (gather W) wins.
// CHECK-LABEL: func.func @large_batch
// CHECK-SAME: -> (tensor<4096x4096xf32> {{{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
// CHECK: partita.einsum {{.*}}partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}
// SLOW: remark: shardings disagree; {{.*}} {i: "data"} 2956.013 us (chosen);
partita.mesh @mesh = <["data"=8]>
func.func @large_batch(
    %x: tensor<4096x1024xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %w: tensor<1024x4096xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
    -> tensor<4096x4096xf32> {
  // expected-warning @+2 {{'argument 1 of @large_batch' is annotated as sharded ([{"data"}, {}]), but 'partita.einsum' needs it whole: it will be all-gathered}}
  // expected-remark @+1 {{shardings disagree; rule ([i, j], [j, k]) -> ([i, k]) {i=4096, j=1024 reduction, k=4096} reduction=sum partial=single(0, 1) sum; options by estimated reshard time: {i: "data"} 37.622 us (chosen); {} 75.245 us; {j: "data"} 144.567 us;}}
  %y = partita.einsum "bd,df->bf" %x, %w : (tensor<4096x1024xf32>, tensor<1024x4096xf32>) -> tensor<4096x4096xf32>
  return %y : tensor<4096x4096xf32>
}
