#!/usr/bin/env bash
# How long `partita plan` takes: bench/plan.sh [PARTITA] [FINALISTS]
# 1. The default GPT on 8 devices with 1.2 MiB each, every layout compiled
#    and with 3 finalists (the same best plan).
# 2. A 70-billion-parameter GPT (86 layers, D = 8192, 64 heads, sequence
#    4096, vocabulary 32000, global batch 1024) on 1,024 devices, 8 per node
#    (450 GB/s NVLink inside, 50 GB/s across), 80 GB each, with FINALISTS
#    finalists and with one; the goal is under 10 s.
# 3. Both large shapes with plan's defaults on a named cluster (--cluster
#    h100-8x: screening and 3 finalists by default), the second a 57B GPT
#    with grouped-query attention (80 layers, D 8192, 64 heads, 8 KV heads,
#    sequence 4096, vocabulary 128,256, global batch 1024) on 1,024 GPUs;
#    the goal is under 10 s each.
# Prints each time (median of 3 for the small plans, one run for the
# large) and the plan.
set -euo pipefail
cd "$(dirname "$0")/.."
partita=${1:-build/bin/partita}
finalists=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median3() { # command...: median wall seconds of 3 runs
  for i in 1 2 3; do
    start=$(date +%s.%N); "$@" > /dev/null; end=$(date +%s.%N)
    python3 -c "print($end - $start)"
  done | sort -n | sed -n 2p
}
echo "== default GPT, 8 devices, 1.2 MiB each"
all=$(median3 "$partita" plan --model gpt --devices 8 --memory-per-device 1.2MiB)
some=$(median3 "$partita" plan --model gpt --devices 8 --memory-per-device 1.2MiB --finalists "$finalists")
printf "every layout compiled: %.2f s; %s finalists: %.2f s\n" "$all" "$finalists" "$some"
"$partita" plan --model gpt --devices 8 --memory-per-device 1.2MiB --finalists "$finalists" --top 1 | sed -n '3p;5p;6p'
cat > "$tmp/cluster.json" <<'JSON'
{"devices_per_node": 8, "flops_per_second": 4e14, "memory_bytes": 80e9,
 "intra_node": {"bandwidth_GBps": 450, "latency_us": 5},
 "inter_node": {"bandwidth_GBps": 50, "latency_us": 20}}
JSON
echo "== 70B GPT (86 layers, D 8192: 69.8e9 parameters), 1024 devices, 80 GB each (goal: under 10 s)"
# Screened at 2 and 3 layers, then compiled at full depth until F fit:
# with the script's finalists, and with one.
for f in "$finalists" 1; do
  start=$(date +%s.%N)
  set +e
  "$partita" plan --model gpt --layers 86 --d-model 8192 --heads 64 --seq 4096 \
    --vocab 32000 --batch 1024 --devices 1024 --interconnect "$tmp/cluster.json" \
    --finalists "$f" --top 3 > "$tmp/out" 2>&1
  code=$?
  set -e
  end=$(date +%s.%N)
  printf "%s finalists: planned in %.1f s (exit %d)\n" "$f" \
    "$(python3 -c "print($end - $start)")" "$code"
  cat "$tmp/out"
done
echo "== defaults on --cluster h100-8x (goal: under 10 s each)"
for shape in "--layers 86 --d-model 8192 --heads 64 --seq 4096 --vocab 32000" \
             "--layers 80 --d-model 8192 --heads 64 --kv-heads 8 --seq 4096 --vocab 128256"; do
  start=$(date +%s.%N)
  set +e
  # shellcheck disable=SC2086
  "$partita" plan --model gpt $shape --batch 1024 --devices 1024 \
    --cluster h100-8x --top 1 > "$tmp/out" 2> "$tmp/err"
  code=$?
  set -e
  end=$(date +%s.%N)
  printf "%s: planned in %.1f s (exit %d)\n" "$shape" \
    "$(python3 -c "print($end - $start)")" "$code"
  sed -n '1,3p;5p;6p' "$tmp/out"
  [ "$code" = 0 ] || cat "$tmp/err"
done
