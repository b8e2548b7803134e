// RUN: partita-opt %s --partita-grad | FileCheck %s --enable-var-scope

// A mask computed from iotas and constants depends on no argument: the
// reverse sweep gives it no adjoint, so the gradient function has the
// forward's one select and no op reading the mask's cotangent.
// CHECK-LABEL: func.func @masked_grad
// CHECK: %[[MASK:.*]] = partita.select
// CHECK: %[[SUM:.*]] = partita.add %arg0, %[[MASK]]
// CHECK: %[[EXP:.*]] = partita.exp %[[SUM]]
// CHECK-NOT: partita.select
// CHECK: %[[G:.*]] = partita.mul %{{.*}}, %[[EXP]]
// CHECK-NOT: partita.select
// CHECK: return %{{.*}}, %[[G]]
func.func @masked(%x: tensor<4x4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %s = partita.iota dim = 0 : tensor<4x4xi32>
  %t = partita.iota dim = 1 : tensor<4x4xi32>
  %future = partita.compare gt, %t, %s : tensor<4x4xi32>
  %hidden = partita.constant dense<-1.0e9> : tensor<4x4xf32>
  %visible = partita.constant dense<0.0> : tensor<4x4xf32>
  %mask = partita.select %future, %hidden, %visible : tensor<4x4xi1>, tensor<4x4xf32>
  %y = partita.add %x, %mask : tensor<4x4xf32>
  %e = partita.exp %y : tensor<4x4xf32>
  %l = partita.reduce sum %e dims = [0, 1] : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
