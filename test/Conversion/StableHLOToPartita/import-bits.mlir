// jax.random's threefry and its bits-to-floats import as shifts and a
// bitcast on signless integers (uint32 read as i32); a bitcast that changes
// the element width is a located error.
// RUN: partita import %s 2>&1 | FileCheck %s
// RUN: not partita import %S/Inputs/bitcast-width.mlir 2>&1 | FileCheck %s --check-prefix=WIDTH

"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xui32>, tensor<4xui32>) -> (tensor<4xui32>, tensor<4xf32>), sym_name = "main"}> ({
  ^bb0(%a: tensor<4xui32>, %b: tensor<4xui32>):
    %0 = "stablehlo.shift_left"(%a, %b) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
    %1 = "stablehlo.shift_right_logical"(%0, %b) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
    %2 = "stablehlo.shift_right_arithmetic"(%1, %b) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
    %3 = "stablehlo.bitcast_convert"(%2) : (tensor<4xui32>) -> tensor<4xf32>
    "func.return"(%2, %3) : (tensor<4xui32>, tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: func.func @main(%[[A:[a-z0-9]+]]: tensor<4xi32> {{.*}}, %[[B:[a-z0-9]+]]: tensor<4xi32>
// CHECK: %[[L:.*]] = partita.shift_left %[[A]], %[[B]] : tensor<4xi32>
// CHECK: %[[R:.*]] = partita.shift_right_logical %[[L]], %[[B]] : tensor<4xi32>
// CHECK: %[[S:.*]] = partita.shift_right_arithmetic %[[R]], %[[B]] : tensor<4xi32>
// CHECK: partita.bitcast_convert %[[S]] : tensor<4xi32> -> tensor<4xf32>

// WIDTH: bitcast-width.mlir:5:10: error: stablehlo.bitcast_convert between element types of different widths (or of i1) is not supported: 'tensor<4xi64>' -> 'tensor<4x2xf32>'
