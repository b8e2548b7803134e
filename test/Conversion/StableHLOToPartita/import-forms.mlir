// Forms JAX 0.12 and its libraries write that the corpus does not reach:
// a composite (inlined through its decomposition), a scatter that stores
// (x.at[i].set), and the refusals of what is still unsupported, each at
// its op with the JAX construct named.
// RUN: partita import %s 2>&1 | FileCheck %s
// RUN: partita run %s --devices cpu:1 | FileCheck %s --check-prefix=OUT

"builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{function_type = () -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
    %arg0 = "stablehlo.constant"() <{value = dense<[0.0, 0.0, 0.0, 0.0]> : tensor<4xf32>}> : () -> tensor<4xf32>
    %0 = "stablehlo.composite"(%arg0) <{decomposition = @my_gelu, name = "my.gelu"}> : (tensor<4xf32>) -> tensor<4xf32>
    %i = "stablehlo.constant"() <{value = dense<[[1], [3]]> : tensor<2x1xi32>}> : () -> tensor<2x1xi32>
    %u = "stablehlo.constant"() <{value = dense<[5.0, 7.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %1 = "stablehlo.scatter"(%0, %i, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      "stablehlo.return"(%b) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
    "func.return"(%1) : (tensor<4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "my_gelu", sym_visibility = "private"}> ({
  ^bb0(%x: tensor<4xf32>):
    %t = "stablehlo.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%t) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// The composite's decomposition is inlined; the store is a select where an
// update landed.
// CHECK-NOT: stablehlo
// CHECK: partita.tanh
// CHECK: partita.einsum
// CHECK: partita.select
// CHECK-NOT: func.func private
// Positions 1 and 3 hold the updates, 0 and 2 tanh(0).
// OUT: result 0: f32[4] sum=12 min=0 max=7
// OUT-NOT: error
