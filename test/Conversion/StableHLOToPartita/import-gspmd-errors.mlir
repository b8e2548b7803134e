// GSPMD shardings (mhlo.sharding strings) that are not tiles over the
// devices, and GSPMD custom calls other than @Sharding, are reported with
// the rest.
// RUN: not partita import %s 2>&1 | FileCheck %s

"builtin.module"() <{sym_name = "jit_g"}> ({
  "func.func"() <{arg_attrs = [{mhlo.sharding = "{maximal device=0}"}, {mhlo.sharding = "{devices=[3,1]0,1,2}"}], function_type = (tensor<8xf32>, tensor<6x2xf32>) -> tensor<8xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8xf32>, %arg1: tensor<6x2xf32>):
    %0 = "stablehlo.custom_call"(%arg0) <{call_target_name = "SPMDFullToShardShape"}> : (tensor<8xf32>) -> tensor<8xf32>
    "func.return"(%0) : (tensor<8xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32} : () -> ()

// CHECK: error: unsupported GSPMD sharding of argument 0: {maximal device=0}
// CHECK: error: GSPMD sharding of argument 1 {devices=[3,1]0,1,2} does not fit a rank-2 tensor on 4 devices
// CHECK: error: stablehlo.custom_call @SPMDFullToShardShape is not supported
// CHECK: error: 3 ops or attributes of the StableHLO module could not be imported
