#!/usr/bin/env bash
# Makes BUILD_DIR/pyenv: a virtual environment over the Python the package
# is built for (/usr/bin/python3), with JAX from PyPI, for the tests and
# benchmarks that compare with JAX. Idempotent. Partita itself never needs
# it. Usage: tools/setup-jax.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${1:-${PARTITA_BUILD_DIR:-build}}/pyenv"
if [ -x "$env_dir/bin/python" ] && "$env_dir/bin/python" -c "import jax" 2>/dev/null; then
  echo "setup-jax: $env_dir has JAX"
  exit 0
fi
python3_bin=/usr/bin/python3
[ -x "$python3_bin" ] || python3_bin=python3
"$python3_bin" -m venv --system-site-packages "$env_dir"
"$env_dir/bin/pip" install -q --disable-pip-version-check jax==0.10.2
echo "setup-jax: $env_dir has JAX $("$env_dir/bin/python" -c 'import jax; print(jax.__version__)')"
