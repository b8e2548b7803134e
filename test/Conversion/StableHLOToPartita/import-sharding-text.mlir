// A sharding the importer cannot read is reported at the op that holds it,
// with the reason; the parser's own message pointed into the translated
// text ("#partita.sharding<...>:1:35: error: expected ']'"), not the file.
// RUN: not partita import %s 2>&1 | FileCheck %s
// CHECK-NOT: #partita.sharding<
// CHECK: import-sharding-text.mlir:[[@LINE+4]]:3: error: cannot read the sharding #sdy.sharding<@mesh, [{"data"}p1]>: sharding priorities (p0, p1, ...) are not supported
// CHECK: import-sharding-text.mlir:[[@LINE+3]]:3: error: cannot read the sharding #sdy.sharding<@mesh, [{"data" "data"}]> (expected '}')
"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["data"=2]>, sym_name = "mesh"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"data"}p1]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"data" "data"}]>}], function_type = (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>):
    "func.return"(%arg0) : (tensor<8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
