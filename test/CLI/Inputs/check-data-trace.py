"""Checks partita train's --data-trace: every data-parallel rank read only
its own rows of each batch, and no window was read twice in an epoch.

check-data-trace.py TRACE.csv RANKS BATCH WINDOWS
"""
import collections
import csv
import sys

path, ranks, batch, windows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows_per_rank = batch // ranks
seen = collections.defaultdict(set)
per_step = collections.Counter()
with open(path) as f:
    for line in csv.DictReader(f):
        step, epoch, rank, row, window = (int(line[k]) for k in ("step", "epoch", "rank", "row", "window"))
        if not rank * rows_per_rank <= row < (rank + 1) * rows_per_rank:
            sys.exit(f"step {step}: rank {rank} read row {row}, not one of its own")
        if window in seen[epoch]:
            sys.exit(f"epoch {epoch}: window {window} read twice")
        seen[epoch].add(window)
        per_step[step] += 1
if any(count != batch for count in per_step.values()):
    sys.exit("a step did not read a whole batch")
full = [e for e in seen if len(seen[e]) == (windows // batch) * batch]
if not full:
    sys.exit("no complete epoch in the trace")
print(f"{len(per_step)} steps, epochs {sorted(seen)}: every window once per epoch, every rank its own rows")
