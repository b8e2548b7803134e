#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, partition a
# Megatron transformer layer (printing its report), run it on 8 emulated CPU
# devices and check it against the unpartitioned program, and explain the
# Megatron MLP's shardings.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
build/bin/partita compile docs/examples/transformer-layer.mlir --report /dev/stdout -o /dev/null
build/bin/partita run docs/examples/transformer-layer.mlir --devices cpu:8 --check
build/bin/partita explain docs/examples/megatron-mlp.mlir --value mlp.gelu
build/bin/partita show docs/examples/megatron-mlp.mlir --value mlp.gelu
