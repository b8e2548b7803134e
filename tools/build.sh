#!/usr/bin/env bash
# Configures and builds Partita into ./build (Release, Ninja, ccache and lld
# when present). Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PARTITA_BUILD_DIR:-build}
# Paths under the checkout hashed relative to it, so that pip install .
# (build-pip/, tools/check-pip.sh) reuses these objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# The Python package is built for Debian's interpreter (its numpy, pytest
# and pybind11 come from Debian), whatever python3 is first on PATH.
python_flag=()
if [ -x /usr/bin/python3 ]; then
  python_flag=(-DPython_EXECUTABLE=/usr/bin/python3)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_flag[@]}" "$@"
cmake --build "$BUILD_DIR" -j "${PARTITA_JOBS:-$(nproc)}"
