// RUN: split-file %s %t
// RUN: partita-opt %t/dp-tp.mlir --split-input-file --partita-apply-rules="rules=dp+tp" | FileCheck %t/dp-tp.mlir --enable-var-scope
// RUN: partita-opt %t/zero1.mlir --partita-apply-rules="rules=zero1" | FileCheck %t/zero1.mlir --enable-var-scope
// RUN: partita-opt %t/tp-sp.mlir --partita-apply-rules="rules=tp+sp" | FileCheck %t/tp-sp.mlir --enable-var-scope
// RUN: partita-opt %t/file.mlir --partita-apply-rules="rules=%t/rules.json" | FileCheck %t/file.mlir --enable-var-scope
// RUN: partita-opt %t/none.mlir --partita-apply-rules | FileCheck %t/none.mlir --enable-var-scope

//--- dp-tp.mlir
// An input's batch dimension goes over data; a dimension no rule maps stays whole.
// CHECK-LABEL: func.func @input_batch(
// CHECK-SAME: {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @input_batch(%x: tensor<8x64xf32> {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>}) -> tensor<8x64xf32> {
  return %x : tensor<8x64xf32>
}

// -----

// Unqualified rules apply to every argument role: the tensor-parallel axes of a parameter go over model.
// CHECK-LABEL: func.func @param_by_role(
// CHECK-SAME: {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}
// CHECK-SAME: {partita.logical_axes = ["vocab", "embed"], partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>}
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @param_by_role(%w: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>},
                         %e: tensor<128x64xf32> {partita.logical_axes = ["vocab", "embed"], partita.role = #partita.role<param>}) -> tensor<64x256xf32> {
  return %w : tensor<64x256xf32>
}

// -----

// A named rule splits a dimension it does not divide (a vocabulary of 50257
// over 4 devices: the partitioner pads it to 50260).
// CHECK-LABEL: func.func @uneven_vocab(
// CHECK-SAME: {partita.logical_axes = ["vocab", "embed"], partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>}
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @uneven_vocab(%e: tensor<50257x64xf32> {partita.logical_axes = ["vocab", "embed"], partita.role = #partita.role<param>}) -> tensor<50257x64xf32> {
  return %e : tensor<50257x64xf32>
}

// -----

// An argument that already has a sharding keeps it.
// CHECK-LABEL: func.func @explicit_kept(
// CHECK-SAME: partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-NOT: #partita.sharding<@mesh, [{}, {"model"}]>
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @explicit_kept(%w: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) -> tensor<64x256xf32> {
  return %w : tensor<64x256xf32>
}

// -----

// A result holding an argument's new value takes that argument's layout unless it has its own.
// CHECK-LABEL: func.func @alias_result(
// CHECK-SAME: -> (tensor<64x256xf32> {partita.aliases = 0 : i64, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}, tensor<64x256xf32> {partita.aliases = 0 : i64, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @alias_result(%w: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>})
    -> (tensor<64x256xf32> {partita.aliases = 0 : i64}, tensor<64x256xf32> {partita.aliases = 0 : i64, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  return %w, %w : tensor<64x256xf32>, tensor<64x256xf32>
}

// -----

// An activation constraint no activation rule maps is removed: its users read its input.
// CHECK-LABEL: func.func @activation_dropped(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x64xf32>
// CHECK-NOT: partita.logical_constraint
// CHECK-NOT: partita.sharding_constraint
// CHECK: %[[Y:.*]] = partita.exp %[[X]]
// CHECK: return %[[Y]]
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @activation_dropped(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %c = partita.logical_constraint %x ["batch", "embed"] : tensor<8x64xf32>
  %y = partita.exp %c : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A constraint naming the param role uses that role's rules and becomes a sharding constraint.
// CHECK-LABEL: func.func @param_constraint(
// CHECK-SAME: %[[S:arg[0-9]+]]: tensor<64x256xf32>
// CHECK: %[[C:.*]] = partita.sharding_constraint %[[S]] <@mesh, [{}, {"model"}]> : tensor<64x256xf32>
// CHECK: return %[[C]]
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @param_constraint(%s: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %c = partita.logical_constraint %s ["embed", "mlp"] {role = "param"} : tensor<64x256xf32>
  return %c : tensor<64x256xf32>
}

// -----

// A gradient's constraint becomes a reshard (its producers keep their layout), even to a whole layout.
// CHECK-LABEL: func.func @grad_reshard(
// CHECK-SAME: %[[G:arg[0-9]+]]: tensor<64x256xf32>
// CHECK: %[[SPLIT:.*]] = partita.reshard %[[G]] <@mesh, [{}, {"model"}]> : tensor<64x256xf32>
// CHECK: %[[WHOLE:.*]] = partita.reshard %[[G]] <@mesh, [{}, {}]> : tensor<64x256xf32>
// CHECK: return %[[SPLIT]], %[[WHOLE]]
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @grad_reshard(%g: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %split = partita.logical_constraint %g ["embed", "mlp"] {role = "grad"} : tensor<64x256xf32>
  %whole = partita.logical_constraint %g ["embed", "batch"] {role = "grad"} : tensor<64x256xf32>
  return %split, %whole : tensor<64x256xf32>, tensor<64x256xf32>
}

//--- zero1.mlir
// ZeRO-1: the parameter stays whole, its gradient buffer is left partial over data, and its optimizer state is split over data along embed, or else along its first dimension.
// CHECK-LABEL: func.func @zero1(
// CHECK-SAME: partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: partita.role = #partita.role<grad>, partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"data"}>}
// CHECK-SAME: partita.role = #partita.role<opt_state>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}
// CHECK-SAME: partita.role = #partita.role<opt_state>, partita.sharding = #partita.sharding<@mesh, [{"data"}]>}
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @zero1(%w: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>},
                 %g: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<grad>},
                 %m: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<opt_state>},
                 %b: tensor<256xf32> {partita.logical_axes = ["mlp"], partita.role = #partita.role<opt_state>}) -> tensor<64x256xf32> {
  return %w : tensor<64x256xf32>
}

//--- tp-sp.mlir
// Sequence parallelism: rules qualified for activations turn a constraint into a sharding constraint.
// CHECK-LABEL: func.func @sequence_parallel(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x16x64xf32>
// CHECK: %[[C:.*]] = partita.sharding_constraint %[[X]] <@mesh, [{"data"}, {"model"}, {}]> : tensor<8x16x64xf32>
// CHECK: return %[[C]]
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @sequence_parallel(%x: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
  %c = partita.logical_constraint %x ["batch", "seq", "embed"] : tensor<8x16x64xf32>
  return %c : tensor<8x16x64xf32>
}

//--- rules.json
[
  {"logical": "batch", "mesh": ["data", "model"]},
  {"logical": "embed", "mesh": "model", "role": "param"}
]

//--- file.mlir
// A JSON rules table: a rule with a list of mesh axes splits over all of them; a rule for one role leaves the others whole.
// CHECK-LABEL: func.func @json_rules(
// CHECK-SAME: partita.role = #partita.role<input>, partita.sharding = #partita.sharding<@mesh, [{"data", "model"}, {}]>}
// CHECK-SAME: partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>}
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @json_rules(%x: tensor<8x64xf32> {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>},
                      %w: tensor<64x256xf32> {partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>}) -> tensor<8x64xf32> {
  return %x : tensor<8x64xf32>
}

//--- none.mlir
// Without rules the pass only removes logical constraints; arguments get no sharding.
// CHECK-LABEL: func.func @no_rules(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x64xf32> {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>})
// CHECK-NOT: partita.sharding
// CHECK-NOT: partita.logical_constraint
// CHECK: return %[[X]]
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @no_rules(%x: tensor<8x64xf32> {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>}) -> tensor<8x64xf32> {
  %c = partita.logical_constraint %x ["batch", "embed"] {role = "param"} : tensor<8x64xf32>
  return %c : tensor<8x64xf32>
}
