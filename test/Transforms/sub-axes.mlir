// RUN: split-file %s %t
// RUN: partita-opt %t/split.mlir --split-input-file --partita-split-axes | FileCheck %t/split.mlir
// RUN: partita-opt %t/join.mlir --split-input-file --partita-join-axes | FileCheck %t/join.mlir
// RUN: partita-opt %t/gqa.mlir --partita-pipeline | FileCheck %t/gqa.mlir
// RUN: partita run %t/gqa.mlir --devices cpu:4 --check | FileCheck %t/gqa.mlir --check-prefix=EXEC

//--- split.mlir
// 16 columns reshaped into 2 heads of 8 over a "model" axis of 4: the axis
// becomes two sub-axes of 2, every sharding naming it names both, and the
// device ids stay as they were.
// CHECK: partita.mesh @mesh = <["data"=2, "model:(1)2"=2, "model:(2)2"=2], device_ids = [7, 6, 5, 4, 3, 2, 1, 0]> {partita.split_axes = ["model"]}
// CHECK-LABEL: func.func @kv
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {}, {"model:(1)2", "model:(2)2"}]>
// CHECK: partita.sharding_constraint %{{.*}} <@mesh, [{}, {}, {}, {}], partial = sum{"model:(1)2", "model:(2)2"}>
partita.mesh @mesh = <["data"=2, "model"=4], device_ids = [7, 6, 5, 4, 3, 2, 1, 0]>
func.func @kv(%x: tensor<4x8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {"model"}]>}) -> tensor<4x8x2x8xf32> {
  %r = partita.reshape %x : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %c = partita.sharding_constraint %r <@mesh, [{}, {}, {}, {}], partial = sum{"model"}> : tensor<4x8x2x8xf32>
  return %c : tensor<4x8x2x8xf32>
}

// -----

// Heads of the axis's size, or more: nothing to split.
// CHECK: partita.mesh @mesh = <["data"=2, "model"=4]>
// CHECK-NOT: model:(
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @heads(%x: tensor<4x8x32xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {"model"}]>}) -> tensor<4x8x4x8xf32> {
  %r = partita.reshape %x : tensor<4x8x32xf32> -> tensor<4x8x4x8xf32>
  return %r : tensor<4x8x4x8xf32>
}

// -----

// Two divisors that form a chain (2 | 4 | 8): parts of 2, 2 and 2.
// CHECK: partita.mesh @mesh = <["model:(1)2"=2, "model:(2)2"=2, "model:(4)2"=2]>
partita.mesh @mesh = <["model"=8]>
func.func @chain(%x: tensor<32xf32>, %y: tensor<64xf32>) -> (tensor<2x16xf32>, tensor<4x16xf32>) {
  %a = partita.reshape %x : tensor<32xf32> -> tensor<2x16xf32>
  %b = partita.reshape %y : tensor<64xf32> -> tensor<4x16xf32>
  return %a, %b : tensor<2x16xf32>, tensor<4x16xf32>
}

// -----

// A manual computation names its axes as written: nothing is split.
// CHECK: partita.mesh @mesh = <["model"=4]>
// CHECK-NOT: model:(
partita.mesh @mesh = <["model"=4]>
func.func @manual(%x: tensor<16xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}]>}) -> tensor<2x8xf32> {
  %m = partita.manual_computation(%x) in_shardings = [<@mesh, [{"model"}]>] out_shardings = [<@mesh, [{"model"}]>] manual_axes = ["model"] (%b: tensor<4xf32>) {
    partita.yield %b : tensor<4xf32>
  } : (tensor<16xf32>) -> tensor<16xf32>
  %r = partita.reshape %m : tensor<16xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

//--- join.mlir
// Parts that always appear together, in order, become the axis again.
// CHECK: partita.mesh @mesh = <["data"=2, "model"=4]>
// CHECK-NOT: split_axes
// CHECK-LABEL: func.func @together
// CHECK-SAME: #partita.sharding<@mesh, [{"data"}, {"model"}]>
// CHECK: partita.all_reduce sum %{{.*}} on @mesh axes = ["data", "model"]
partita.mesh @mesh = <["data"=2, "model:(1)2"=2, "model:(2)2"=2]> {partita.split_axes = ["model"]}
func.func @together(%x: tensor<2x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model:(1)2", "model:(2)2"}]>}) -> tensor<2x4xf32> {
  %r = partita.all_reduce sum %x on @mesh axes = ["data", "model:(1)2", "model:(2)2"] : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A part used alone (a gather over the minor part only) keeps the sub-axes
// everywhere.
// CHECK: partita.mesh @mesh = <["data"=2, "model:(1)2"=2, "model:(2)2"=2]> {partita.split_axes = ["model"]}
// CHECK: #partita.sharding<@mesh, [{"data"}, {"model:(1)2", "model:(2)2"}]>
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["model:(2)2"] dim = 1
partita.mesh @mesh = <["data"=2, "model:(1)2"=2, "model:(2)2"=2]> {partita.split_axes = ["model"]}
func.func @alone(%x: tensor<2x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model:(1)2", "model:(2)2"}]>}) -> tensor<2x8xf32> {
  %g = partita.all_gather %x on @mesh axes = ["model:(2)2"] dim = 1 : tensor<2x4xf32> -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// Axes a user named in Shardy's spelling are the user's: without the mark
// of partita-split-axes nothing is joined.
// CHECK: partita.mesh @mesh = <["x:(1)2"=2, "x:(2)2"=2]>
// CHECK-LABEL: func.func @users
// CHECK-SAME: {"x:(1)2", "x:(2)2"}
partita.mesh @mesh = <["x:(1)2"=2, "x:(2)2"=2]>
func.func @users(%x: tensor<2x4xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x:(1)2", "x:(2)2"}]>}) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

//--- gqa.mlir
// Grouped-query attention's keys: 2 KV heads of 8 from a projection split
// over 4 devices. The KV heads keep the major part of "model" and only the
// minor part is gathered (a quarter of the bytes of gathering the whole
// projection); the query heads take both parts.
// CHECK: partita.mesh @mesh = <["model:(1)2"=2, "model:(2)2"=2]> {partita.split_axes = ["model"]}
// CHECK-LABEL: func.func @scores
// EXEC: check passed: cpu:4 matches cpu:1
// CHECK: partita.all_gather %{{.*}} on @mesh axes = ["model:(2)2"] dim = 1 {{.*}} : tensor<8x4xf32> -> tensor<8x8xf32>
// CHECK-NOT: partita.all_gather
// CHECK: partita.einsum
// CHECK: return
partita.mesh @mesh = <["model"=4]>
func.func @scores(%h: tensor<8x32xf32>, %wq: tensor<32x32xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}, %wk: tensor<32x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}) -> tensor<2x2x8x8xf32> {
  %q = partita.einsum "sd,dh->sh" %h, %wq : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %k = partita.einsum "sd,dh->sh" %h, %wk : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %qh = partita.reshape %q : tensor<8x32xf32> -> tensor<8x2x2x8xf32>
  %kh = partita.reshape %k : tensor<8x16xf32> -> tensor<8x2x8xf32>
  %s = partita.einsum "sgre,tge->grst" %qh, %kh : (tensor<8x2x2x8xf32>, tensor<8x2x8xf32>) -> tensor<2x2x8x8xf32>
  return %s : tensor<2x2x8x8xf32>
}
