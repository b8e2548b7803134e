// Propagation does not depend on op order or use-list order: shuffling
// before propagating gives the same IR as shuffling after.
// RUN: python3 %S/../../bench/gen_transformer.py --layers 2 --seq 8 --embed 16 --heads 4 --mlp 32 --vocab 32 > %t.mlir
// RUN: for seed in 1 2 3 4 5 6 7 8; do \
// RUN:   partita-opt %t.mlir --partita-test-shuffle="seed=$seed" --partita-propagate > %t.before.$seed && \
// RUN:   partita-opt %t.mlir --partita-propagate --partita-test-shuffle="seed=$seed" > %t.after.$seed && \
// RUN:   diff %t.before.$seed %t.after.$seed || exit 1; \
// RUN: done
// RUN: partita-opt %t.mlir --partita-test-shuffle="seed=1" | FileCheck %s

// The shuffle really moves ops (sanity check of the test itself): the value
// projection (wv, %arg5) now comes before the query projection.
// CHECK-LABEL: func.func @gpt
// CHECK: partita.gather
// CHECK-NEXT: partita.einsum "bsd,dhk->bshk" %0, %arg5

// A diamond with disagreeing neighbours, many seeds.
// RUN: for seed in 11 12 13 14 15 16 17 18 19 20; do \
// RUN:   partita-opt %s --partita-test-shuffle="seed=$seed" --partita-propagate > %t.d1.$seed && \
// RUN:   partita-opt %s --partita-propagate --partita-test-shuffle="seed=$seed" > %t.d2.$seed && \
// RUN:   diff %t.d1.$seed %t.d2.$seed || exit 1; \
// RUN: done
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @diamond(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                   %w: tensor<16x32xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
                   %z: tensor<8x32xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>}) -> tensor<8x32xf32> {
  %h = partita.einsum "bd,dh->bh" %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = partita.exp %h : tensor<8x32xf32>
  %b = partita.tanh %h : tensor<8x32xf32>
  %c = partita.add %a, %z : tensor<8x32xf32>
  %d = partita.add %b, %c : tensor<8x32xf32>
  %e = partita.neg %d : tensor<8x32xf32>
  return %e : tensor<8x32xf32>
}
