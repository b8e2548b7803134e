#!/usr/bin/env bash
# The GPU check, one command on the GPU machine (docs/GPU.md), failing fast
# and writing every figure to $OUT as it goes:
#   1. builds partita-exec and the CUDA op test from lib/Runtime alone
#      (no MLIR there) with that machine's CUDA, cuBLAS and NCCL (found in
#      the pip packages);
#   2. runs every tensor op on the GPU against the CPU kernels;
#   3. runs the Executables compiled here (tools/make-gpu-inputs.sh: GPT on
#      cuda:1 and on 8 logical devices, bf16 GPT, MoE, an FSDP train step)
#      against the outputs the CPU devices computed here;
#   4. measures einsum against cuBLAS and the logical-device all_reduce
#      (bench/cuda.cpp).
# Run here first: bash tools/make-gpu-inputs.sh; then carry
# build/gpu-inputs to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
INPUTS=${PARTITA_GPU_INPUTS:-build/gpu-inputs}
log() { echo "$*" | tee -a "$OUT/figures.txt"; }
started=$(date +%s)

log "== gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv \
  | tee -a "$OUT/figures.txt" || true

# NCCL and cuBLAS from the pip packages when the toolkit lacks them.
if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)
  export NCCL_HOME
fi
log "NCCL_HOME=${NCCL_HOME:-none}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPARTITA_RUNTIME_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  > "$OUT/configure.txt" 2>&1 || { tail -30 "$OUT/configure.txt"; exit 1; }
grep -E "optional dependencies" "$OUT/configure.txt" | tee -a "$OUT/figures.txt"
cmake --build build-gpu -j "$(nproc)" --target partita-exec partita-cuda-ops-test partita-bench-cuda \
  > "$OUT/build.txt" 2>&1 || { tail -40 "$OUT/build.txt"; exit 1; }
log "built in $(( $(date +%s) - started )) s"

log "== op tests (GPU vs CPU kernels)"
build-gpu/bin/partita-cuda-ops-test 2>&1 | tee "$OUT/ops.txt" | tail -20
status=${PIPESTATUS[0]}
grep -E "cuda ops:" "$OUT/ops.txt" | tee -a "$OUT/figures.txt"
[ "$status" -eq 0 ] || { log "op tests FAILED"; exit 1; }

log "== programs compiled here, checked against the CPU run here"
while read -r name devices; do
  for kind in cuda; do
    if build-gpu/bin/partita-exec run "$INPUTS/$name.exe" --seed 1 \
        --devices "$kind:$devices" --expect "$INPUTS/$name.ref" \
        > "$OUT/$name.$kind.txt" 2>&1; then
      log "$name on $kind:$devices: ok ($(grep -o 'in [0-9.]* ms' "$OUT/$name.$kind.txt" | head -1))"
    else
      log "$name on $kind:$devices: FAILED"; tail -20 "$OUT/$name.$kind.txt"; exit 1
    fi
  done
done < "$INPUTS/programs.txt"
log "== benchmarks (einsum vs cuBLAS, logical-device all_reduce vs memcpy)"
build-gpu/bin/partita-bench-cuda 2>&1 | tee -a "$OUT/figures.txt"
log "== gpu-check passed in $(( $(date +%s) - started )) s"
