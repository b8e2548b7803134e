#!/usr/bin/env bash
# Runs the Python package's tests: run-pytest.sh BUILD_DIR PYTHON.
# BUILD_DIR/pyenv (a venv over PYTHON with JAX, made by tools/setup-jax.sh)
# is used when present, so that from_jax is tested too.
set -euo pipefail
build=$1
python=$2
if [ -x "$build/pyenv/bin/python" ]; then
  python="$build/pyenv/bin/python"
fi
cd "$(dirname "$0")"
PYTHONPATH="$build/python" exec "$python" -m pytest -q -rs -p no:cacheprovider .
