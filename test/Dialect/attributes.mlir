// Round trip of meshes, shardings, roles and donation: custom form, and
// through the generic form.
// RUN: partita-opt %s | partita-opt | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --mlir-print-op-generic | partita-opt | FileCheck %s --enable-var-scope

// Meshes of rank 1, 2 and 3; explicit device ids are kept as written, even
// the identity; a mesh may have no axes (one device); axis names are strings
// with any characters, escaped where needed.
// CHECK: partita.mesh @line = <["x"=4]>
// CHECK-NEXT: partita.mesh @grid = <["data"=2, "model"=4]>
// CHECK-NEXT: partita.mesh @cube = <["pipe"=2, "data"=2, "model"=2]>
// CHECK-NEXT: partita.mesh @reversed = <["x"=4], device_ids = [3, 2, 1, 0]>
// CHECK-NEXT: partita.mesh @shuffled = <["data"=2, "model"=2], device_ids = [0, 2, 1, 3]>
// CHECK-NEXT: partita.mesh @identity = <["a"=2, "b"=1], device_ids = [0, 1]>
// CHECK-NEXT: partita.mesh @single = <[]>
// CHECK-NEXT: partita.mesh @single_ids = <[], device_ids = [0]>
// CHECK-NEXT: partita.mesh @names = <["batch.dp"=2, "a b"=2, "q\22t"=1]>
partita.mesh @line = <["x"=4]>
partita.mesh @grid = <["data"=2, "model"=4]>
partita.mesh @cube = <["pipe"=2, "data"=2, "model"=2]>
partita.mesh @reversed = <["x"=4], device_ids = [3, 2, 1, 0]>
partita.mesh @shuffled = <["data"=2, "model"=2], device_ids = [0, 2, 1, 3]>
partita.mesh @identity = <["a"=2, "b"=1], device_ids = [0, 1]>
partita.mesh @single = <[]>
partita.mesh @single_ids = <[], device_ids = [0]>
partita.mesh @names = <["batch.dp"=2, "a b"=2, "q\"t"=1]>

// Closed dimensions: replicated `{}`, one axis, and several axes major to minor.
// CHECK-LABEL: func.func @closed_dims
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x4xf32> {partita.sharding = #partita.sharding<@cube, [{"data", "pipe"}, {}, {"model"}]>})
func.func @closed_dims(%x: tensor<8x16x4xf32> {partita.sharding = #partita.sharding<@cube, [{"data", "pipe"}, {}, {"model"}]>}) -> tensor<8x16x4xf32> {
  // CHECK: return %[[X]]
  return %x : tensor<8x16x4xf32>
}

// Open dimensions: nothing known `{?}`, and axes that propagation may extend.
// CHECK-LABEL: func.func @open_dims
// CHECK-SAME: {partita.sharding = #partita.sharding<@grid, [{?}, {"model", ?}]>}
func.func @open_dims(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{?}, {"model", ?}]>}) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// The three partial kinds, each over one or more axes disjoint from the
// dimension axes.
// CHECK-LABEL: func.func @partial_kinds
// CHECK-SAME: {partita.sharding = #partita.sharding<@grid, [{"data"}, {}], partial = sum{"model"}>}
// CHECK-SAME: {partita.sharding = #partita.sharding<@cube, [{}], partial = max{"data", "model"}>}
// CHECK-SAME: {partita.sharding = #partita.sharding<@grid, [{?}], partial = min{"data"}>}
func.func @partial_kinds(%s: tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{"data"}, {}], partial = sum{"model"}>},
                         %m: tensor<8xf32> {partita.sharding = #partita.sharding<@cube, [{}], partial = max{"data", "model"}>},
                         %n: tensor<8xf32> {partita.sharding = #partita.sharding<@grid, [{?}], partial = min{"data"}>}) {
  return
}

// Priorities, including 0, with and without a partial part; the fields print
// in a fixed order (partial, then priority) whatever order they were written in.
// CHECK-LABEL: func.func @priorities
// CHECK-SAME: {partita.sharding = #partita.sharding<@grid, [{"data"}, {?}], priority = 0>}
// CHECK-SAME: {partita.sharding = #partita.sharding<@grid, [{}, {"data", ?}], partial = sum{"model"}, priority = 3>}
func.func @priorities(%a: tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{"data"}, {?}], priority = 0>},
                      %b: tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{}, {"data", ?}], priority = 3, partial = sum{"model"}>}) {
  return
}

// A 0-d tensor has an empty dimension list; it can still be partial.
// CHECK-LABEL: func.func @scalar
// CHECK-SAME: {partita.sharding = #partita.sharding<@line, []>}
// CHECK-SAME: -> (tensor<f32> {partita.sharding = #partita.sharding<@line, [], partial = sum{"x"}>})
func.func @scalar(%s: tensor<f32> {partita.sharding = #partita.sharding<@line, []>}) -> (tensor<f32> {partita.sharding = #partita.sharding<@line, [], partial = sum{"x"}>}) {
  return %s : tensor<f32>
}

// Shardings on a mesh with no axes, and on meshes with explicit device ids.
// CHECK-LABEL: func.func @other_meshes
// CHECK-SAME: {partita.sharding = #partita.sharding<@single, [{}, {?}]>}
// CHECK-SAME: {partita.sharding = #partita.sharding<@reversed, [{"x"}]>}
// CHECK-SAME: {partita.sharding = #partita.sharding<@shuffled, [{"model", "data"}]>}
func.func @other_meshes(%a: tensor<2x2xf32> {partita.sharding = #partita.sharding<@single, [{}, {?}]>},
                        %b: tensor<8xf32> {partita.sharding = #partita.sharding<@reversed, [{"x"}]>},
                        %c: tensor<8xf32> {partita.sharding = #partita.sharding<@shuffled, [{"model", "data"}]>}) {
  return
}

// Function results carry shardings one by one; unannotated ones stay bare.
// CHECK-LABEL: func.func @results
// CHECK-SAME: -> (tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{"data"}, {"model"}]>}, tensor<8x16xf32>, tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{?}, {?}]>})
func.func @results(%x: tensor<8x16xf32>) -> (tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{"data"}, {"model"}]>}, tensor<8x16xf32>, tensor<8x16xf32> {partita.sharding = #partita.sharding<@grid, [{?}, {?}]>}) {
  return %x, %x, %x : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// A single-result op takes one sharding, or an array holding one.
// CHECK-LABEL: func.func @op_result_single
func.func @op_result_single(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  // CHECK: %[[E:.*]] = partita.exp %{{.*}} {partita.sharding = #partita.sharding<@grid, [{"data"}, {?}]>} : tensor<8x16xf32>
  %e = partita.exp %x {partita.sharding = #partita.sharding<@grid, [{"data"}, {?}]>} : tensor<8x16xf32>
  // CHECK: partita.add %[[E]], %[[E]] {partita.sharding = [#partita.sharding<@grid, [{"data"}, {}], partial = sum{"model"}>]} : tensor<8x16xf32>
  %a = partita.add %e, %e {partita.sharding = [#partita.sharding<@grid, [{"data"}, {}], partial = sum{"model"}>]} : tensor<8x16xf32>
  return %e, %a : tensor<8x16xf32>, tensor<8x16xf32>
}

// Multi-result ops take an array with one sharding per result.
// CHECK-LABEL: func.func @op_result_array
func.func @op_result_array(%x: tensor<8x16xf32>) -> (tensor<8x2xf32>, tensor<8x2xi32>, tensor<8x16xf32>, tensor<f32>) {
  // CHECK: %[[V:.*]], %[[I:.*]] = partita.top_k %{{.*}} dim = 1 k = 2 {partita.sharding = [#partita.sharding<@grid, [{"data"}, {}]>, #partita.sharding<@grid, [{"data"}, {?}]>]} : tensor<8x16xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  %v, %i = partita.top_k %x dim = 1 k = 2 {partita.sharding = [#partita.sharding<@grid, [{"data"}, {}]>, #partita.sharding<@grid, [{"data"}, {?}]>]} : tensor<8x16xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  // CHECK: %[[B:.*]]:2 = partita.optimization_barrier %{{.*}}, %{{.*}} {partita.sharding = [#partita.sharding<@grid, [{}, {"model"}]>, #partita.sharding<@line, []>]} : tensor<8x16xf32>, tensor<f32>
  %s = partita.reduce sum %x dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  %b:2 = partita.optimization_barrier %x, %s {partita.sharding = [#partita.sharding<@grid, [{}, {"model"}]>, #partita.sharding<@line, []>]} : tensor<8x16xf32>, tensor<f32>
  // CHECK: return %[[V]], %[[I]], %[[B]]#0, %[[B]]#1
  return %v, %i, %b#0, %b#1 : tensor<8x2xf32>, tensor<8x2xi32>, tensor<8x16xf32>, tensor<f32>
}

// A loop's results take an array too; the attribute prints after the body.
// CHECK-LABEL: func.func @loop_results
func.func @loop_results(%x: tensor<8xf32>, %s: tensor<f32>) -> (tensor<8xf32>, tensor<f32>) {
  // CHECK: partita.loop 2 times
  %r:2 = partita.loop 2 times (%i) iter_args(%a = %x, %b = %s) : tensor<8xf32>, tensor<f32> {
    partita.yield %a, %b : tensor<8xf32>, tensor<f32>
  // CHECK: } {partita.sharding = [#partita.sharding<@line, [{"x"}]>, #partita.sharding<@line, []>]}
  } {partita.sharding = [#partita.sharding<@line, [{"x"}]>, #partita.sharding<@line, []>]}
  return %r#0, %r#1 : tensor<8xf32>, tensor<f32>
}

// Every role, donation, and both together with a sharding on one argument.
// CHECK-LABEL: func.func @roles
// CHECK-SAME: {partita.role = #partita.role<param>}
// CHECK-SAME: {partita.role = #partita.role<opt_state>}
// CHECK-SAME: {partita.role = #partita.role<grad>}
// CHECK-SAME: {partita.role = #partita.role<input>}
// CHECK-SAME: {partita.role = #partita.role<activation>}
// CHECK-SAME: {partita.donated}
// CHECK-SAME: {partita.donated, partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@grid, [{}, {"model"}]>}
func.func @roles(%p: tensor<4xf32> {partita.role = #partita.role<param>},
                 %o: tensor<4xf32> {partita.role = #partita.role<opt_state>},
                 %g: tensor<4xf32> {partita.role = #partita.role<grad>},
                 %i: tensor<4xf32> {partita.role = #partita.role<input>},
                 %a: tensor<4xf32> {partita.role = #partita.role<activation>},
                 %d: tensor<4xf32> {partita.donated},
                 %w: tensor<16x16xf32> {partita.sharding = #partita.sharding<@grid, [{}, {"model"}]>, partita.donated, partita.role = #partita.role<param>}) {
  return
}

// The building-block attributes print on their own wherever an attribute can
// appear: here in a function's discardable attributes. Their validity is
// checked only where a mesh or sharding uses them.
// CHECK-LABEL: func.func @standalone_attrs
// CHECK-SAME: axis = #partita.axis<"x" = 2>
// CHECK-SAME: dim_closed = #partita.dim_sharding<{"x", "y"}>
// CHECK-SAME: dim_empty = #partita.dim_sharding<{}>
// CHECK-SAME: dim_open = #partita.dim_sharding<{"x", ?}>
// CHECK-SAME: dim_unknown = #partita.dim_sharding<{?}>
// CHECK-SAME: mesh = #partita.mesh<["x"=2, "y"=2], device_ids = [1, 0, 3, 2]>
// CHECK-SAME: role = #partita.role<grad>
// CHECK-SAME: sharding = #partita.sharding<@grid, [{"x"}], partial = max{"y"}, priority = 1>
func.func @standalone_attrs() attributes {
    axis = #partita.axis<"x" = 2>,
    dim_closed = #partita.dim_sharding<{"x", "y"}>,
    dim_empty = #partita.dim_sharding<{}>,
    dim_open = #partita.dim_sharding<{"x", ?}>,
    dim_unknown = #partita.dim_sharding<{?}>,
    mesh = #partita.mesh<["x"=2, "y"=2], device_ids = [1, 0, 3, 2]>,
    role = #partita.role<grad>,
    sharding = #partita.sharding<@grid, [{"x"}], partial = max{"y"}, priority = 1>} {
  return
}

// Axis names with dots, spaces and quotes print escaped in shardings too.
// CHECK-LABEL: func.func @axis_names
// CHECK-SAME: #partita.sharding<@names, [{"a b", "q\22t"}, {"batch.dp"}]>
func.func @axis_names(%x: tensor<4x4xf32> {partita.sharding = #partita.sharding<@names, [{"a b", "q\"t"}, {"batch.dp"}]>}) {
  return
}
