#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, propagate
# the shardings of the Megatron MLP example and explain them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
build/bin/partita compile docs/examples/megatron-mlp.mlir --stage propagated
build/bin/partita explain docs/examples/megatron-mlp.mlir --value mlp.gelu
build/bin/partita show docs/examples/megatron-mlp.mlir --value mlp.gelu
