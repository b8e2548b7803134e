// Round trip of every tensor op: custom form, and through the generic form.
// RUN: partita-opt %s | partita-opt | FileCheck %s --enable-var-scope
// RUN: partita-opt %s --mlir-print-op-generic | partita-opt | FileCheck %s --enable-var-scope

// Constants and iota print their value and type.
// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2x3xf32>, tensor<4x8xi32>) {
  // CHECK: partita.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  %c = partita.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK: partita.iota dim = 1 : tensor<4x8xi32>
  %i = partita.iota dim = 1 : tensor<4x8xi32>
  return %c, %i : tensor<2x3xf32>, tensor<4x8xi32>
}

// Every unary float op keeps its operand type.
// CHECK-LABEL: func.func @unary_float
func.func @unary_float(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[A:.*]] = partita.neg %{{.*}} : tensor<4x8xf32>
  %0 = partita.neg %x : tensor<4x8xf32>
  // CHECK: partita.abs %[[A]] : tensor<4x8xf32>
  %1 = partita.abs %0 : tensor<4x8xf32>
  // CHECK: partita.sign
  %2 = partita.sign %1 : tensor<4x8xf32>
  // CHECK: partita.exp
  %3 = partita.exp %2 : tensor<4x8xf32>
  // CHECK: partita.log
  %4 = partita.log %3 : tensor<4x8xf32>
  // CHECK: partita.log1p
  %5 = partita.log1p %4 : tensor<4x8xf32>
  // CHECK: partita.tanh
  %6 = partita.tanh %5 : tensor<4x8xf32>
  // CHECK: partita.logistic
  %7 = partita.logistic %6 : tensor<4x8xf32>
  // CHECK: partita.sqrt
  %8 = partita.sqrt %7 : tensor<4x8xf32>
  // CHECK: partita.rsqrt
  %9 = partita.rsqrt %8 : tensor<4x8xf32>
  // CHECK: partita.erf
  %10 = partita.erf %9 : tensor<4x8xf32>
  // CHECK: partita.sin
  %11 = partita.sin %10 : tensor<4x8xf32>
  // CHECK: partita.cos
  %12 = partita.cos %11 : tensor<4x8xf32>
  // CHECK: partita.floor %{{.*}} : tensor<4x8xf32>
  %13 = partita.floor %12 : tensor<4x8xf32>
  return %13 : tensor<4x8xf32>
}

// Every binary op takes two operands of one type.
// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> tensor<8xbf16> {
  // CHECK: %[[ADD:.*]] = partita.add %{{.*}}, %{{.*}} : tensor<8xbf16>
  %0 = partita.add %x, %y : tensor<8xbf16>
  // CHECK: partita.sub %[[ADD]], %{{.*}} : tensor<8xbf16>
  %1 = partita.sub %0, %y : tensor<8xbf16>
  // CHECK: partita.mul
  %2 = partita.mul %1, %y : tensor<8xbf16>
  // CHECK: partita.div
  %3 = partita.div %2, %y : tensor<8xbf16>
  // CHECK: partita.rem
  %4 = partita.rem %3, %y : tensor<8xbf16>
  // CHECK: partita.max
  %5 = partita.max %4, %y : tensor<8xbf16>
  // CHECK: partita.min
  %6 = partita.min %5, %y : tensor<8xbf16>
  // CHECK: partita.pow %{{.*}}, %{{.*}} : tensor<8xbf16>
  %7 = partita.pow %6, %y : tensor<8xbf16>
  return %7 : tensor<8xbf16>
}

// Logical ops work on integers and i1.
// CHECK-LABEL: func.func @logical
func.func @logical(%a: tensor<4xi1>, %b: tensor<4xi1>, %n: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi32>) {
  // CHECK: partita.and %{{.*}}, %{{.*}} : tensor<4xi1>
  %0 = partita.and %a, %b : tensor<4xi1>
  // CHECK: partita.or
  %1 = partita.or %0, %b : tensor<4xi1>
  // CHECK: partita.xor
  %2 = partita.xor %1, %b : tensor<4xi1>
  // CHECK: partita.not %{{.*}} : tensor<4xi1>
  %3 = partita.not %2 : tensor<4xi1>
  // CHECK: partita.not %{{.*}} : tensor<4xi32>
  %4 = partita.not %n : tensor<4xi32>
  return %3, %4 : tensor<4xi1>, tensor<4xi32>
}

// Shifts and bit reinterpretation: what jax.random's threefry writes.
// CHECK-LABEL: func.func @bits
func.func @bits(%n: tensor<4xi32>, %k: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>) {
  // CHECK: partita.shift_left %{{.*}}, %{{.*}} : tensor<4xi32>
  %0 = partita.shift_left %n, %k : tensor<4xi32>
  // CHECK: partita.shift_right_logical %{{.*}}, %{{.*}} : tensor<4xi32>
  %1 = partita.shift_right_logical %0, %k : tensor<4xi32>
  // CHECK: partita.shift_right_arithmetic %{{.*}}, %{{.*}} : tensor<4xi32>
  %2 = partita.shift_right_arithmetic %1, %k : tensor<4xi32>
  // CHECK: partita.bitcast_convert %{{.*}} : tensor<4xi32> -> tensor<4xf32>
  %3 = partita.bitcast_convert %2 : tensor<4xi32> -> tensor<4xf32>
  return %2, %3 : tensor<4xi32>, tensor<4xf32>
}

// compare infers an i1 result; select and convert.
// CHECK-LABEL: func.func @compare_select_convert
func.func @compare_select_convert(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xbf16> {
  // CHECK: %[[M:.*]] = partita.compare eq, %{{.*}}, %{{.*}} : tensor<4xf32>
  %m0 = partita.compare eq, %x, %y : tensor<4xf32>
  // CHECK: partita.compare ne,
  %m1 = partita.compare ne, %x, %y : tensor<4xf32>
  // CHECK: partita.compare lt,
  %m2 = partita.compare lt, %x, %y : tensor<4xf32>
  // CHECK: partita.compare le,
  %m3 = partita.compare le, %x, %y : tensor<4xf32>
  // CHECK: partita.compare gt,
  %m4 = partita.compare gt, %x, %y : tensor<4xf32>
  // CHECK: partita.compare ge,
  %m5 = partita.compare ge, %x, %y : tensor<4xf32>
  // CHECK: %[[S:.*]] = partita.select %[[M]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>
  %s = partita.select %m0, %x, %y : tensor<4xi1>, tensor<4xf32>
  // CHECK: partita.convert %[[S]] : tensor<4xf32> -> tensor<4xbf16>
  %c = partita.convert %s : tensor<4xf32> -> tensor<4xbf16>
  return %c : tensor<4xbf16>
}

// einsum with one and two operands, and bf16 inputs accumulated into f32.
// CHECK-LABEL: func.func @einsum
func.func @einsum(%x: tensor<2x8x16xbf16>, %w: tensor<16x32xbf16>) -> (tensor<2x8x32xf32>, tensor<16x8x2xbf16>) {
  // CHECK: partita.einsum "bsd,dh->bsh" %{{.*}}, %{{.*}} : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xf32>
  %y = partita.einsum "bsd,dh->bsh" %x, %w : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xf32>
  // CHECK: partita.einsum "bsd->dsb" %{{.*}} : (tensor<2x8x16xbf16>) -> tensor<16x8x2xbf16>
  %t = partita.einsum "bsd->dsb" %x : (tensor<2x8x16xbf16>) -> tensor<16x8x2xbf16>
  return %y, %t : tensor<2x8x32xf32>, tensor<16x8x2xbf16>
}

// Reductions of every kind, argmax, top_k and cumsum.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8xf32>, %b: tensor<4x8xi1>) -> (tensor<4xf32>, tensor<f32>, tensor<8xf32>, tensor<4xi1>, tensor<8xi1>, tensor<4xi32>, tensor<4x2xf32>, tensor<4x2xi64>, tensor<4x8xf32>) {
  // CHECK: partita.reduce sum %{{.*}} dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %0 = partita.reduce sum %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: partita.reduce max %{{.*}} dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %1 = partita.reduce max %x dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // CHECK: partita.reduce min %{{.*}} dims = [0]
  %2 = partita.reduce min %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK: partita.reduce and %{{.*}} dims = [1]
  %3 = partita.reduce and %b dims = [1] : tensor<4x8xi1> -> tensor<4xi1>
  // CHECK: partita.reduce or %{{.*}} dims = [0]
  %4 = partita.reduce or %b dims = [0] : tensor<4x8xi1> -> tensor<8xi1>
  // CHECK: partita.argmax %{{.*}} dim = 1 : tensor<4x8xf32> -> tensor<4xi32>
  %5 = partita.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<4xi32>
  // CHECK: %{{.*}}, %{{.*}} = partita.top_k %{{.*}} dim = 1 k = 2 : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %v, %i = partita.top_k %x dim = 1 k = 2 : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  // CHECK: partita.cumsum %{{.*}} dim = 1 reverse : tensor<4x8xf32>
  %c = partita.cumsum %x dim = 1 reverse : tensor<4x8xf32>
  // CHECK: partita.cumsum %{{.*}} dim = 0 : tensor<4x8xf32>
  %d = partita.cumsum %c dim = 0 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %v, %i, %d : tensor<4xf32>, tensor<f32>, tensor<8xf32>, tensor<4xi1>, tensor<8xi1>, tensor<4xi32>, tensor<4x2xf32>, tensor<4x2xi64>, tensor<4x8xf32>
}

// Shape-changing ops.
// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %pad: tensor<f32>) -> (tensor<4x8xf32>, tensor<32xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<9x8xf32>, tensor<6x9xf32>) {
  // CHECK: partita.broadcast %{{.*}} dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  %b = partita.broadcast %v dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: partita.reshape %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
  %r = partita.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  // CHECK: partita.transpose %{{.*}} perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %t = partita.transpose %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: partita.slice %{{.*}} start = [0, 2] limit = [4, 8] stride = [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  %s = partita.slice %x start = [0, 2] limit = [4, 8] stride = [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  // CHECK: partita.concatenate %{{.*}}, %{{.*}}, %{{.*}} dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<9x8xf32>
  %row = partita.reshape %v : tensor<8xf32> -> tensor<1x8xf32>
  %c = partita.concatenate %x, %b, %row dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<9x8xf32>
  // CHECK: partita.pad %{{.*}}, %{{.*}} low = [0, 1] high = [2, 0] : tensor<4x8xf32>, tensor<f32> -> tensor<6x9xf32>
  %p = partita.pad %x, %pad low = [0, 1] high = [2, 0] : tensor<4x8xf32>, tensor<f32> -> tensor<6x9xf32>
  return %b, %r, %t, %s, %c, %p : tensor<4x8xf32>, tensor<32xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<9x8xf32>, tensor<6x9xf32>
}

// Dynamic slices take one 0-d index per dimension.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<4x8xf32>, %u: tensor<1x8xf32>, %i: tensor<i32>, %j: tensor<i64>) -> (tensor<1x8xf32>, tensor<4x8xf32>) {
  // CHECK: partita.dynamic_slice %{{.*}}[%{{.*}}, %{{.*}}] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32>, tensor<i64> -> tensor<1x8xf32>
  %s = partita.dynamic_slice %x[%i, %j] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32>, tensor<i64> -> tensor<1x8xf32>
  // CHECK: partita.dynamic_update_slice %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>
  %r = partita.dynamic_update_slice %x, %u[%i, %i] : tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>
  return %s, %r : tensor<1x8xf32>, tensor<4x8xf32>
}

// Embedding lookups and their adjoint.
// CHECK-LABEL: func.func @gather_scatter
func.func @gather_scatter(%table: tensor<100x16xf32>, %ids: tensor<2x5xi32>, %g: tensor<2x5x16xf32>) -> (tensor<2x5x16xf32>, tensor<100x16xf32>) {
  // CHECK: partita.gather %{{.*}}[%{{.*}}] : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  %e = partita.gather %table[%ids] : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  // CHECK: partita.scatter_add %{{.*}}, %{{.*}}, %{{.*}} : tensor<100x16xf32>, tensor<2x5xi32>, tensor<2x5x16xf32>
  %t = partita.scatter_add %table, %ids, %g : tensor<100x16xf32>, tensor<2x5xi32>, tensor<2x5x16xf32>
  return %e, %t : tensor<2x5x16xf32>, tensor<100x16xf32>
}

// A counted loop carrying two values and using its iteration number.
// CHECK-LABEL: func.func @loop
func.func @loop(%x: tensor<4x8xf32>, %s: tensor<f32>) -> (tensor<4x8xf32>, tensor<f32>) {
  // CHECK: %[[R:.*]]:2 = partita.loop 3 times (%[[I:.*]]) iter_args(%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}}) : tensor<4x8xf32>, tensor<f32> {
  %r:2 = partita.loop 3 times (%i) iter_args(%a = %x, %b = %s) : tensor<4x8xf32>, tensor<f32> {
    // CHECK: partita.dynamic_slice %[[A]][%[[I]], %[[I]]]
    %row = partita.dynamic_slice %a[%i, %i] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1x8xf32>
    %sum = partita.reduce sum %row dims = [0, 1] : tensor<1x8xf32> -> tensor<f32>
    %nb = partita.add %b, %sum : tensor<f32>
    %na = partita.add %a, %a : tensor<4x8xf32>
    // CHECK: partita.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
    partita.yield %na, %nb : tensor<4x8xf32>, tensor<f32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<f32>
}

// A loop that carries nothing still has an iteration number.
// CHECK-LABEL: func.func @loop_no_carry
func.func @loop_no_carry() {
  // CHECK: partita.loop 0 times (%{{.*}}) {
  partita.loop 0 times (%i) {
    partita.yield
  }
  return
}

// The barrier returns its operands' types.
// CHECK-LABEL: func.func @barrier
func.func @barrier(%x: tensor<4xf32>, %y: tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>) {
  // CHECK: %{{.*}}:2 = partita.optimization_barrier %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<2xi32>
  %r:2 = partita.optimization_barrier %x, %y : tensor<4xf32>, tensor<2xi32>
  return %r#0, %r#1 : tensor<4xf32>, tensor<2xi32>
}
