#!/usr/bin/env bash
# Collective bandwidth across P processes (MPI communicator) vs P threads of
# one process (in-process communicator) vs MPI's own collective, same
# bytes, same run, for P = 2 and 4 (PROCESSES="2 4" by default):
#   bash bench/mpi.sh [--max-mib N]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PARTITA_BUILD_DIR:-build}
cmake --build "$BUILD" --target partita-bench-mpi >/dev/null
for processes in ${PROCESSES:-2 4}; do
  mpirun --oversubscribe --allow-run-as-root -np "$processes" \
    "$BUILD/bin/partita-bench-mpi" "$@"
done
