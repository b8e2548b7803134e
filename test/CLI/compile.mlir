// `partita compile` reads a module from a file or stdin, verifies it and
// prints it; `--version` and the help texts go to stdout with exit code 0.
// RUN: partita compile --stage verified %s | FileCheck %s --enable-var-scope
// RUN: partita compile --stage verified < %s | FileCheck %s --enable-var-scope
// RUN: partita compile --stage verified - < %s | FileCheck %s --enable-var-scope
// RUN: partita compile --stage verified %s | FileCheck %s --enable-var-scope
// RUN: partita compile %s --stage=verified | FileCheck %s --enable-var-scope
// RUN: rm -f %t.mlir && partita compile --stage verified %s -o %t.mlir | FileCheck %s --allow-empty --check-prefix=EMPTY
// RUN: FileCheck %s --enable-var-scope < %t.mlir
// RUN: partita compile --stage verified -o %t.stdin.mlir - < %s && FileCheck %s --enable-var-scope < %t.stdin.mlir
// RUN: partita compile --stage verified %t.mlir | FileCheck %s --enable-var-scope
// RUN: partita compile --stage verified %s | partita-opt | FileCheck %s --enable-var-scope
// RUN: partita compile --stage verified %s -o %t.again.mlir && diff %t.mlir %t.again.mlir
// The default stage partitions: local shapes on every device.
// RUN: partita compile %s | FileCheck %s --check-prefix=PARTITIONED
// PARTITIONED: module attributes {partita.async_collectives, partita.partitioned}
// PARTITIONED: func.func @layer(%{{.*}}: tensor<2x8xf32> {{.*}}, %{{.*}}: tensor<8x8xf32> {{.*}}) -> (tensor<2x8xf32>
// RUN: partita --version | FileCheck %s --check-prefix=VERSION
// RUN: partita --help | FileCheck %s --check-prefix=HELP
// RUN: partita -h | FileCheck %s --check-prefix=HELP
// RUN: partita help | FileCheck %s --check-prefix=HELP
// RUN: partita compile --help | FileCheck %s --check-prefix=COMPILE-HELP
// RUN: partita compile -h | FileCheck %s --check-prefix=COMPILE-HELP

// With -o nothing is written to stdout.
// EMPTY-NOT: {{.}}

// VERSION: {{^}}partita {{[0-9]+\.[0-9]+\.[0-9]+}}

// HELP: Usage: partita <command> [options]
// HELP: Commands:
// HELP: compile [in.mlir|-]
// HELP: --version

// COMPILE-HELP: Usage: partita compile [in.mlir|-] [options]
// COMPILE-HELP: -o <file>
// COMPILE-HELP: --stage <stage>

// The mesh and every annotation survive compilation to the verified stage.
// CHECK: partita.mesh @mesh = <["data"=2, "model"=2]>
partita.mesh @mesh = <["data"=2, "model"=2]>

// A small MLP layer with sharded parameters and a constraint.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: partita.role = #partita.role<input>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>
// CHECK-SAME: partita.donated, partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>
// CHECK-SAME: -> (tensor<4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model", ?}]>})
func.func @layer(%x: tensor<4x8xf32> {partita.role = #partita.role<input>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                 %w: tensor<8x16xf32> {partita.role = #partita.role<param>, partita.donated, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>})
    -> (tensor<4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model", ?}]>}) {
  // CHECK: %[[H:.*]] = partita.einsum "bd,dh->bh" %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h = partita.einsum "bd,dh->bh" %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[C:.*]] = partita.sharding_constraint %[[H]] <@mesh, [{"data"}, {"model"}]> : tensor<4x16xf32>
  %c = partita.sharding_constraint %h <@mesh, [{"data"}, {"model"}]> : tensor<4x16xf32>
  // CHECK: %[[Y:.*]] = partita.tanh %[[C]] : tensor<4x16xf32>
  %y = partita.tanh %c : tensor<4x16xf32>
  // CHECK: return %[[Y]] : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
