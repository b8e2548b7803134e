#!/usr/bin/env bash
# Differential testing at scale: bench/differential.sh [CASES] [SEED]
# Random programs (tools/random-programs.py: chains and DAGs of elementwise
# ops, einsums, reductions, transposes, broadcasts and reshards on 1-D to
# 3-D meshes of up to 8 devices with random shardings, partial included),
# half of them train steps (gradients and an AdamW update), each
# partitioned, run on cpu:N and compared with the unpartitioned run on
# cpu:1. Prints the count, the failures (kept in build/differential-
# failures), the op and collective coverage and the time taken.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-10000}
seed=${2:-1}
start=$(date +%s)
python3 tools/random-programs.py --partita build/bin/partita --cases "$cases" \
  --seed "$seed" --gradient-share 0.5 --jobs "$(nproc)" \
  --keep build/differential-failures
echo "took $(( $(date +%s) - start )) s"
