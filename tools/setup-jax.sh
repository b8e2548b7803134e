#!/usr/bin/env bash
# Makes the virtual environments with JAX from PyPI that the tests and
# benchmarks comparing with JAX use. Idempotent. Partita itself never needs
# them.
#   tools/setup-jax.sh [BUILD_DIR]
#       BUILD_DIR/pyenv: JAX 0.10.2 over the Python the package is built for
#       (/usr/bin/python3); the fixtures of test/Conversion/StableHLOToPartita
#       were exported with it.
#   tools/setup-jax.sh --latest [BUILD_DIR]
#       BUILD_DIR/pyenv-latest: JAX 0.12 with Flax, Optax and Equinox over a
#       Python >= 3.12 (JAX 0.11 and later need it): python3.13 or python3.12
#       on PATH, else pyenv's. bench/jax_corpus.py runs in it. Exits 2,
#       saying so, when no such interpreter exists.
set -euo pipefail
cd "$(dirname "$0")/.."
latest=0
if [ "${1:-}" = "--latest" ]; then
  latest=1
  shift
fi
build="${1:-${PARTITA_BUILD_DIR:-build}}"

# A Python >= 3.12: on PATH, in pyenv's versions, or none.
find_python312() {
  local candidate
  for candidate in python3.13 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if [ -x "$candidate" ] &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if [ "$latest" = 1 ]; then
  env_dir="$build/pyenv-latest"
  if [ -x "$env_dir/bin/python" ] &&
    "$env_dir/bin/python" -c "import jax, flax, optax" 2>/dev/null; then
    echo "setup-jax: $env_dir has JAX $("$env_dir/bin/python" -c 'import jax; print(jax.__version__)')"
    exit 0
  fi
  if ! python312=$(find_python312); then
    echo "setup-jax: no Python >= 3.12 found (looked for python3.13, python3.12" \
      "and python3 on PATH and in ${PYENV_ROOT:-$HOME/.pyenv}/versions); JAX 0.12" \
      "needs one" >&2
    exit 2
  fi
  "$python312" -m venv "$env_dir"
  "$env_dir/bin/pip" install -q --disable-pip-version-check \
    "jax==0.12.*" "flax==0.12.*" "optax==0.2.*" "equinox==0.13.*" numpy
  echo "setup-jax: $env_dir has JAX $("$env_dir/bin/python" -c 'import jax; print(jax.__version__)') on $("$env_dir/bin/python" -c 'import sys; print(sys.version.split()[0])')"
  exit 0
fi

env_dir="$build/pyenv"
if [ -x "$env_dir/bin/python" ] && "$env_dir/bin/python" -c "import jax" 2>/dev/null; then
  echo "setup-jax: $env_dir has JAX"
  exit 0
fi
python3_bin=/usr/bin/python3
[ -x "$python3_bin" ] || python3_bin=python3
"$python3_bin" -m venv --system-site-packages "$env_dir"
"$env_dir/bin/pip" install -q --disable-pip-version-check jax==0.10.2
echo "setup-jax: $env_dir has JAX $("$env_dir/bin/python" -c 'import jax; print(jax.__version__)')"
