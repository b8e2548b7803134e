// StableHLO ops the importer cannot take as written are reported at their
// location, all in one run, instead of being read past their operands or
// dimensions (found by fuzzing the importer: a dot_general whose dimension
// numbers name a dimension its operand does not have crashed it); exit 1.
// RUN: not partita import %s 2>&1 | FileCheck %s

"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x8xf32>, tensor<8x2xf32>, tensor<*xf32>) -> (tensor<4x2xf32>), sym_name = "main"}> ({
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %u: tensor<*xf32>):
    %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [7]>}> : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %1 = "stablehlo.add"(%0) : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %2 = "stablehlo.abs"(%u) : (tensor<*xf32>) -> tensor<4x2xf32>
    "func.return"(%1) : (tensor<4x2xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: import-malformed-ops.mlir:10:10: error: stablehlo.dot_general with dimension numbers '{{.*}}' that do not pair up
// CHECK: import-malformed-ops.mlir:11:10: error: 'stablehlo.add' with 1 operand(s) and 1 result(s); it has 2 and 1
// CHECK: import-malformed-ops.mlir:12:10: error: 'stablehlo.abs' with an operand or result that is not a ranked tensor
// CHECK: error: 3 ops or attributes of the StableHLO module could not be imported
