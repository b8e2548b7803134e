// Round trip of the ops users write about shardings: custom form, and
// through the generic form.
// RUN: partita-opt %s | partita-opt | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --mlir-print-op-generic | partita-opt | FileCheck %s --enable-var-scope

partita.mesh @grid = <["data"=2, "model"=4]>
partita.mesh @cube = <["pipe"=2, "data"=2, "model"=2]>

// A constraint takes any sharding form: closed, open, partial, prioritized.
// CHECK-LABEL: func.func @constraints
func.func @constraints(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: %[[A:.*]] = partita.sharding_constraint %{{.*}} <@grid, [{"data"}, {?}]> : tensor<8x16xf32>
  %a = partita.sharding_constraint %x <@grid, [{"data"}, {?}]> : tensor<8x16xf32>
  // CHECK: %[[B:.*]] = partita.sharding_constraint %[[A]] <@grid, [{"data", ?}, {}], partial = sum{"model"}, priority = 2> : tensor<8x16xf32>
  %b = partita.sharding_constraint %a <@grid, [{"data", ?}, {}], partial = sum{"model"}, priority = 2> : tensor<8x16xf32>
  // CHECK: partita.sharding_constraint %[[B]] <@cube, [{"pipe", "data"}, {"model"}]> : tensor<8x16xf32>
  %c = partita.sharding_constraint %b <@cube, [{"pipe", "data"}, {"model"}]> : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// A constraint on a 0-d value lists no dimensions.
// CHECK-LABEL: func.func @constraint_scalar
func.func @constraint_scalar(%s: tensor<f32>) -> tensor<f32> {
  // CHECK: partita.sharding_constraint %{{.*}} <@grid, [], partial = max{"data", "model"}> : tensor<f32>
  %c = partita.sharding_constraint %s <@grid, [], partial = max{"data", "model"}> : tensor<f32>
  return %c : tensor<f32>
}

// Reshards chain: move an axis between dimensions, then replicate.
// CHECK-LABEL: func.func @reshards
func.func @reshards(%x: tensor<8x16xbf16>) -> tensor<8x16xbf16> {
  // CHECK: %[[R:.*]] = partita.reshard %{{.*}} <@grid, [{}, {"model", "data"}]> : tensor<8x16xbf16>
  %r = partita.reshard %x <@grid, [{}, {"model", "data"}]> : tensor<8x16xbf16>
  // CHECK: partita.reshard %[[R]] <@grid, [{}, {}]> : tensor<8x16xbf16>
  %s = partita.reshard %r <@grid, [{}, {}]> : tensor<8x16xbf16>
  return %s : tensor<8x16xbf16>
}

// The smallest manual computation: one operand, one result, one manual axis.
// CHECK-LABEL: func.func @manual_single
func.func @manual_single(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: %[[R:.*]] = partita.manual_computation(%{{.*}}) in_shardings = [<@grid, [{"data"}, {}]>] out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%[[L:.*]]: tensor<4x16xf32>) {
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"]
      (%lx: tensor<4x16xf32>) {
    // CHECK-NEXT: %[[E:.*]] = partita.exp %[[L]] : tensor<4x16xf32>
    %e = partita.exp %lx : tensor<4x16xf32>
    // CHECK-NEXT: partita.yield %[[E]] : tensor<4x16xf32>
    partita.yield %e : tensor<4x16xf32>
  // CHECK-NEXT: } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: return %[[R]]
  return %r : tensor<8x16xf32>
}

// Several operands and results over two manual axes; a dimension split over
// both axes, a replicated operand, and a collective over the manual axes
// inside the body (Megatron-style row-parallel matmul).
// CHECK-LABEL: func.func @manual_multi
func.func @manual_multi(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>) {
  // CHECK: %[[R:.*]]:2 = partita.manual_computation(%{{.*}}, %{{.*}}, %{{.*}}) in_shardings = [<@grid, [{"data"}, {"model"}]>, <@grid, [{"model"}, {}]>, <@grid, [{}]>]
  // CHECK-SAME: out_shardings = [<@grid, [{"data"}, {}]>, <@grid, [{"data", "model"}]>]
  // CHECK-SAME: manual_axes = ["data", "model"]
  // CHECK-SAME: (%[[LX:.*]]: tensor<4x4xf32>, %[[LW:.*]]: tensor<4x32xf32>, %[[LB:.*]]: tensor<32xf32>) {
  %r:2 = partita.manual_computation(%x, %w, %b)
      in_shardings = [<@grid, [{"data"}, {"model"}]>, <@grid, [{"model"}, {}]>, <@grid, [{}]>]
      out_shardings = [<@grid, [{"data"}, {}]>, <@grid, [{"data", "model"}]>]
      manual_axes = ["data", "model"]
      (%lx: tensor<4x4xf32>, %lw: tensor<4x32xf32>, %lb: tensor<32xf32>) {
    // CHECK-NEXT: %[[P:.*]] = partita.einsum "bd,dh->bh" %[[LX]], %[[LW]] : (tensor<4x4xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
    %p = partita.einsum "bd,dh->bh" %lx, %lw : (tensor<4x4xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
    // CHECK-NEXT: %[[S:.*]] = partita.all_reduce sum %[[P]] on @grid axes = ["model"] : tensor<4x32xf32>
    %s = partita.all_reduce sum %p on @grid axes = ["model"] : tensor<4x32xf32>
    // CHECK-NEXT: %[[BB:.*]] = partita.broadcast %[[LB]] dims = [1] : tensor<32xf32> -> tensor<4x32xf32>
    %bb = partita.broadcast %lb dims = [1] : tensor<32xf32> -> tensor<4x32xf32>
    // CHECK-NEXT: %[[Y:.*]] = partita.add %[[S]], %[[BB]] : tensor<4x32xf32>
    %y = partita.add %s, %bb : tensor<4x32xf32>
    // CHECK-NEXT: %[[M:.*]] = partita.reduce max %[[Y]] dims = [1] : tensor<4x32xf32> -> tensor<4xf32>
    %m = partita.reduce max %y dims = [1] : tensor<4x32xf32> -> tensor<4xf32>
    // CHECK-NEXT: %[[ML:.*]] = partita.all_slice %[[M]] on @grid axes = ["model"] dim = 0 : tensor<4xf32> -> tensor<1xf32>
    %ml = partita.all_slice %m on @grid axes = ["model"] dim = 0 : tensor<4xf32> -> tensor<1xf32>
    // CHECK-NEXT: partita.yield %[[Y]], %[[ML]] : tensor<4x32xf32>, tensor<1xf32>
    partita.yield %y, %ml : tensor<4x32xf32>, tensor<1xf32>
  // CHECK-NEXT: } : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>)
  } : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>)
  // CHECK: return %[[R]]#0, %[[R]]#1
  return %r#0, %r#1 : tensor<8x32xf32>, tensor<8xf32>
}

// Manual over a subset of a 3-D mesh: the other axes stay with the compiler,
// and the body gathers over one manual axis.
// CHECK-LABEL: func.func @manual_subset
func.func @manual_subset(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // CHECK: partita.manual_computation(%{{.*}}) in_shardings = [<@cube, [{"model", "pipe"}, {}]>] out_shardings = [<@cube, [{"model"}, {}]>] manual_axes = ["pipe", "model"] (%[[L:.*]]: tensor<2x6xf32>) {
  %r = partita.manual_computation(%x) in_shardings = [<@cube, [{"model", "pipe"}, {}]>]
      out_shardings = [<@cube, [{"model"}, {}]>] manual_axes = ["pipe", "model"]
      (%lx: tensor<2x6xf32>) {
    // CHECK-NEXT: %[[G:.*]] = partita.all_gather %[[L]] on @cube axes = ["pipe"] dim = 0 : tensor<2x6xf32> -> tensor<4x6xf32>
    %g = partita.all_gather %lx on @cube axes = ["pipe"] dim = 0 : tensor<2x6xf32> -> tensor<4x6xf32>
    // CHECK-NEXT: partita.yield %[[G]] : tensor<4x6xf32>
    partita.yield %g : tensor<4x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}

// Results only (no operands), a 0-d result, and discardable attributes,
// which print in an `attributes` dictionary before the body.
// CHECK-LABEL: func.func @manual_no_operands
func.func @manual_no_operands() -> tensor<f32> {
  // CHECK: partita.manual_computation() in_shardings = [] out_shardings = [<@grid, []>] manual_axes = ["model"] attributes {note = "replicated scalar"} () {
  %r = partita.manual_computation() in_shardings = [] out_shardings = [<@grid, []>]
      manual_axes = ["model"] attributes {note = "replicated scalar"} () {
    // CHECK-NEXT: %[[C:.*]] = partita.constant dense<1.000000e+00> : tensor<f32>
    %c = partita.constant dense<1.0> : tensor<f32>
    // CHECK-NEXT: partita.yield %[[C]] : tensor<f32>
    partita.yield %c : tensor<f32>
  } : () -> tensor<f32>
  return %r : tensor<f32>
}
