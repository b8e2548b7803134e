// RUN: partita-opt %s --split-input-file --partita-propagate --verify-diagnostics
// RUN: not partita-opt %s --split-input-file --partita-propagate="strict=true" 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: not partita-opt %s --split-input-file --partita-propagate="interconnect=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not partita-opt %s --split-input-file --partita-propagate="interconnect=%S/Inputs/bad-field.json" 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not partita-opt %s --split-input-file --partita-propagate="interconnect=%S/Inputs/bad-bandwidth.json" 2>&1 | FileCheck %s --check-prefix=BANDWIDTH

// MISSING: error: cannot read interconnect spec '{{.*}}missing.json': No such file or directory
// FIELD: error: {{.*}}bad-field.json: axes.data: unknown field 'bandwith_GBps'; expected bandwidth_GBps or latency_us
// BANDWIDTH: error: {{.*}}bad-bandwidth.json: axes.data.bandwidth_GBps must be a number of GB/s in [1e-6, 1e5]

// Two closed constraints on one value that disagree: an error naming both.
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @two_constraints(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = partita.sharding_constraint %x <@mesh, [{"data"}, {}]> : tensor<8x8xf32> loc("first")
  // expected-error @+1 {{sharding_constraint #partita.sharding<@mesh, [{"model"}, {}]> disagrees with the constraint #partita.sharding<@mesh, [{"data"}, {}]> at first on the same value}}
  %b = partita.sharding_constraint %x <@mesh, [{"model"}, {}]> : tensor<8x8xf32>
  return %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A value's own closed annotation and a constraint on it must agree.
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @annotation_and_constraint(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = partita.exp %x {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} : tensor<8x8xf32> loc("annotated")
  // expected-error @+1 {{sharding_constraint #partita.sharding<@mesh, [{}, {"data"}]> disagrees with the annotation #partita.sharding<@mesh, [{}, {"model"}]> at annotated on the same value}}
  %c = partita.sharding_constraint %e <@mesh, [{}, {"data"}]> : tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

// Open dimensions do not disagree: both constraints hold.
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @open_constraints_agree(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = partita.sharding_constraint %x <@mesh, [{"data"}, {?}]> : tensor<8x8xf32>
  %b = partita.sharding_constraint %x <@mesh, [{"data"}, {"model"}]> : tensor<8x8xf32>
  return %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Propagation works on one mesh at a time.
partita.mesh @a = <["x"=2]>
partita.mesh @b = <["y"=2]>
// expected-error @+1 {{propagation needs every sharding on one mesh; this one uses @b but others use @a}}
func.func @two_meshes(%x: tensor<8xf32> {partita.sharding = #partita.sharding<@a, [{"x"}]>},
                      %y: tensor<8xf32> {partita.sharding = #partita.sharding<@b, [{"y"}]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

// An op without a sharding rule leaves its results replicated: a warning,
// and with strict=true an error.
// STRICT: error: 'partita.all_reduce' has no sharding rule; its results would be replicated (--strict)
partita.mesh @mesh = <["data"=2]>
func.func @no_rule(%x: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<8xf32> {
  // expected-warning @+1 {{'partita.all_reduce' has no sharding rule; its results are left replicated}}
  %r = partita.all_reduce sum %x on @mesh axes = ["data"] : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// An annotated sharded tensor that an op needs whole is gathered: a warning
// (an error with strict=true).
// STRICT: error: 'argument 0 of @gathered' is annotated as sharded ([{"data"}]), but 'partita.cumsum' needs it whole: it will be all-gathered (--strict)
partita.mesh @mesh = <["data"=2]>
func.func @gathered(%x: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<8xf32> {
  // expected-warning @+1 {{'argument 0 of @gathered' is annotated as sharded ([{"data"}]), but 'partita.cumsum' needs it whole: it will be all-gathered}}
  %c = partita.cumsum %x dim = 0 : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// Each tensor is warned about once, at its first use that gathers it; model
// state (role param, grad, opt_state) is sharded to be gathered at its uses
// (FSDP, ZeRO): no warning, even with strict=true.
partita.mesh @mesh = <["data"=2]>
func.func @gathered_twice(
    %x: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>},
    %w: tensor<8xf32> {partita.role = #partita.role<param>,
                       partita.sharding = #partita.sharding<@mesh, [{"data"}]>})
    -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-warning @+1 {{'argument 0 of @gathered_twice' is annotated as sharded ([{"data"}]), but 'partita.cumsum' needs it whole: it will be all-gathered}}
  %c = partita.cumsum %x dim = 0 : tensor<8xf32>
  %d = partita.cumsum %x dim = 0 : tensor<8xf32>
  %e = partita.cumsum %w dim = 0 : tensor<8xf32>
  %f = partita.add %c, %d : tensor<8xf32>
  return %f, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// Padding: a sharding that does not divide a dimension is padded; where the
// padding is more than max-padding (default 0.25) of the padded dimension it
// is a warning (an error with strict=true). 5 over 4 pads to 8 (37.5%).
// STRICT: error: dimension 0 of size 5 of 'partita.exp at {{.*}}' is split 4 ways and will be padded to 8 (37.5% padding, above --max-padding 0.25) (--strict)
partita.mesh @mesh = <["data"=4]>
func.func @uneven(%x: tensor<5xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<5xf32> {
  // expected-warning-re @+1 {{dimension 0 of size 5 of 'partita.exp at {{.*}}propagate-errors.mlir:{{[0-9]+}}:8' is split 4 ways and will be padded to 8 (37.5% padding, above --max-padding 0.25)}}
  %e = partita.exp %x : tensor<5xf32>
  return %e : tensor<5xf32>
}

// -----

// 7 over 2 pads to 8 (12.5%): no diagnostic.
partita.mesh @mesh = <["data"=2]>
func.func @little_padding(%x: tensor<7xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<7xf32> {
  %e = partita.exp %x : tensor<7xf32>
  return %e : tensor<7xf32>
}
