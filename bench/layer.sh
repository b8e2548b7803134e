#!/usr/bin/env bash
# One transformer layer forward (docs/examples/transformer-layer.mlir,
# batch 8 x seq 128 x embed 512, 8 heads, MLP 2048, f32): the unpartitioned
# program on cpu:1 against the partitioned program on cpu:8 (data=2,
# model=4), both through `partita run` in the same run, alternating, RUNS
# times each (median of the run time `partita run` prints, which excludes
# compilation). On a machine with fewer cores than devices this measures the
# overhead of partitioning: 8 device threads share the cores, and the
# partitioned program adds collectives and smaller GEMMs.
#
#   bash bench/layer.sh [build-dir]    (RUNS=7 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${RUNS:-7}
PARTITA="$BUILD/bin/partita"
[ -x "$PARTITA" ] || { echo "error: $PARTITA not found; build first (bash tools/build.sh)" >&2; exit 1; }
MODEL=docs/examples/transformer-layer.mlir

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ms_of() { "$PARTITA" run "$MODEL" --devices "$1" | sed -n 's/^ran on cpu:[0-9]* in \([0-9.]*\) ms.*/\1/p'; }

one=(); eight=()
for _ in $(seq "$RUNS"); do
  one+=("$(ms_of cpu:1)")
  eight+=("$(ms_of cpu:8)")
done
m1=$(printf "%s\n" "${one[@]}" | median)
m8=$(printf "%s\n" "${eight[@]}" | median)
echo "# transformer layer forward, $(nproc) hardware threads, median of $RUNS runs"
printf "%-8s %12s\n" devices median_ms
printf "%-8s %12s\n" cpu:1 "$m1"
printf "%-8s %12s\n" cpu:8 "$m8"
awk -v a="$m1" -v b="$m8" 'BEGIN {printf "cpu:8 / cpu:1 time: %.2f\n", b / a}'
