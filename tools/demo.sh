#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, and compile
# an example model (verified and printed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
build/bin/partita compile docs/examples/mlp.mlir
