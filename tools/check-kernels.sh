#!/usr/bin/env bash
# The tests that train or compare a run against one device, once per GEMM
# kernel: OpenBLAS forced to a second kernel this CPU runs (Debian's build
# picks one at run time; OPENBLAS_CORETYPE forces it) and the runtime's own
# GEMM (PARTITA_GEMM=builtin). Each kernel rounds the sums its own way, so a
# test that holds on one kernel's trajectory only fails here
# (docs/Robustness.md, "Every GEMM kernel"). test/CLI/finetune.test runs
# the demo chain on every kernel itself.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${PARTITA_BUILD_DIR:-build}"
lit=/usr/lib/llvm-22/bin/lit
tests='CLI/checkpoint|CLI/train|Distributed/|Execution/(fusion|overlap|padding|random-grad|run-check)'

flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
kernels=()
# The newest kernel the CPU runs that is not the one OpenBLAS would pick on
# an AVX2 or AVX-512 machine, so the run rounds differently from the default.
if [[ " $flags " == *" avx "* ]]; then
  kernels+=(Sandybridge)
else
  kernels+=(Prescott)
fi

for kernel in "${kernels[@]}" builtin; do
  echo "== GEMM kernel: $kernel"
  if [ "$kernel" = builtin ]; then
    PARTITA_GEMM=builtin "$lit" "$build/test" -q --filter "$tests"
  else
    OPENBLAS_CORETYPE="$kernel" "$lit" "$build/test" -q --filter "$tests"
  fi
done
echo "== every kernel passed"
