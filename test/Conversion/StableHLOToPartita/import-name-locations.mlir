// JAX gives many ops one name-only location (loc("gather")): an error is
// reported at the op that failed, not at the first op of that name.
// RUN: not partita import %s 2>&1 | FileCheck %s

"builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf32> loc(#named)
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#named)
    %2 = "stablehlo.fft"(%1) <{fft_length = array<i64: 4>, fft_type = #stablehlo<fft_type FFT>}> : (tensor<4xf32>) -> tensor<4xf32> loc(#named)
    "func.return"(%2) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
#named = loc("gather")

// CHECK: import-name-locations.mlir:10:10: error: unsupported op 'stablehlo.fft' (JAX writes it for jnp.fft)
// CHECK-NOT: import-name-locations.mlir:8:
