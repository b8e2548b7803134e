// Every op and attribute the importer cannot take is reported at its
// location, all in one run, then the count; the exit code is 1.
// RUN: not partita import %s 2>&1 | FileCheck %s
// RUN: not partita compile --from stablehlo %s 2>&1 | FileCheck %s --check-prefix=FIRST
// FIRST: error: 4 ops or attributes of the StableHLO module could not be imported

"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["data"=2]>, sym_name = "mesh"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"nope"}]>}], function_type = (tensor<8xf32>) -> tensor<8xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8xf32>):
    %0 = "stablehlo.fft"(%arg0) <{fft_length = array<i64: 8>, fft_type = #stablehlo<fft_type FFT>}> : (tensor<8xf32>) -> tensor<8xf32>
    %1 = "stablehlo.atan2"(%0, %0) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %2 = "stablehlo.pad"(%1, %arg0) <{edge_padding_high = array<i64: 0>, edge_padding_low = array<i64: 0>, interior_padding = array<i64: 1>}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<15xf32>
    %3 = "stablehlo.slice"(%2) <{limit_indices = array<i64: 8>, start_indices = array<i64: 0>, strides = array<i64: 1>}> : (tensor<15xf32>) -> tensor<8xf32>
    "func.return"(%3) : (tensor<8xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: import-errors.mlir:9:3: error: sharding of argument 0: unknown mesh axis 'nope'; the mesh has axes 'data'
// CHECK: import-errors.mlir:11:10: error: unsupported op 'stablehlo.fft' (JAX writes it for jnp.fft)
// CHECK: import-errors.mlir:12:10: error: unsupported op 'stablehlo.atan2' (JAX writes it for jnp.arctan2 and jnp.angle)
// CHECK: import-errors.mlir:13:10: error: stablehlo.pad whose padding value is not a scalar
// CHECK: import-errors.mlir:7:1: error: 4 ops or attributes of the StableHLO module could not be imported

