"""Pipeline parallelism: measured bubbles against the formulas, and tokens/s
of pp=2 and pp=4 against the same model without pipelining, on cpu:8.

Every configuration trains the same GPT (8 layers, D = 128, 4 heads,
sequence 64, batch 32, vocabulary 256; AdamW) through `partita train` for
--steps steps with 8 micro-batches; the figures are medians over the steps
after the first. The bubble is the runtime's: idle time over the step's time
per rank, from each action's start and end, averaged over ranks (the last
step's timeline, written to pipeline.json). The peer is Partita without
pipelining in the same run: data parallelism over the 8 devices with the
same 8 micro-batches of gradient accumulation (`--mesh data=8`).

    python3 bench/pipeline.py [--partita build/bin/partita] [--steps 6]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

MODEL = ["--model", "gpt", "--layers", "8", "--d-model", "128", "--heads", "4",
         "--seq", "64", "--batch", "32", "--vocab", "256"]
MICRO = 8


def run(partita, steps, mesh, extra, output):
    command = [partita, "train", *MODEL, "--devices", "cpu:8", "--mesh", mesh,
               "--rules", "dp", "--micro-batches", str(MICRO), "--steps",
               str(steps), "--output", output, *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    with open(os.path.join(output, "loss.csv")) as f:
        seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    step = statistics.median(seconds[1:] if len(seconds) > 1 else seconds)
    report = None
    path = os.path.join(output, "pipeline.json")
    if os.path.exists(path):
        with open(path) as f:
            report = json.load(f)
    return step, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    tokens = 32 * 64
    with tempfile.TemporaryDirectory() as scratch:
        base, _ = run(args.partita, args.steps, "data=8", [],
                      os.path.join(scratch, "base"))
        print(f"GPT 8 layers, D 128, batch 32 x 64 tokens, {MICRO} "
              f"micro-batches, cpu:8, median of {args.steps - 1} steps")
        print(f"no pipelining (data=8): {tokens / base:,.0f} tokens/s")
        print()
        print("| pp | schedule | bubble formula | bubble simulated | "
              "bubble measured | rank 0 peak bytes | tokens/s | vs data=8 |")
        print("|---|---|---|---|---|---|---|---|")
        for pp in (2, 4):
            for schedule in ("gpipe", "1f1b", "interleaved", "zb"):
                mesh = f"pipe={pp},data={8 // pp}"
                step, report = run(args.partita, args.steps, mesh,
                                   ["--schedule", schedule],
                                   os.path.join(scratch, f"{pp}{schedule}"))
                formula = report["bubble_formula"]
                print(f"| {pp} | {schedule} | "
                      f"{'-' if formula is None else f'{formula:.3f}'} | "
                      f"{report['bubble_fraction']:.3f} | "
                      f"{report['measured_bubble_fraction']:.3f} | "
                      f"{report['per_rank'][0]['measured_peak_held_bytes']:,} | "
                      f"{tokens / step:,.0f} | {base / step:.2f} |")


if __name__ == "__main__":
    main()
