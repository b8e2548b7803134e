#!/usr/bin/env bash
# Prepares what tools/gpu-check.sh needs on the GPU machine, which has no
# MLIR and no Debian packages: Executables compiled here and their outputs
# on the CPU devices here (the reference), and the nlohmann-json headers the
# runtime builds with, in build/gpu-inputs/ (carried to the GPU machine).
#   bash tools/make-gpu-inputs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PARTITA_BUILD_DIR:-build}/bin
OUT=${PARTITA_BUILD_DIR:-build}/gpu-inputs
rm -rf "$OUT"
mkdir -p "$OUT/include"

# The runtime's one header-only dependency (nlohmann-json3-dev here);
# gpu-check.sh points CMake at the copy.
JSON_INCLUDE=${PARTITA_NLOHMANN_JSON_INCLUDE_DIR:-/usr/include}
cp -r "$JSON_INCLUDE/nlohmann" "$OUT/include/"

# name | partita gen arguments | devices
programs=(
  "gpt1|gpt --mesh data=1 --rules dp|1"
  "gpt8|gpt --rules dp+tp|8"
  "gpt8-bf16|gpt --rules dp+tp --dtype bf16|8"
  "moe8|moe --mesh data=8 --experts 8 --rules ep|8"
  "gpt8-train|gpt --rules fsdp|8"
)
for entry in "${programs[@]}"; do
  IFS='|' read -r name args devices <<<"$entry"
  # shellcheck disable=SC2086
  "$BIN/partita" gen $args -o "$OUT/$name.mlir" 2>/dev/null
  train=()
  if [[ $name == *-train ]]; then train=(--train); fi
  "$BIN/partita" compile "$OUT/$name.mlir" "${train[@]}" --stage executable \
    -o "$OUT/$name.exe"
  "$BIN/partita-exec" run "$OUT/$name.exe" --seed 1 --outputs "$OUT/$name.ref" \
    > "$OUT/$name.cpu.txt"
  echo "$name $devices" >> "$OUT/programs.txt"
done
# A pipelined GPT train step (pipe=2 beside data=2,model=2, 1F1B and
# zero-bubble over 4 micro-batches): the step directories and the losses of
# 3 steps on the CPU devices here.
"$BIN/partita" gen gpt -o "$OUT/gpt-pp.mlir"
for schedule in 1f1b zb; do
  "$BIN/partita" compile "$OUT/gpt-pp.mlir" --train --pp 2 \
    --mesh pipe=2,data=2,model=2 --rules dp+tp --micro-batches 4 \
    --schedule "$schedule" -o "$OUT/gpt-pp-$schedule" > /dev/null
  "$BIN/partita-exec" train "$OUT/gpt-pp-$schedule" --steps 3 \
    --losses "$OUT/gpt-pp-$schedule.losses.csv" > "$OUT/gpt-pp-$schedule.cpu.txt"
done
# The GPT forward benchmark (bf16, d_model 4096, 32 heads, seq 2048, batch 8,
# 4 layers, vocab 32000) on one GPU: compiled here, timed there; no CPU
# reference (3.7e13 FLOPs a step).
"$BIN/partita" gen gpt --mesh data=1 --layers 4 --d-model 4096 --heads 32 \
  --seq 2048 --batch 8 --vocab 32000 --dtype bf16 --embedding gather \
  -o "$OUT/gpt-large.mlir"
"$BIN/partita" compile "$OUT/gpt-large.mlir" --stage executable \
  -o "$OUT/gpt-large.exe"
# GPT-2 small's train step (12 layers, D 768, 12 heads, vocab 50,257, seq
# 1024, batch 8; AdamW, f32) on one GPU: timed there beside JAX's same step
# on the same GPU (bench/scale.py --jax-child); its report's planned peak
# per device is the memory prediction.
"$BIN/partita" gen gpt --mesh data=1 --layers 12 --d-model 768 --heads 12 \
  --seq 1024 --batch 8 --vocab 50257 -o "$OUT/gpt2.mlir"
"$BIN/partita" compile "$OUT/gpt2.mlir" --train --stage executable \
  -o "$OUT/gpt2-train.exe" --report "$OUT/gpt2-train.json"
du -sh "$OUT"
