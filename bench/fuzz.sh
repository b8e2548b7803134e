#!/usr/bin/env bash
# Fuzzes one target for a while: bench/fuzz.sh TARGET SECONDS [JOBS]
#   TARGET: Executable (the Executable loader, accepted programs run),
#           Npy (the .npy reader), ShardedIndex (a sharded array's index.json),
#           or all (each for SECONDS).
# Builds the runtime-only configuration with clang, libFuzzer and
# AddressSanitizer + UndefinedBehaviorSanitizer into build-fuzz, copies
# the seed corpus test/fuzz/corpus/TARGET into build-fuzz/corpus/TARGET
# (where new inputs accumulate), and runs. Prints libFuzzer's final
# statistics; a crash, hang (> 10 s per input), leak or sanitizer finding
# stops it with exit code 1 and leaves the input in build-fuzz/findings.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: bench/fuzz.sh Executable|Npy|ShardedIndex|all SECONDS [JOBS]}
seconds=${2:?usage: bench/fuzz.sh TARGET SECONDS [JOBS]}
jobs=${3:-1}
dir=${PARTITA_FUZZ_BUILD_DIR:-build-fuzz}
if [ "$target" = all ]; then
  for t in Executable Npy ShardedIndex; do
    bash "$0" "$t" "$seconds" "$jobs"
  done
  exit 0
fi
mkdir -p "$dir/third_party" "$dir/findings"
dir=$(cd "$dir" && pwd)
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
cmake --build "$dir" --target "partita-fuzz-$target" > "$dir/build.log"
corpus="$dir/corpus/$target"
mkdir -p "$corpus"
cp -n test/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "== fuzzing $target for $seconds s ($jobs jobs)"
# Several jobs: libFuzzer writes each worker's log as fuzz-<i>.log in the
# working directory, so it runs in the build directory.
parallel=()
if [ "$jobs" -gt 1 ]; then
  parallel=(-jobs="$jobs" -workers="$jobs")
fi
(cd "$dir" && "$dir/bin/partita-fuzz-$target" "$corpus" -max_total_time="$seconds" \
  -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 "${parallel[@]}" \
  -artifact_prefix="$dir/findings/$target-") 2>&1 | tee "$dir/$target.log" | \
  grep -E "^stat::|ERROR|SUMMARY|Done [0-9]+ runs|runtime error|deadly signal" || true
if grep -qE "ERROR: |runtime error|deadly signal|Test unit written" "$dir/$target.log"; then
  echo "fuzz $target: FINDING (see $dir/$target.log and $dir/findings)" >&2
  exit 1
fi
echo "fuzz $target: no findings"
