#!/usr/bin/env bash
# Fuzzes one target for a while: bench/fuzz.sh TARGET SECONDS [JOBS]
#   TARGET: Executable (the Executable loader, accepted programs run),
#           Npy (the .npy reader), ShardedIndex (a sharded array's index.json),
#           Compile (program text through the parser, verifier, pipeline and
#           lowering; the loader must accept what comes out),
#           Import (StableHLO as JAX writes it, then as Compile),
#           or all (each for SECONDS).
# The runtime's targets build the runtime-only configuration with clang,
# libFuzzer and AddressSanitizer + UndefinedBehaviorSanitizer into
# build-fuzz; the compiler's build the whole compiler so with clang 22 (the
# version of Debian's MLIR, which is linked uninstrumented) into
# build-fuzz-compiler. The seed corpus (test/fuzz/corpus/TARGET; for
# Compile the programs of docs/examples and the tests' inputs, for Import
# the JAX exports of test/Conversion) is copied into <build>/corpus/TARGET,
# where new inputs accumulate, and libFuzzer runs (with
# test/fuzz/TARGET.dict where there is one). Prints libFuzzer's final
# statistics; a crash, hang (> 10 s per input), leak or sanitizer finding
# stops it with exit code 1 and leaves the input in <build>/findings.
# PARTITA_FUZZ_RUNS=N stops each job after N executions instead (SECONDS
# still bounds it).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: bench/fuzz.sh Executable|Npy|ShardedIndex|Compile|Import|all SECONDS [JOBS]}
seconds=${2:?usage: bench/fuzz.sh TARGET SECONDS [JOBS]}
jobs=${3:-1}
if [ "$target" = all ]; then
  for t in Executable Npy ShardedIndex Compile Import; do
    bash "$0" "$t" "$seconds" "$jobs"
  done
  exit 0
fi
case "$target" in
  Executable|Npy|ShardedIndex) compiler=0 ;;
  Compile|Import) compiler=1 ;;
  *) echo "bench/fuzz.sh: unknown target '$target'" >&2; exit 2 ;;
esac
if [ "$compiler" = 1 ]; then
  dir=${PARTITA_FUZZ_COMPILER_BUILD_DIR:-build-fuzz-compiler}
else
  dir=${PARTITA_FUZZ_BUILD_DIR:-build-fuzz}
fi
mkdir -p "$dir/third_party" "$dir/findings"
dir=$(cd "$dir" && pwd)
if [ "$compiler" = 1 ]; then
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang-22 CXX=clang++-22 cmake -S . -B "$dir" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARTITA_ENABLE_CUDA=OFF \
      -DPARTITA_ENABLE_MPI=OFF -DPARTITA_ENABLE_OPENBLAS=OFF \
      -DPARTITA_ENABLE_TESTS=ON -DPARTITA_FUZZ=ON \
      -DPARTITA_SANITIZE=fuzzer-no-link,address,undefined > "$dir/configure.log"
  fi
else
cp -r "${PARTITA_NLOHMANN_JSON_INCLUDE_DIR:-/usr/include}/nlohmann" "$dir/third_party/"
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPARTITA_RUNTIME_ONLY=ON -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
    -DPARTITA_ENABLE_CUDA=OFF -DPARTITA_ENABLE_MPI=OFF -DPARTITA_ENABLE_OPENBLAS=OFF \
    -DPARTITA_ENABLE_TESTS=ON -DPARTITA_FUZZ=ON \
    -DPARTITA_SANITIZE=fuzzer-no-link,address,undefined \
    -DPARTITA_NLOHMANN_JSON_INCLUDE_DIR="$(cd "$dir/third_party" && pwd)" > "$dir/configure.log"
fi
fi
cmake --build "$dir" --target "partita-fuzz-$target" > "$dir/build.log"
corpus="$dir/corpus/$target"
mkdir -p "$corpus"
case "$target" in
  Compile) seeds=(docs/examples/*.mlir test/Execution/Inputs/*.mlir
                  test/Distributed/Inputs/*.mlir) ;;
  Import) seeds=(test/Conversion/StableHLOToPartita/*/module.mlir) ;;
  *) seeds=(test/fuzz/corpus/"$target"/*) ;;
esac
# The compiler's seeds get their path as name (many are module.mlir).
for seed in "${seeds[@]}"; do
  name=$(basename "$seed")
  [ "$compiler" = 1 ] && name=$(echo "$seed" | tr / _)
  cp -n "$seed" "$corpus/$name" 2>/dev/null || true
done
options=(-max_len=65536)
if [ -f "test/fuzz/$target.dict" ]; then
  # A dictionary of tokens lets mutations stay program text. JAX's exports
  # run to 146 KB, but 32 KB keeps every op and sharding form of them (the
  # layer and MoE exports) at three times the executions per second.
  options=(-max_len=32768 -dict="$PWD/test/fuzz/$target.dict")
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "== fuzzing $target for $seconds s ($jobs jobs)"
# Several jobs: libFuzzer writes each worker's log as fuzz-<i>.log in the
# working directory, so it runs in the build directory.
parallel=()
if [ -n "${PARTITA_FUZZ_RUNS:-}" ]; then
  options+=(-runs="$PARTITA_FUZZ_RUNS")
fi
if [ "$jobs" -gt 1 ]; then
  parallel=(-jobs="$jobs" -workers="$jobs")
fi
(cd "$dir" && "$dir/bin/partita-fuzz-$target" "$corpus" -max_total_time="$seconds" \
  -timeout=10 -rss_limit_mb=4096 "${options[@]}" -print_final_stats=1 "${parallel[@]}" \
  -artifact_prefix="$dir/findings/$target-") 2>&1 | tee "$dir/$target.log" | \
  grep -E "^stat::|ERROR|SUMMARY|Done [0-9]+ runs|runtime error|deadly signal" || true
if grep -qE "ERROR: |runtime error|deadly signal|Test unit written" "$dir/$target.log"; then
  echo "fuzz $target: FINDING (see $dir/$target.log and $dir/findings)" >&2
  exit 1
fi
echo "fuzz $target: no findings"
