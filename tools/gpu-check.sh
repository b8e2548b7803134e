#!/usr/bin/env bash
# The GPU check, one command on the GPU machine (docs/GPU.md), failing fast
# and writing every figure to $OUT as it goes:
#   1. builds partita-exec and the CUDA op test from lib/Runtime alone
#      (no MLIR there) with that machine's CUDA, cuBLAS and NCCL (found in
#      the pip packages);
#   2. runs every tensor op on the GPU against the CPU kernels, and every
#      collective of the CUDA communicators against the in-process one;
#   3. runs the Executables compiled here (tools/make-gpu-inputs.sh: GPT on
#      cuda:1 and on 8 logical devices, bf16 GPT, MoE, an FSDP train step)
#      against the outputs the CPU devices computed here;
#   4. runs pipelined GPT train steps (partita-exec train) against the
#      losses of the CPU run here;
#   5. measures einsum against cuBLAS and the logical-device all_reduce
#      (bench/cuda.cpp).
# Run here first: bash tools/make-gpu-inputs.sh; then carry
# build/gpu-inputs to the GPU machine (it holds the nlohmann-json headers
# too, which that machine cannot install).
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
# nlohmann-json: the headers carried in the inputs when present, else
# whatever CMake finds on the machine.
json=()
if [ -f "$INPUTS/include/nlohmann/json.hpp" ]; then
  json=(-DPARTITA_NLOHMANN_JSON_INCLUDE_DIR="$(cd "$INPUTS/include" && pwd)")
fi
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPARTITA_RUNTIME_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${json[@]+"${json[@]}"} \
  > "$OUT/configure.txt" 2>&1 || { tail -30 "$OUT/configure.txt"; exit 1; }
grep -E "optional dependencies" "$OUT/configure.txt" | tee -a "$OUT/figures.txt"
cmake --build build-gpu -j "$(nproc)" --target partita-exec partita-cuda-ops-test \
  partita-cuda-communicator-test partita-bench-cuda \
  > "$OUT/build.txt" 2>&1 || { tail -40 "$OUT/build.txt"; exit 1; }
log "built in $(( $(date +%s) - started )) s"

# Runs a GPU test, logs its summary line (or why it skipped), and stops the
# check when it fails.
gpu_test() { # name binary summary-pattern
  local name=$1 binary=$2 summary=$3 status=0
  "build-gpu/bin/$binary" > "$OUT/$name.txt" 2>&1 || status=$?
  tail -20 "$OUT/$name.txt"
  { grep -E "$summary|skipped" "$OUT/$name.txt" || true; } | tee -a "$OUT/figures.txt"
  [ "$status" -eq 0 ] || { log "$name tests FAILED"; exit 1; }
}
log "== op tests (GPU vs CPU kernels)"
gpu_test ops partita-cuda-ops-test "cuda ops:"
log "== communicator tests (device memory, staging, NCCL with 8 GPUs vs in-process)"
gpu_test communicators partita-cuda-communicator-test "cuda communicators:"

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
# Logical devices on one GPU: the device-memory communicator (default)
# against staging every collective through the host, same program.
for name in gpt8 moe8; do
  for mode in device staging; do
    flags=(); [ "$mode" = staging ] && flags=(--staging)
    build-gpu/bin/partita-exec run "$INPUTS/$name.exe" --seed 1 --devices cuda:8 \
      ${flags[@]+"${flags[@]}"} --repeat 20 > "$OUT/$name.$mode.txt" 2>&1 \
      || { tail -20 "$OUT/$name.$mode.txt"; exit 1; }
    log "$name on cuda:8, collectives in $mode memory: $(grep -o 'step: median [0-9.]* ms' "$OUT/$name.$mode.txt")"
  done
done
log "== pipelined GPT train steps (pipe=2, 4 micro-batches), losses against the CPU run"
for schedule in 1f1b zb; do
  if build-gpu/bin/partita-exec train "$INPUTS/gpt-pp-$schedule" --devices cuda:8 \
      --steps 3 --expect "$INPUTS/gpt-pp-$schedule.losses.csv" --tolerance 1e-3 \
      > "$OUT/gpt-pp-$schedule.txt" 2>&1; then
    log "gpt-pp $schedule on cuda:8: $(grep -E '^losses against' "$OUT/gpt-pp-$schedule.txt")"
    grep -E "^step |bubble" "$OUT/gpt-pp-$schedule.txt" | tee -a "$OUT/figures.txt"
  else
    log "gpt-pp $schedule on cuda:8: FAILED"; tail -20 "$OUT/gpt-pp-$schedule.txt"; exit 1
  fi
done
log "== benchmarks (einsum vs cuBLAS, logical-device all_reduce vs memcpy)"
build-gpu/bin/partita-bench-cuda 2>&1 | tee "$OUT/bench.txt" | tee -a "$OUT/figures.txt"

log "== GPT forward, bf16, d_model 4096, 32 heads, seq 2048, batch 8, 4 layers, vocab 32000, cuda:1"
build-gpu/bin/partita-exec run "$INPUTS/gpt-large.exe" --devices cuda:1 \
  --seed 1 --repeat 5 > "$OUT/gpt-large.txt" 2>&1 || { tail -20 "$OUT/gpt-large.txt"; exit 1; }
{ grep -E "step: median|memory: peak" "$OUT/gpt-large.txt" || true; } | tee -a "$OUT/figures.txt"
# MFU (the issue's definition): (2 N_matmul + 4 layers seq d_model) FLOPs per
# token, N_matmul = 4*12*4096^2 + 4096*32000 (layers and LM head; the
# embedding table not: the program embeds by gather, --embedding gather),
# over 989 TFLOP/s dense bf16; and over the cuBLAS 8192^3 rate measured
# above.
step_ms=$(grep -oE "step: median [0-9.]+" "$OUT/gpt-large.txt" | awk '{print $3}')
cublas=$(grep -E "einsum bf16 8192\^3" "$OUT/bench.txt" | grep -oE "cuBLAS +[0-9.]+" | awk '{print $2}')
python3 - "$step_ms" "${cublas:-0}" <<'PY' | tee -a "$OUT/figures.txt"
import sys
step_ms, cublas = float(sys.argv[1]), float(sys.argv[2])
tokens = 8 * 2048
flops_per_token = 2 * (4 * 12 * 4096**2 + 4096 * 32000) + 4 * 4 * 2048 * 4096
tokens_per_s = tokens / (step_ms / 1e3)
achieved = flops_per_token * tokens_per_s
print(f"GPT forward: {tokens_per_s:,.0f} tokens/s, {achieved / 1e12:.1f} TFLOP/s model FLOPs, "
      f"MFU {achieved / 989e12:.3f} of 989 TFLOP/s"
      + (f", {achieved / (cublas * 1e12):.3f} of the measured cuBLAS rate {cublas:.1f} TFLOP/s" if cublas else ""))
PY
log "== GPT-2 small train step (12 layers, D 768, vocab 50,257, seq 1024, batch 8, AdamW f32), cuda:1, beside JAX on the same GPU"
build-gpu/bin/partita-exec run "$INPUTS/gpt2-train.exe" --devices cuda:1 \
  --seed 1 --repeat 5 > "$OUT/gpt2.txt" 2>&1 || { tail -20 "$OUT/gpt2.txt"; exit 1; }
{ grep -E "step: median|memory: peak" "$OUT/gpt2.txt" || true; } | tee -a "$OUT/figures.txt"
# JAX's step, the same model and AdamW (vocab padded to 50,304: JAX does
# not shard or pad a dimension that does not divide), on a 1x1 mesh.
jax_status=0
python3 bench/scale.py --jax-child \
  layers=12,d_model=768,heads=12,seq=1024,batch=8,vocab=50304,mlp_ratio=4 \
  dp 6 1x1 > "$OUT/gpt2-jax.txt" 2>&1 || jax_status=$?
[ "$jax_status" = 0 ] || { log "JAX step failed ($jax_status)"; tail -5 "$OUT/gpt2-jax.txt"; }
python3 - "$OUT/gpt2.txt" "$OUT/gpt2-jax.txt" "$INPUTS/gpt2-train.json" <<'PY' | tee -a "$OUT/figures.txt"
import json, re, sys
report = json.load(open(sys.argv[3]))
ours, theirs = open(sys.argv[1]).read(), open(sys.argv[2]).read()
step_ms = float(re.search(r"step: median ([0-9.]+)", ours).group(1))
peak = int(re.search(r"memory: peak (\d+) bytes per device measured \(buffer plan arena (\d+)", ours).group(1))
arena = int(re.search(r"buffer plan arena (\d+)", ours).group(1))
predicted = report["memory"]["peak_bytes_per_device"]
tokens = 8 * 1024
# Model FLOPs per token: 6 N (N: the layers' and the LM head's matmul
# weights) plus attention's 12 L S D, over 989 TFLOP/s dense (bf16; the
# step is f32 on TF32 tensor cores at best, so the figure is a floor).
n = 12 * 12 * 768**2 + 768 * 50257
flops = (6 * n + 12 * 12 * 1024 * 768) * tokens
ours_tps = tokens / (step_ms / 1e3)
print(f"GPT-2 small step on cuda:1: Partita {ours_tps:,.0f} tokens/s, MFU {flops / (step_ms / 1e3) / 989e12:.3f}; "
      f"memory {peak / 2**30:.2f} GiB measured, plan {arena / 2**30:.2f} GiB (arena), report's peak {predicted / 2**30:.2f} GiB "
      f"(measured/report {peak / predicted:.3f})")
found = re.search(r"tokens_per_s ([0-9.e+]+)", theirs)
if found:
    jax_tps = float(found.group(1))
    jax_peak = re.search(r"device_peak_bytes (\d+)", theirs)
    print(f"JAX on the same GPU: {jax_tps:,.0f} tokens/s (Partita {ours_tps / jax_tps:.2f}x)"
          + (f", peak {int(jax_peak.group(1)) / 2**30:.2f} GiB (Partita {peak / int(jax_peak.group(1)):.2f}x)" if jax_peak else ""))
PY
log "== gpu-check passed in $(( $(date +%s) - started )) s"
