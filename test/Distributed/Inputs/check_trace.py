"""Checks the data traces of a token-file run: trace.csv (one process) and
trace.csv.<p> (process p of P). Each process must have read only the rows
of one data rank (its own: process p reads rank p when every process holds
one data rank), and together exactly the windows one process read."""
import sys

base, processes = sys.argv[1], int(sys.argv[2])


def rows(path):
    with open(path) as f:
        next(f)
        return [tuple(line.strip().split(",")) for line in f if line.strip()]


one = sorted(rows(base))
together = []
for p in range(processes):
    mine = rows(f"{base}.{p}")
    ranks = sorted({row[2] for row in mine})
    if ranks != [str(p)]:
        sys.exit(f"process {p} read the rows of ranks {ranks}")
    print(f"process {p} read rank {p} only")
    together += mine
if sorted(together) != one:
    sys.exit("the processes did not read what one process read")
print("the processes read every window one process read, once")
