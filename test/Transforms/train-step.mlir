// RUN: split-file %s %t
// RUN: partita-opt %t/sgd.mlir --split-input-file --partita-train-step="optimizer=sgd lr=0.1" | FileCheck %t/sgd.mlir --enable-var-scope
// RUN: partita-opt %t/adamw.mlir --partita-train-step | FileCheck %t/adamw.mlir --enable-var-scope
// RUN: partita-opt %t/mixed.mlir --partita-train-step="optimizer=sgd lr=0.5 mixed-precision" | FileCheck %t/mixed.mlir --enable-var-scope
// RUN: partita-opt %t/micro.mlir --partita-train-step="optimizer=sgd lr=0.1 micro-batches=2" | FileCheck %t/micro.mlir --enable-var-scope
// RUN: partita-opt %t/remat.mlir --partita-train-step="optimizer=sgd lr=0.1 remat=full" | FileCheck %t/remat.mlir --enable-var-scope
// RUN: partita-opt %t/clip.mlir --partita-train-step="optimizer=sgd lr=0.1 clip-norm=2.0" | FileCheck %t/clip.mlir --enable-var-scope

//--- sgd.mlir
// SGD with a constant rate: (param, grad buffer, momentum, input) -> (loss, new param, gradient, new momentum); the new values alias their arguments, and the loss function is gone.
// CHECK-NOT: func.func @loss(
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<param>},
// CHECK-SAME: %{{.*}}: tensor<4xf32> {partita.donated, partita.role = #partita.role<grad>},
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<opt_state>},
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<4xf32> {partita.role = #partita.role<input>})
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {partita.aliases = 0 : i64}, tensor<4xf32> {partita.aliases = 1 : i64}, tensor<4xf32> {partita.aliases = 2 : i64})
// CHECK: %[[LOSS:.*]] = partita.reduce sum
// CHECK: %[[G:.*]] = partita.mul %{{.*}}, %[[X]]
// CHECK: %[[LR:.*]] = partita.constant dense<1.000000e-01> : tensor<4xf32>
// CHECK: %[[MU:.*]] = partita.constant dense<0.899999976> : tensor<4xf32>
// CHECK: %[[DECAYED:.*]] = partita.mul %[[MU]], %[[M]]
// CHECK: %[[NEWM:.*]] = partita.add %[[DECAYED]], %[[G]]
// CHECK: %[[STEP:.*]] = partita.mul %[[LR]], %[[NEWM]]
// CHECK: %[[NEWW:.*]] = partita.sub %[[W]], %[[STEP]]
// CHECK: return %[[LOSS]], %[[NEWW]], %[[G]], %[[NEWM]]
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}, %x: tensor<4xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %p = partita.mul %w, %x : tensor<4xf32>
  %l = partita.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Parameters with logical axes: the gradient buffer and the state share them and drop the explicit sharding, which the new parameter keeps; the gradient is constrained for its buffer, then for the state.
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4x2xf32> {partita.donated, partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
// CHECK-SAME: %{{.*}}: tensor<4x2xf32> {partita.donated, partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<grad>},
// CHECK-SAME: %{{.*}}: tensor<4x2xf32> {partita.donated, partita.logical_axes = ["embed", "mlp"], partita.role = #partita.role<opt_state>},
// CHECK-SAME: -> (tensor<f32>, tensor<4x2xf32> {partita.aliases = 0 : i64, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}, tensor<4x2xf32> {partita.aliases = 1 : i64}, tensor<4x2xf32> {partita.aliases = 2 : i64})
// CHECK: %[[G:.*]] = partita.einsum "bf,bd->df"
// CHECK: %[[BUFFER:.*]] = partita.logical_constraint %[[G]] ["embed", "mlp"] {role = "grad"}
// CHECK: %[[STATE:.*]] = partita.logical_constraint %[[BUFFER]] ["embed", "mlp"] {role = "opt_state"}
// CHECK: partita.add %{{.*}}, %[[STATE]]
// CHECK: return %{{.*}}, %{{.*}}, %[[BUFFER]], %{{.*}}
partita.mesh @mesh = <["data"=2]>
func.func @loss(%w: tensor<4x2xf32> {partita.role = #partita.role<param>, partita.logical_axes = ["embed", "mlp"], partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                %x: tensor<8x4xf32> {partita.role = #partita.role<input>, partita.logical_axes = ["batch", "embed"]}) -> tensor<f32> {
  %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %l = partita.reduce sum %p dims = [0, 1] : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- adamw.mlir
// AdamW (the default) keeps two moments and takes the step number and the learning rate as inputs; the bias correction uses step + 1 (on scalars) and the weight decay the parameter.
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<param>},
// CHECK-SAME: %{{.*}}: tensor<4xf32> {partita.donated, partita.role = #partita.role<grad>},
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<opt_state>},
// CHECK-SAME: %[[V:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<opt_state>},
// CHECK-SAME: %{{.*}}: tensor<4xf32> {partita.role = #partita.role<input>},
// CHECK-SAME: %[[STEP:arg[0-9]+]]: tensor<i32> {partita.role = #partita.role<input>},
// CHECK-SAME: %[[LR:arg[0-9]+]]: tensor<f32> {partita.role = #partita.role<input>})
// The f32 learning rate is broadcast as it is (no identity convert).
// CHECK-NOT: partita.convert %[[LR]]
// CHECK: %[[RATE:.*]] = partita.broadcast %[[LR]] dims = [] : tensor<f32> -> tensor<4xf32>
// CHECK: %[[NEWM:.*]] = partita.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: partita.mul %{{.*}}, %[[V]]
// CHECK: %[[NEWV:.*]] = partita.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: %[[ONE:.*]] = partita.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[T0:.*]] = partita.convert %[[STEP]] : tensor<i32> -> tensor<f32>
// CHECK: %[[T:.*]] = partita.add %[[T0]], %[[ONE]]
// The bias corrections on scalars (once per step, for every parameter), then broadcast.
// CHECK: %[[POW1:.*]] = partita.pow %{{.*}}, %[[T]] : tensor<f32>
// CHECK: %[[C1:.*]] = partita.sub %{{.*}}, %[[POW1]] : tensor<f32>
// CHECK: %[[POW2:.*]] = partita.pow %{{.*}}, %[[T]] : tensor<f32>
// CHECK: %[[C2:.*]] = partita.sub %{{.*}}, %[[POW2]] : tensor<f32>
// CHECK: partita.broadcast %[[C1]] dims = [] : tensor<f32> -> tensor<4xf32>
// CHECK: partita.broadcast %[[C2]] dims = [] : tensor<f32> -> tensor<4xf32>
// CHECK: %[[DECAY:.*]] = partita.mul %{{.*}}, %[[W]]
// CHECK: %[[UPDATE:.*]] = partita.add %{{.*}}, %[[DECAY]]
// CHECK: %[[SCALED:.*]] = partita.mul %[[RATE]], %[[UPDATE]]
// CHECK: %[[NEWW:.*]] = partita.sub %[[W]], %[[SCALED]]
// CHECK: return %{{.*}}, %[[NEWW]], %{{.*}}, %[[NEWM]], %[[NEWV]]
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}, %x: tensor<4xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %p = partita.mul %w, %x : tensor<4xf32>
  %l = partita.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- mixed.mlir
// Mixed precision: bf16 parameter and gradient buffer, f32 master weights first in the state; the update applies to the master and the new parameter is its bf16 rounding. The step takes the step number (also with SGD): at step 0 the master weights start from the parameter, not from the state's zeros.
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4xbf16> {partita.donated, partita.role = #partita.role<param>},
// CHECK-SAME: %{{.*}}: tensor<4xbf16> {partita.donated, partita.role = #partita.role<grad>},
// CHECK-SAME: %[[MASTER:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<opt_state>},
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<opt_state>},
// CHECK-SAME: %{{.*}}: tensor<4xbf16> {partita.role = #partita.role<input>},
// CHECK-SAME: %[[STEPNO:arg[0-9]+]]: tensor<i32> {partita.role = #partita.role<input>})
// CHECK: partita.reduce sum
// CHECK: %[[G:.*]] = partita.mul %{{.*}}, %{{.*}} : tensor<4xbf16>
// CHECK: %[[ZERO:.*]] = partita.constant dense<0> : tensor<i32>
// CHECK: %[[FIRST:.*]] = partita.compare eq, %[[STEPNO]], %[[ZERO]]
// CHECK: %[[W32:.*]] = partita.convert %[[W]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: %[[FIRSTS:.*]] = partita.broadcast %[[FIRST]]
// CHECK: %[[START:.*]] = partita.select %[[FIRSTS]], %[[W32]], %[[MASTER]]
// CHECK: %[[G32:.*]] = partita.convert %[[G]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: partita.mul %{{.*}}, %[[M]]
// CHECK: %[[NEWM:.*]] = partita.add %{{.*}}, %[[G32]]
// CHECK: %[[NEWMASTER:.*]] = partita.sub %[[START]], %{{.*}} : tensor<4xf32>
// CHECK: %[[NEWW:.*]] = partita.convert %[[NEWMASTER]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK: return %{{.*}}, %[[NEWW]], %[[G]], %[[NEWMASTER]], %[[NEWM]]
func.func @loss(%w: tensor<4xbf16> {partita.role = #partita.role<param>}, %x: tensor<4xbf16> {partita.role = #partita.role<input>}) -> tensor<bf16> {
  %p = partita.mul %w, %x : tensor<4xbf16>
  %l = partita.reduce sum %p dims = [0] : tensor<4xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}

//--- micro.mlir
// Gradient accumulation: the batch input is twice as large, a loop slices micro-batch j as examples j, j + 2, ... and sums loss and gradients, which are averaged after it.
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<16x4xf32> {partita.logical_axes = ["batch", "embed"], partita.role = #partita.role<input>})
// CHECK: %[[SUMS:.*]]:2 = partita.loop 2 times (%[[J:arg[0-9]+]]) iter_args(%[[LOSSSUM:arg[0-9]+]] = %{{.*}}, %[[GSUM:arg[0-9]+]] = %{{.*}})
// CHECK: %[[VIEW:.*]] = partita.reshape %[[X]] : tensor<16x4xf32> -> tensor<8x2x4xf32>
// CHECK: %[[SLICE:.*]] = partita.dynamic_slice %[[VIEW]][%{{.*}}, %[[J]], %{{.*}}] sizes = [8, 1, 4]
// CHECK: partita.reshape %[[SLICE]] : tensor<8x1x4xf32> -> tensor<8x4xf32>
// CHECK: %[[NEXTLOSS:.*]] = partita.add %[[LOSSSUM]], %{{.*}} : tensor<f32>
// CHECK: %[[NEXTG:.*]] = partita.add %[[GSUM]], %{{.*}} : tensor<4x2xf32>
// CHECK: partita.yield %[[NEXTLOSS]], %[[NEXTG]]
// CHECK: %[[TWO:.*]] = partita.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[LOSS:.*]] = partita.div %[[SUMS]]#0, %[[TWO]]
// CHECK: %[[TWOS:.*]] = partita.constant dense<2.000000e+00> : tensor<4x2xf32>
// CHECK: %[[G:.*]] = partita.div %[[SUMS]]#1, %[[TWOS]]
// CHECK: return %[[LOSS]], %{{.*}}, %[[G]], %{{.*}}
func.func @loss(%w: tensor<4x2xf32> {partita.role = #partita.role<param>},
                %x: tensor<8x4xf32> {partita.role = #partita.role<input>, partita.logical_axes = ["batch", "embed"]}) -> tensor<f32> {
  %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %l = partita.reduce sum %p dims = [0, 1] : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- remat.mlir
// Full rematerialization: the backward recomputes the forward from its inputs behind an optimization barrier. Recomputed values the gradient does not read (here the product itself: d/dw of sum(w x) needs only x) are erased with every other dead op of the sweep.
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4xf32> {partita.donated, partita.role = #partita.role<param>},
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<4xf32> {partita.role = #partita.role<input>})
// CHECK: %[[LOSS:.*]] = partita.reduce sum
// CHECK: %[[KEPT:.*]]:2 = partita.optimization_barrier %[[W]], %[[X]]
// CHECK-NOT: partita.mul %[[KEPT]]#0, %[[KEPT]]#1
// CHECK: %[[G:.*]] = partita.mul %{{.*}}, %[[KEPT]]#1
// CHECK: return %[[LOSS]], %{{.*}}, %[[G]], %{{.*}}
func.func @loss(%w: tensor<4xf32> {partita.role = #partita.role<param>}, %x: tensor<4xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %p = partita.mul %w, %x : tensor<4xf32>
  %l = partita.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

//--- clip.mlir
// Clipping by global norm: the squared gradients of both parameters summed into one norm, the scale limit / max(norm, limit) applied to each gradient before the update (and returned clipped).
// CHECK-LABEL: func.func @loss_train_step(
// CHECK: %[[SQA:.*]] = partita.mul %[[GA:.*]], %[[GA]] : tensor<4xf32>
// CHECK: %[[SUMA:.*]] = partita.reduce sum %[[SQA]] dims = [0] : tensor<4xf32> -> tensor<f32>
// CHECK: %[[SQB:.*]] = partita.mul %[[GB:.*]], %[[GB]] : tensor<3xf32>
// CHECK: %[[SUMB:.*]] = partita.reduce sum %[[SQB]] dims = [0] : tensor<3xf32> -> tensor<f32>
// CHECK: %[[TOTAL:.*]] = partita.add %[[SUMA]], %[[SUMB]] : tensor<f32>
// CHECK: %[[NORM:.*]] = partita.sqrt %[[TOTAL]] : tensor<f32>
// CHECK: %[[LIMIT:.*]] = partita.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[BIGGER:.*]] = partita.max %[[NORM]], %[[LIMIT]] : tensor<f32>
// CHECK: %[[SCALE:.*]] = partita.div %[[LIMIT]], %[[BIGGER]] : tensor<f32>
// CHECK: %[[SA:.*]] = partita.broadcast %[[SCALE]] dims = [] : tensor<f32> -> tensor<4xf32>
// CHECK: %[[CLIPPEDA:.*]] = partita.mul %[[GA]], %[[SA]] : tensor<4xf32>
// CHECK: %[[SB:.*]] = partita.broadcast %[[SCALE]] dims = [] : tensor<f32> -> tensor<3xf32>
// CHECK: %[[CLIPPEDB:.*]] = partita.mul %[[GB]], %[[SB]] : tensor<3xf32>
// CHECK: return {{.*}}, %[[CLIPPEDA]], %[[CLIPPEDB]],
func.func @loss(%a: tensor<4xf32> {partita.role = #partita.role<param>}, %b: tensor<3xf32> {partita.role = #partita.role<param>}, %x: tensor<4xf32> {partita.role = #partita.role<input>}, %y: tensor<3xf32> {partita.role = #partita.role<input>}) -> tensor<f32> {
  %p = partita.mul %a, %x : tensor<4xf32>
  %q = partita.mul %b, %y : tensor<3xf32>
  %s = partita.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  %t = partita.reduce sum %q dims = [0] : tensor<3xf32> -> tensor<f32>
  %l = partita.add %s, %t : tensor<f32>
  return %l : tensor<f32>
}
