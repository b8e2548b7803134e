#!/bin/sh
# Trains one layout three times — in one process, then as 2 and 4 processes
# under mpirun ($PROCESSES, when set, lists the counts) — for 4 steps, and
# fails unless the loss columns are identical. Usage:
#   sh same_losses.sh "MPIRUN" BIN NAME [partita train flags...]
# writes NAME-1, NAME-2, NAME-4 (output directories) and their logs.
mpirun=$1
bin=$2
name=$3
shift 3
"$bin/partita" train "$@" --steps 4 --output "$name-1" > "$name-1.log" 2>&1 || {
  echo "one process failed:"; cat "$name-1.log"; exit 1; }
cut -d, -f1,2 "$name-1/loss.csv" > "$name-1.losses"
for np in ${PROCESSES:-2 4}; do
  $mpirun -np $np "$bin/partita" train "$@" --steps 4 --output "$name-$np" \
    --distributed > "$name-$np.log" 2>&1 || {
    echo "$np processes failed:"; cat "$name-$np.log"; exit 1; }
  cut -d, -f1,2 "$name-$np/loss.csv" > "$name-$np.losses"
  if ! cmp -s "$name-1.losses" "$name-$np.losses"; then
    echo "$name: the losses of $np processes differ from one process's:"
    paste -d' ' "$name-1.losses" "$name-$np.losses"
    exit 1
  fi
done
echo "$name: 1 and ${PROCESSES:-2 4} processes have the same losses"
