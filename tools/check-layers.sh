#!/usr/bin/env bash
# The layer check: fails when a file includes a header of a layer it may not
# depend on, or a CMakeLists.txt names a Partita library of such a layer (or
# one the table does not know). The table is in tools/check_layers.py and in
# docs/Overview.md ("Layers"); keep both the same. It covers lib/ and
# include/, the tools, the Python extension, the tests and the benchmarks.
#
# Usage: tools/check-layers.sh [ROOT]   (ROOT: the tree to check, default the
# repository this script is in; the layer-check test points it elsewhere).
set -euo pipefail
python=$(command -v python3 || true)
if [ -z "$python" ]; then
  echo "check-layers: needs python3 (Debian: apt-get install python3)" >&2
  exit 1
fi
exec "$python" "$(dirname "$0")/check_layers.py" "$@"
