// RUN: partita-opt %s --split-input-file --partita-grad | FileCheck %s --enable-var-scope

// A maximum marked partita.stop_gradient (softmax's shift) sends nothing
// back: the gradient has no compare finding the maximum's elements and no
// second path into %x, only the one through the exponential.
// CHECK-LABEL: func.func @shifted_grad
// CHECK-NOT: partita.compare
// CHECK: return
func.func @shifted(%x: tensor<4x8xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %m = partita.reduce max %x dims = [1] {partita.stop_gradient} : tensor<4x8xf32> -> tensor<4xf32>
  %mb = partita.broadcast %m dims = [0] : tensor<4xf32> -> tensor<4x8xf32>
  %s = partita.sub %x, %mb : tensor<4x8xf32>
  %e = partita.exp %s : tensor<4x8xf32>
  %l = partita.reduce sum %e dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Unmarked, the maximum's gradient goes to its elements (split among ties).
// CHECK-LABEL: func.func @unshifted_grad
// CHECK: partita.compare eq
// CHECK: return
func.func @unshifted(%x: tensor<4x8xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %m = partita.reduce max %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %mb = partita.broadcast %m dims = [0] : tensor<4xf32> -> tensor<4x8xf32>
  %s = partita.sub %x, %mb : tensor<4x8xf32>
  %e = partita.exp %s : tensor<4x8xf32>
  %l = partita.reduce sum %e dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
