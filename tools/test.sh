#!/usr/bin/env bash
# All tests on a fresh machine: install dependencies, build, run CTest (lit
# tests of the compiler, Catch2 unit tests, CLI tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
ctest --test-dir "${PARTITA_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
