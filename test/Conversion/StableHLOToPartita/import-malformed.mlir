// A StableHLO module that does not verify (here a function without its
// type, found by fuzzing the importer: it read the missing type and
// crashed) is refused by the verifier at the op's location before the
// importer looks at it; exit code 1.
// RUN: not partita import %s 2>&1 | FileCheck %s

"builtin.module"() ({
  "func.func"() <{sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: import-malformed.mlir:8:3: error: 'func.func' op requires attribute 'function_type'
