// Calls are inlined before the module is verified (JAX's private helpers
// may sit inside shard_map bodies): a call of a function without its type
// (found by fuzzing the importer: the inliner read the missing type and
// crashed) is left to the verifier, which refuses it; exit code 1.
// RUN: not partita import %s 2>&1 | FileCheck %s

"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.abs"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "func.call"(%0) <{callee = @helper}> : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%1) : (tensor<4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "helper", sym_visibility = "private"}> ({
  ^bb0(%arg1: tensor<4xf32>):
    "func.return"(%arg1) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: error: {{.*}}'func.func' op requires attribute 'function_type'
