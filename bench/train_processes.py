"""Training across processes: tokens per second of `partita train` in one
process against the same layout and devices as 2 and 4 processes under
mpirun (`--distributed`), with the losses compared (they must be equal).

Each configuration trains --steps steps of a GPT (default: 2 layers,
D = 256, seq 64, batch 16) on cpu:8 and reports the median step time of
the steps after the first. On one host the processes share its cores (the
peer is the one-process run on the same cores): the figure is the cost of
the processes' boundaries — cross-process collectives over MPI instead of
shared memory — not a speed-up.

    python3 bench/train_processes.py [--partita build/bin/partita]
                                     [--steps 12] [--repeats 3]
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

LAYOUTS = [
    ("dp", ["--mesh", "data=8", "--rules", "dp"]),
    ("fsdp", ["--mesh", "data=8", "--rules", "fsdp"]),
    ("dp+tp", ["--mesh", "data=2,model=4", "--rules", "dp+tp"]),
]


def train(args, scratch, name, layout, processes):
    out = os.path.join(scratch, name)
    command = [args.partita, "train", "--model", "gpt", "--layers",
               str(args.layers), "--d-model", str(args.d_model), "--seq",
               str(args.seq), "--batch", str(args.batch), "--devices",
               "cpu:8", "--steps", str(args.steps), "--output", out, *layout]
    if processes > 1:
        command = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np",
                   str(processes), *command, "--distributed"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    with open(os.path.join(out, "loss.csv")) as f:
        rows = list(csv.DictReader(f))
    return [row["loss"] for row in rows], [float(r["seconds"]) for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    tokens = args.batch * args.seq
    print(f"GPT {args.layers} layers, D {args.d_model}, seq {args.seq}, "
          f"batch {args.batch}, cpu:8, {args.steps} steps, median of "
          f"{args.repeats} runs each")
    print("| layout | processes | tokens/s | against 1 process | losses |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, layout in LAYOUTS:
            base_losses, base = None, None
            for processes in (1, 2, 4):
                medians, losses = [], None
                for r in range(args.repeats):
                    losses, seconds = train(args, scratch,
                                            f"{name}-{processes}-{r}",
                                            layout, processes)
                    medians.append(statistics.median(seconds[1:]))
                step = statistics.median(medians)
                if processes == 1:
                    base_losses, base = losses, step
                same = "equal" if losses == base_losses else "DIFFER"
                print(f"| {name} | {processes} | {tokens / step:,.0f} | "
                      f"{base / step:.2f}x | {same} |")


if __name__ == "__main__":
    main()
