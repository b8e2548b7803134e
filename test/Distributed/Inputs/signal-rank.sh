# signal-rank.sh RANK SIGNAL COMMAND...: runs COMMAND as this MPI rank;
# on rank RANK, sends SIGNAL to it a second after it starts (tests of what
# the other ranks do when one is stopped or killed).
rank=$1 signal=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then
  (sleep 1; kill -"$signal" $$) &
fi
exec "$@"
