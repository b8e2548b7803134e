#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, partition a
# Megatron transformer layer (printing its report), run it on 8 emulated CPU
# devices and check it against the unpartitioned program, explain the
# Megatron MLP's shardings, and generate, partition and run a GPT.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
build/bin/partita compile docs/examples/transformer-layer.mlir --report /dev/stdout -o /dev/null
build/bin/partita run docs/examples/transformer-layer.mlir --devices cpu:8 --check
build/bin/partita explain docs/examples/megatron-mlp.mlir --value mlp.gelu
build/bin/partita show docs/examples/megatron-mlp.mlir --value mlp.gelu
# A generated GPT under data + tensor parallelism, run on 8 devices.
build/bin/partita gen gpt --layers 2 --mesh data=2,model=4 --rules dp+tp > /tmp/partita-gpt.mlir
build/bin/partita run /tmp/partita-gpt.mlir --devices cpu:8 --check
# Train it for 60 steps with data and tensor parallelism.
build/bin/partita train --model gpt --devices cpu:8 --mesh data=2,model=4 --rules dp+tp --steps 60 --lr 1e-2 --output /tmp/partita-train
