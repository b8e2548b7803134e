"""Compares two loss.csv files of partita train step by step.

compare-losses.py REFERENCE.csv OTHER.csv [--falls] [--tolerance T]
                  [--column NAME]
Compares the column `loss` (or NAME: eval.csv's eval_loss). Exits 1 when the runs differ by more than T (relative, default 1e-4) at any
step, or, with --falls, when the loss did not fall from the first step to
the last.
"""
import argparse
import csv
import sys

parser = argparse.ArgumentParser()
parser.add_argument("reference")
parser.add_argument("other")
parser.add_argument("--falls", action="store_true")
parser.add_argument("--tolerance", type=float, default=1e-4)
parser.add_argument("--column", default="loss")
args = parser.parse_args()

def losses(path):
    with open(path) as f:
        return [float(row[args.column]) for row in csv.DictReader(f)]

a, b = losses(args.reference), losses(args.other)
if len(a) != len(b) or not a:
    sys.exit(f"different step counts: {len(a)} and {len(b)}")
for step, (x, y) in enumerate(zip(a, b), 1):
    if not abs(x - y) <= args.tolerance * max(1.0, abs(x)):  # NaN fails
        sys.exit(f"step {step}: loss {y} against {x}")
if args.falls and not b[-1] < b[0]:
    sys.exit(f"the loss did not fall: {b[0]} -> {b[-1]}")
print(f"{len(a)} steps agree; loss {a[0]} -> {a[-1]}")
