#!/usr/bin/env bash
# `pip install .` as a Python user runs it, into BUILD_DIR/pyenv-latest (a
# Python >= 3.12 virtual environment with JAX 0.12, Flax and Optax that
# tools/setup-jax.sh --latest makes), then the Python package's tests with
# that interpreter against the installed package (from_jax included).
# Then exports a part of the JAX corpus with that JAX and runs it. Says so
# and exits 0 when no Python >= 3.12 exists; fails when pip or a
# test fails.
#   tools/check-pip.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-${PARTITA_BUILD_DIR:-build}}"
set +e
bash tools/setup-jax.sh --latest "$build"
status=$?
set -e
if [ "$status" = 2 ]; then
  echo "check-pip: skipped: no Python >= 3.12 here (see above)"
  exit 0
fi
[ "$status" = 0 ] || exit "$status"
python="$(cd "$build/pyenv-latest/bin" && pwd)/python"
# ccache reuses tools/build.sh's objects: build-pip/ sits beside build/ and
# paths under the checkout are hashed relative to it.
export CCACHE_BASEDIR="$PWD"
start=$(date +%s)
"$python" -m pip install -q --disable-pip-version-check pytest
"$python" -m pip install --disable-pip-version-check . 2>&1 | tail -3
echo "check-pip: pip install . took $(( $(date +%s) - start )) s"
# The installed package, not the build tree's: run from outside the checkout.
(cd /tmp && "$python" -c "import partita, sys; print('check-pip: partita', partita.__version__, 'from', partita.__file__, 'on Python', sys.version.split()[0])")
cd test/python
"$python" -m pytest -q -rs -p no:cacheprovider .
cd ../..
# A part of the JAX corpus exported afresh with this JAX (the whole corpus,
# committed, runs in corpus.test; exporting all 54 takes ~10 minutes), run
# against JAX's outputs with the build's partita.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
programs=(mlp_adamw_step_dp nnx_gpt_loss_dp_tp shard_map_ring_matmul cnn_forward_dp
          linen_mlp_dropout_step_dp)
only=()
for p in "${programs[@]}"; do only+=(--only "$p"); done
"$python" bench/jax_corpus.py --out "$out" "${only[@]}" 2>&1 | grep -v '^W[0-9]' | tail -4
for p in "${programs[@]}"; do
  log=$(PARTITA="$(cd "$build" && pwd)/bin/partita" bash tools/run-jax-fixture.sh "$out/$p" 2>&1) || {
    echo "$log"; echo "check-pip: $p (exported now) failed"; exit 1; }
  grep -q "check passed" <<<"$log" || { echo "$log"; echo "check-pip: $p: no check"; exit 1; }
  if grep -q MISMATCH <<<"$log"; then echo "$log"; echo "check-pip: $p mismatches"; exit 1; fi
  echo "check-pip: $p exported with this JAX: matches JAX and the unpartitioned program"
done
