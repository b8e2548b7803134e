#!/usr/bin/env bash
# Partition time on the propagation benchmark's GPT graphs (12 to 96 layers)
# for 8 devices (data=2,model=4) and 64 devices (data=8,model=8).
#
# Propagates each graph once, then times partita-partition alone (MLIR's pass
# timing, median of RUNS runs) and prints ops/s, the ratio to 12 layers
# (linear = 8 at 96) and the number of collectives. Target: 96 layers under
# 1 s, linear in layers, about the same for 8 and 64 devices.
#
#   bash bench/partition.sh [build-dir]    (RUNS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${RUNS:-5}
OPT="$BUILD/bin/partita-opt"
[ -x "$OPT" ] || { echo "error: $OPT not found; build first (bash tools/build.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

printf "%-8s %-7s %7s %12s %12s %10s %12s\n" devices layers ops median_ms ops_per_s ratio_12 collectives
for mesh in '"data"=2, "model"=4' '"data"=8, "model"=8'; do
  devices=$(echo "$mesh" | awk -F'[=,]' '{print $2 * $4}')
  base=""
  for layers in 12 24 48 96; do
    python3 bench/gen_transformer.py --layers "$layers" --mesh "$mesh" > "$WORK/gpt.mlir"
    "$OPT" "$WORK/gpt.mlir" --partita-propagate -o "$WORK/propagated.mlir"
    ops=$(grep -c " = partita\." "$WORK/gpt.mlir")
    times=()
    for _ in $(seq "$RUNS"); do
      ms=$("$OPT" "$WORK/propagated.mlir" --partita-partition --mlir-timing \
             --mlir-timing-display=list -o "$WORK/partitioned.mlir" 2>&1 |
           awk '/PartitionPass/ {print $1 * 1000; exit}')
      times+=("$ms")
    done
    collectives=$(grep -c -E "partita\.(all_gather|all_reduce|reduce_scatter|all_to_all|collective_permute) " "$WORK/partitioned.mlir" || true)
    median=$(printf "%s\n" "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    [ -z "$base" ] && base=$median
    awk -v d="$devices" -v l="$layers" -v o="$ops" -v m="$median" -v b="$base" -v c="$collectives" \
      'BEGIN {printf "%-8d %-7d %7d %12.1f %12.0f %10.2f %12d\n", d, l, o, m, o / (m / 1000), m / b, c}'
  done
done
