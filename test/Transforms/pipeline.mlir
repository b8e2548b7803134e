// Every row of PipelineOptions.def is an option of --partita-pipeline: the
// train step's optimizer, learning rate, micro-batches and recomputation
// reach partita-train-step, and misspelt choices are errors.

// RUN: partita gen mlp | partita-opt --partita-pipeline="stage=verified train=sgd lr=0.1 micro-batches=2 remat=per-layer" | FileCheck %s --check-prefix=STEP
// STEP: func.func @mlp_train_step(
// STEP-SAME: partita.role = #partita.role<opt_state>
// STEP: partita.loop 2 times
// STEP: partita.optimization_barrier

// Without recomputation no barriers; without train=, no train step.
// RUN: partita gen mlp | partita-opt --partita-pipeline="stage=verified train=sgd lr=0.1" | FileCheck %s --check-prefix=NOREMAT
// NOREMAT: func.func @mlp_train_step(
// NOREMAT-NOT: partita.optimization_barrier
// RUN: partita gen mlp | partita-opt --partita-pipeline="stage=verified" | FileCheck %s --check-prefix=NOTRAIN
// NOTRAIN-NOT: train_step

// RUN: not partita-opt %s --partita-pipeline="stage=partitoned" 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: for the --stage option: Cannot find option named 'partitoned'!
// RUN: not partita-opt %s --partita-pipeline="train=sgdx" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// OPTIMIZER: for the --train option: Cannot find option named 'sgdx'!
// RUN: not partita-opt %s --partita-pipeline="remat=half" 2>&1 | FileCheck %s --check-prefix=REMAT
// REMAT: for the --remat option: Cannot find option named 'half'!

partita.mesh @mesh = <["data"=2]>
