"""Checks the figures of partita train --pp's pipeline.json.

  check-pipeline.py REPORT formula          bubble_fraction == bubble_formula
  check-pipeline.py REPORT held RANK N      rank RANK holds N micro-batches at
                                            peak, by the schedule and measured
  check-pipeline.py REPORT balanced F       the stages' forward FLOPs are
                                            within a fraction F of each other
  check-pipeline.py LOWER HIGHER bubble     LOWER's bubble < HIGHER's
  check-pipeline.py LESS MORE bytes         LESS's rank 0 holds fewer bytes
                                            at peak than MORE's (measured)
  check-pipeline.py LESS MORE saved         every stage of LESS saves fewer
                                            activation bytes per micro-batch
                                            than MORE's
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    args = sys.argv[1:]
    if args[1] == "formula":
        report = load(args[0])
        fraction, formula = report["bubble_fraction"], report["bubble_formula"]
        if formula is None or abs(fraction - formula) > 1e-12:
            sys.exit(f"bubble {fraction} differs from the formula {formula}")
        print(f"bubble {fraction:.6f} equals the formula")
    elif args[1] == "held":
        report = load(args[0])
        rank, expected = int(args[2]), int(args[3])
        row = report["per_rank"][rank]
        got = (row["peak_micro_batches_held"],
               row["measured_peak_micro_batches_held"])
        if got != (expected, expected):
            sys.exit(f"rank {rank} holds {got} micro-batches, expected {expected}")
        print(f"rank {rank} holds {expected} micro-batches at peak")
    elif args[1] == "balanced":
        report = load(args[0])
        flops = [stage["forward_flops"] for stage in report["stages"]]
        spread = max(flops) / min(flops) - 1
        if spread > float(args[2]):
            sys.exit(f"stage FLOPs {flops} differ by {spread:.3f}")
        print(f"stage FLOPs within {spread:.4f}")
    elif args[2] == "bubble":
        lower, higher = load(args[0]), load(args[1])
        if not lower["bubble_fraction"] < higher["bubble_fraction"]:
            sys.exit(f"bubble {lower['bubble_fraction']} is not below "
                     f"{higher['bubble_fraction']}")
        print("bubble lower")
    elif args[2] == "bytes":
        less, more = load(args[0]), load(args[1])
        a = less["per_rank"][0]["measured_peak_held_bytes"]
        b = more["per_rank"][0]["measured_peak_held_bytes"]
        if not a < b:
            sys.exit(f"rank 0 holds {a} bytes at peak, not fewer than {b}")
        print(f"rank 0 holds {a} < {b} bytes at peak")
    elif args[2] == "saved":
        less, more = load(args[0]), load(args[1])
        key = "activation_bytes_per_micro_batch"
        a = [stage[key] for stage in less["stages"]]
        b = [stage[key] for stage in more["stages"]]
        if len(a) != len(b) or not all(x < y for x, y in zip(a, b)):
            sys.exit(f"stages save {a} bytes per micro-batch, not fewer "
                     f"than {b}")
        print(f"stages save {a} < {b} bytes per micro-batch")
    else:
        sys.exit("unknown check")


main()
