#!/usr/bin/env bash
# Compute at size: GPT-2 small's train step as one device of cpu:8 holds it
# (12 layers, d 768, 12 heads, seq 256, global batch 8, vocabulary 50,257;
# dp+tp on data=2,model=4, AdamW), each of its compute instructions run
# alone through the CPU runtime's kernels beside its peer in the same run
# (bench/compute.cpp): einsums against cblas_sgemm on the same shapes (goal
# >= 0.95 of OpenBLAS's speed), memory-bound instructions (fused chains,
# softmax's and the norms' reductions, ...) against memcpy of their bytes
# (goal >= 0.7 of the copy's bandwidth).
#
#   bash bench/compute.sh [--rules R] [--mesh M] [--repeats N] [--rows N]
set -euo pipefail
cd "$(dirname "$0")/.."
partita=build/bin/partita
bench=build/bin/partita-bench-compute
rules=dp+tp
mesh=data=2,model=4
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rules) rules=$2; shift 2 ;;
    --mesh) mesh=$2; shift 2 ;;
    --repeats|--rows) extra+=("$1" "$2"); shift 2 ;;
    *) echo "usage: bash bench/compute.sh [--rules R] [--mesh M] [--repeats N] [--rows N]" >&2; exit 1 ;;
  esac
done
for tool in "$partita" "$bench"; do
  if [ ! -x "$tool" ]; then
    echo "compute.sh: $tool is not built (bash tools/build.sh)" >&2
    exit 1
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$partita" gen gpt --layers 12 --d-model 768 --heads 12 --seq 256 --batch 8 \
  --vocab 50257 --mesh "$mesh" --rules "$rules" > "$tmp/gpt2-small.mlir"
"$partita" compile "$tmp/gpt2-small.mlir" --train --lr 1e-3 \
  --stage executable -o "$tmp/step.pex"
echo "GPT-2 small's train step, $rules on $mesh (one device's program)"
"$bench" "$tmp/step.pex" "${extra[@]}"
