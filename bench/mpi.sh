#!/usr/bin/env bash
# Collective bandwidth across 2 processes (MPI communicator) vs within one
# process (in-process communicator), same bytes, same run:
#   bash bench/mpi.sh [--max-mib N]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PARTITA_BUILD_DIR:-build}
cmake --build "$BUILD" --target partita-bench-mpi >/dev/null
exec mpirun --oversubscribe --allow-run-as-root -np 2 "$BUILD/bin/partita-bench-mpi" "$@"
