#!/usr/bin/env bash
# Configures and builds Partita into ./build (Release, Ninja, ccache and lld
# when present). Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PARTITA_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "${PARTITA_JOBS:-$(nproc)}"
