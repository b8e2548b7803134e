// RUN: split-file %s %t
// RUN: partita-opt %t/default.mlir --split-input-file --verify-diagnostics --allow-unregistered-dialect --partita-train-step -o /dev/null
// RUN: not partita-opt %t/optimizer.mlir --partita-train-step="optimizer=adam" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: partita-opt %t/mixed.mlir --verify-diagnostics --partita-train-step="mixed-precision" -o /dev/null
// RUN: partita-opt %t/micro-zero.mlir --verify-diagnostics --partita-train-step="micro-batches=0" -o /dev/null
// RUN: partita-opt %t/micro-no-batch.mlir --verify-diagnostics --partita-train-step="micro-batches=2" -o /dev/null
// RUN: not partita-opt %t/remat.mlir --partita-train-step="remat=often" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMAT

//--- default.mlir
// The loss is the module's only public function with a body: two are ambiguous.
// expected-error @+1 {{partita-train-step needs exactly one public function with a body (the loss); this module has 2}}
module {
  func.func @first(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
    %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @second(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
    %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Nothing to train without an argument with role param.
// expected-error @+1 {{@no_params has no argument with role param to train}}
func.func @no_params(%x: tensor<4xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %l = partita.reduce sum %x dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The loss comes first and is a scalar float.
// expected-error @+1 {{@not_scalar must return a scalar float loss first}}
func.func @not_scalar(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// A strided slice has no gradient rule; the error names the op and its location.
// expected-error-re @+1 {{partita.slice at {{.*}}default.mlir:{{[0-9]+}}:8: no gradient rule for a strided slice}}
func.func @strided(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %s = partita.slice %w start = [0] limit = [4] stride = [2] : tensor<4xf32> -> tensor<2xf32>
  %l = partita.reduce sum %s dims = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op the gradient table does not know keeps the sweep's error for it.
// expected-error-re @+1 {{test.opaque at {{.*}}default.mlir:{{[0-9]+}}:8: no gradient rule for 'test.opaque'}}
func.func @unknown_op(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %o = "test.opaque"(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %l = partita.reduce sum %o dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Collectives are differentiated only inside manual computations: train before partitioning.
partita.mesh @mesh = <["data"=2]>
// expected-error-re @+1 {{partita.all_reduce at {{.*}}default.mlir:{{[0-9]+}}:8: collectives outside manual computations have no gradient rule: differentiate before partitioning}}
func.func @collective(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %r = partita.all_reduce sum %w on @mesh axes = ["data"] : tensor<4xf32>
  %l = partita.reduce sum %r dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- optimizer.mlir
// Only adamw and sgd are optimizers: anything else is refused when the options are parsed.
// OPTIMIZER: for the --optimizer option: Cannot find option named 'adam'!
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- mixed.mlir
// Mixed precision keeps f32 masters of bf16 parameters: an f32 parameter is an error.
// expected-error @+1 {{mixed precision needs bf16 parameters; argument 0 of @loss is not bf16}}
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- micro-zero.mlir
// At least one micro-batch.
// expected-error @+1 {{the number of micro-batches must be at least 1}}
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- micro-no-batch.mlir
// Micro-batches are slices along a 'batch' logical axis: without one there is nothing to split.
// expected-error @+1 {{gradient accumulation needs inputs with a 'batch' logical axis to split into micro-batches}}
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}, %x: tensor<4xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %p = partita.mul %w, %x : tensor<4xf32>
  %l = partita.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- remat.mlir
// Activation checkpointing is none, per-layer or full: anything else is refused when the options are parsed.
// REMAT: for the --remat option: Cannot find option named 'often'!
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %l = partita.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
