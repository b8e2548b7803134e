#!/usr/bin/env bash
# Runs one JAX fixture (test/Conversion/StableHLOToPartita/<name>/, made by
# tools/export_jax.py): imports module.mlir, compiles and runs it on cpu:8
# with JAX's inputs, checks it against the unpartitioned program (--check)
# and against JAX's outputs (--expect).
#   tools/run-jax-fixture.sh DIR [partita run options...]
set -euo pipefail
dir=$1
shift
count=$(ls "$dir" | grep -c '^input_[0-9]*\.npy$')
inputs=""
for ((i = 0; i < count; i++)); do
  inputs+="${inputs:+,}$dir/input_$i.npy"
done
# The partita binary: $PARTITA, else the build tree's.
partita=${PARTITA:-$(dirname "$0")/../${PARTITA_BUILD_DIR:-build}/bin/partita}
exec "$partita" run "$dir/module.mlir" --devices cpu:8 --inputs "$inputs" --expect "$dir" --check "$@"
