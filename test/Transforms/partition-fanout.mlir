// RUN: partita-opt %s --split-input-file --partita-propagate --partita-partition | FileCheck %s --enable-var-scope
//
// A partial value that several ops read is reduced once where it is
// produced (docs/Propagation.md, "Cost"); passed on partial, each reader's
// result would need its own reduction.

// The contraction's partial sum feeds two linear ops whose results are
// needed whole: one all_reduce of the sum, not one per reader.
// CHECK-LABEL: func.func @two_readers
// CHECK: %[[P:.*]] = partita.einsum
// CHECK-SAME: partial = sum{"model"}
// CHECK: %[[R:.*]] = partita.all_reduce sum %[[P]] on @mesh axes = ["model"] {partita.reason = "operand 0 of partita.neg {{.*}}(read by several ops: reduced once)
// CHECK-NOT: partita.all_reduce
// CHECK: partita.neg %[[R]]
// CHECK: partita.add %[[R]], %[[R]]
// CHECK-NOT: partita.all_reduce
// CHECK: return
partita.mesh @mesh = <["model"=4]>
func.func @two_readers(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
                       %w: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %a = partita.neg %p : tensor<8x8xf32>
  %b = partita.add %p, %p : tensor<8x8xf32>
  %ea = partita.exp %a : tensor<8x8xf32>
  %eb = partita.exp %b : tensor<8x8xf32>
  return %ea, %eb : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// One reader: the partial sum travels on and is reduced where it must be
// whole (after the neg, before the exp).
// CHECK-LABEL: func.func @one_reader
// CHECK: %[[P:.*]] = partita.einsum
// CHECK: %[[N:.*]] = partita.neg %[[P]]
// CHECK: %[[R:.*]] = partita.all_reduce sum %[[N]]
// CHECK: partita.exp %[[R]]
partita.mesh @mesh = <["model"=4]>
func.func @one_reader(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
                      %w: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> tensor<8x8xf32> {
  %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %a = partita.neg %p : tensor<8x8xf32>
  %ea = partita.exp %a : tensor<8x8xf32>
  return %ea : tensor<8x8xf32>
}
