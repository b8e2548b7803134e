// RUN: split-file %s %t
// RUN: partita-opt %t/dp-tp.mlir --split-input-file --verify-diagnostics --partita-apply-rules="rules=dp+tp" -o /dev/null
// RUN: partita-opt %t/unknown.mlir --verify-diagnostics --partita-apply-rules="rules=nope" -o /dev/null
// RUN: partita-opt %t/bad-axis.mlir --verify-diagnostics --partita-apply-rules="rules=%t/bad-axis.json" -o /dev/null

//--- dp-tp.mlir
// Rules need exactly one mesh to name axes of: two is an error.
// expected-error @+1 {{logical axis rules need a module with exactly one partita.mesh; this one has 2}}
module {
  partita.mesh @a = <["data"=2]>
  partita.mesh @b = <["model"=2]>
}

// -----

// No mesh at all is an error too.
// expected-error @+1 {{logical axis rules need a module with exactly one partita.mesh; this one has 0}}
module {
  func.func @no_mesh(%x: tensor<8xf32> {partita.logical_axes = ["batch"]}) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

// A preset whose mesh axes the mesh lacks would replicate everything: an error, not a silent no-op.
// expected-error @+1 {{rules preset 'dp+tp' uses mesh axes the mesh (x) does not have (data, model): it would replicate everything}}
module {
  partita.mesh @mesh = <["x"=2]>
}

// -----

// A rule that would pad an argument's dimension by more than max-padding
// (default 0.25) is skipped with a warning at the argument.
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @uneven_argument(%x: tensor<8x64xf32> {partita.logical_axes = ["batch", "embed"]},
                           // expected-warning @+1 {{argument 1 of @uneven_argument: logical axis 'mlp' (size 5) over mesh axes model (4 devices) would be padded to 8, 38% padding, more than --max-padding allows: that rule is skipped}}
                           %w: tensor<64x5xf32> {partita.logical_axes = ["embed", "mlp"]}) -> tensor<8x64xf32> {
  return %x : tensor<8x64xf32>
}

// -----

// The same for a logical constraint, with the warning at the constraint.
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @uneven_constraint(%w: tensor<64x5xf32>) -> tensor<64x5xf32> {
  // expected-warning @+1 {{logical constraint: logical axis 'mlp' (size 5) over mesh axes model (4 devices) would be padded to 8, 38% padding, more than --max-padding allows: that rule is skipped}}
  %c = partita.logical_constraint %w ["embed", "mlp"] {role = "param"} : tensor<64x5xf32>
  return %c : tensor<64x5xf32>
}

//--- unknown.mlir
// A rules name that is neither a preset nor a file.
// expected-error @+1 {{'nope' is neither a rules preset (dp, zero1, zero2, fsdp, tp, dp+tp, fsdp+tp, tp+sp, cp, dp+cp, fsdp+cp, cp+tp, fsdp+cp+tp, ep) nor a readable rules file}}
module {
  partita.mesh @mesh = <["data"=2, "model"=4]>
}

//--- bad-axis.json
[{"logical": "embed", "mesh": "modle"}]

//--- bad-axis.mlir
// A rules file naming an axis the mesh lacks is an error naming the file, the rule and the axis.
// expected-error-re @+1 {{{{.*}}bad-axis.json: rule 0 (embed): the mesh has no axis 'modle' (axes: data, model)}}
module {
  partita.mesh @mesh = <["data"=2, "model"=4]>
}
