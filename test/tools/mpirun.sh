#!/bin/sh
# mpiexec with a session directory of its own: lit runs tests in parallel,
# and two mpiexecs creating the same parent session directory under one
# TMPDIR at once could fail ("mkdir ... File exists"). The directory is
# made under TMPDIR (lit's, removed when lit ends); exec keeps signals
# (timeout's) going to mpiexec itself. Usage:
#   sh test/tools/mpirun.sh MPIEXEC [mpiexec arguments...]
mpiexec=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/partita-mpi.XXXXXX") || exit 1
exec "$mpiexec" --mca orte_tmpdir_base "$dir" "$@"
