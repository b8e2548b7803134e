#!/usr/bin/env bash
# Builds the runtime-only configuration (sharding algebra, runtime,
# partita-exec, their unit tests; no CUDA) with AddressSanitizer and
# UndefinedBehaviorSanitizer, runs its tests, then runs partita-exec under
# them on Executables the compiler in build/ made (a transformer layer, GPT
# forward and AdamW steps under dp+tp, fsdp and ep, a loop, a pipelined
# step): every finding stops the run with exit code 1.
#   --full   also build the compiler itself with the sanitizers (into
#            build-sanitize-full) and run the whole CTest suite there:
#            about an hour on 2 cores, so not in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=${PARTITA_SANITIZERS:-address,undefined}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "${1:-}" = "--full" ]; then
  dir=build-sanitize-full
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPARTITA_SANITIZE="$sanitizers" -DPARTITA_ENABLE_CUDA=OFF \
    -DPython_EXECUTABLE=/usr/bin/python3
  cmake --build "$dir" -j "$(nproc)"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -E 'python|install'
  echo "sanitizers ($sanitizers), whole suite: OK"
  exit 0
fi
dir=${PARTITA_SANITIZE_BUILD_DIR:-build-sanitize}
mkdir -p "$dir/third_party"
cp -r "${PARTITA_NLOHMANN_JSON_INCLUDE_DIR:-/usr/include}/nlohmann" "$dir/third_party/"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPARTITA_RUNTIME_ONLY=ON -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
  -DPARTITA_ENABLE_CUDA=OFF -DPARTITA_SANITIZE="$sanitizers" \
  -DPARTITA_NLOHMANN_JSON_INCLUDE_DIR="$(cd "$dir/third_party" && pwd)"
cmake --build "$dir" -j "$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -E '^mpi-'
# OpenMPI does not free what MPI_Init allocates (and unloads the components
# that did): leak checking is off for the MPI tests, every other check on.
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -R '^mpi-'
# The sanitized partita-exec on programs the compiler built.
if [ -x build/bin/partita ]; then
  work="$dir/programs"
  mkdir -p "$work"
  P=build/bin/partita
  X="$dir/bin/partita-exec"
  $P compile docs/examples/transformer-layer.mlir --stage executable -o "$work/layer.exe"
  $P compile docs/examples/mlp.mlir --stage executable -o "$work/mlp-loop.exe"
  for rules in dp+tp fsdp; do
    $P gen gpt --layers 2 --mesh data=2,model=4 --rules "$rules" > "$work/gpt-$rules.mlir"
    $P compile "$work/gpt-$rules.mlir" --stage executable -o "$work/gpt-$rules.exe"
    $P compile "$work/gpt-$rules.mlir" --train --stage executable -o "$work/gpt-$rules-train.exe"
  done
  $P gen moe --mesh data=8 --experts 8 --rules ep > "$work/moe.mlir"
  $P compile "$work/moe.mlir" --train --stage executable -o "$work/moe-train.exe"
  for exe in "$work"/*.exe; do
    "$X" run "$exe" --repeat 2 --trace "$exe.trace.json" > "$exe.log"
    echo "sanitized run: $(basename "$exe"): $(grep -c 'result' "$exe.log") outputs"
  done
  "$X" run "$work/layer.exe" --outputs "$work/out" > /dev/null
  "$X" run "$work/layer.exe" --expect "$work/out" > /dev/null
  $P gen gpt --layers 4 > "$work/gpt4.mlir"
  $P compile "$work/gpt4.mlir" --train --pp 2 --mesh pipe=2,data=2 --rules dp --micro-batches 4 -o "$work/pp" > /dev/null
  "$X" train "$work/pp" --steps 2 > "$work/pp.log"
  echo "sanitized run: pipelined step: $(grep -c '^step' "$work/pp.log") steps"
fi
echo "sanitizers ($sanitizers), runtime: OK"
