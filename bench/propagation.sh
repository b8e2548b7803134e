#!/usr/bin/env bash
# Propagation time on generated GPT-style transformers (forward + loss,
# unrolled) of 12, 24, 48 and 96 layers on a data=2,model=4 mesh.
#
# Measures the partita-propagate pass alone (MLIR's pass timing), the median
# of RUNS runs, and prints ops/s and the ratio to 12 layers (linear = 8 at
# 96 layers). Target: 96 layers under 1 s.
#
#   bash bench/propagation.sh [build-dir]    (RUNS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${RUNS:-5}
OPT="$BUILD/bin/partita-opt"
[ -x "$OPT" ] || { echo "error: $OPT not found; build first (bash tools/build.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

printf "%-7s %7s %12s %12s %10s\n" layers ops "median_ms" "ops_per_s" "ratio_12"
base=""
for layers in 12 24 48 96; do
  python3 bench/gen_transformer.py --layers "$layers" > "$WORK/gpt$layers.mlir"
  ops=$(grep -c " = partita\." "$WORK/gpt$layers.mlir")
  times=()
  for _ in $(seq "$RUNS"); do
    ms=$("$OPT" "$WORK/gpt$layers.mlir" --partita-propagate --mlir-timing \
           --mlir-timing-display=list -o /dev/null 2>&1 |
         awk '/PropagatePass/ {print $1 * 1000; exit}')
    times+=("$ms")
  done
  median=$(printf "%s\n" "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  [ -z "$base" ] && base=$median
  awk -v l="$layers" -v o="$ops" -v m="$median" -v b="$base" \
    'BEGIN {printf "%-7d %7d %12.1f %12.0f %10.2f\n", l, o, m, o / (m / 1000), m / b}'
done
