#!/usr/bin/env bash
# Builds the runtime-only configuration (sharding algebra, runtime,
# partita-exec and their unit tests) with LLVM/MLIR hidden from CMake, runs
# its tests, and checks that nothing in it links or includes LLVM.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PARTITA_RUNTIME_BUILD_DIR:-build-runtime}
rm -rf "$BUILD_DIR"
# nlohmann-json as the GPU machine gets it: a copied folder of headers, not
# the CMake package (tools/make-gpu-inputs.sh, tools/gpu-check.sh).
mkdir -p "$BUILD_DIR/third_party"
cp -r "${PARTITA_NLOHMANN_JSON_INCLUDE_DIR:-/usr/include}/nlohmann" "$BUILD_DIR/third_party/"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPARTITA_RUNTIME_ONLY=ON -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
  -DPARTITA_NLOHMANN_JSON_INCLUDE_DIR="$(cd "$BUILD_DIR/third_party" && pwd)"
cmake --build "$BUILD_DIR" -j "$(nproc)"
if grep -q "llvm-22" "$BUILD_DIR/compile_commands.json"; then
  echo "error: the runtime-only build uses LLVM/MLIR headers" >&2
  exit 1
fi
for binary in "$BUILD_DIR"/bin/*; do
  if ldd "$binary" | grep -qi -e "libLLVM" -e "libMLIR"; then
    echo "error: $binary links LLVM/MLIR" >&2
    exit 1
  fi
done
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
# The runtime-only partita-exec runs an Executable the compiler built.
if [ -x build/bin/partita ]; then
  build/bin/partita compile docs/examples/transformer-layer.mlir --stage executable \
    -o "$BUILD_DIR/transformer-layer.exe"
  "$BUILD_DIR/bin/partita-exec" run "$BUILD_DIR/transformer-layer.exe"
fi
echo "runtime-only build: OK (no LLVM/MLIR headers or libraries)"
