// RUN: split-file %s %t
// RUN: partita-opt %t/one.mlir --split-input-file --partita-set-mesh="mesh=data=4,model=2" | FileCheck %t/one.mlir
// RUN: partita-opt %t/named.mlir --partita-set-mesh="mesh=second:y=3" | FileCheck %t/named.mlir

//--- one.mlir
// The only mesh of a module gets the new axes; shardings keep their axes.
// CHECK: partita.mesh @mesh = <["data"=4, "model"=2]>
// CHECK-LABEL: func.func @retarget
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {"model"}]>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @retarget(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model"}]>}) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// Explicit device ids are dropped with the old axes.
// CHECK: partita.mesh @ids = <["data"=4, "model"=2]>
// CHECK-NOT: device_ids
partita.mesh @ids = <["data"=2], device_ids = [1, 0]>

//--- named.mlir
// With a name, only that mesh changes.
// CHECK: partita.mesh @first = <["x"=2]>
// CHECK: partita.mesh @second = <["y"=3]>
partita.mesh @first = <["x"=2]>
partita.mesh @second = <["y"=2]>
