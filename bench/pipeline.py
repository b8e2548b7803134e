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

Collective bytes per step: per device, from the compiled programs (every
collective's bus bytes times how often it runs in a step: each stage
program once per micro-batch, the update once), the busiest pipeline rank
against the same model unpipelined on the same 8 devices (`partita compile
--train --report`), for dp and dp+tp. The gradients are summed over the
data axis once per step in both (docs/Pipeline.md, "Values on the
devices"); a pipeline rank holds a part of the model, so it reduces fewer
gradient bytes. What a rank sends to the next (activations, gradients:
point to point, not collectives) is left out here; pipeline.json gives it
per stage and micro-batch (sends_forward_bytes, sends_backward_bytes).

With --mpi it also runs the 1F1B step the compiler writes (`partita compile
--train --pp P -o DIR`) through `partita-exec train`: its P pipeline ranks as
threads of one process, and as P processes under mpirun (`--distributed`,
activations and gradients crossing processes as MPI messages), in the same
run; losses must agree.

    python3 bench/pipeline.py [--partita build/bin/partita] [--steps 6] [--mpi]
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


def median_step_seconds(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    seconds = [float(row["seconds"]) for row in rows]
    losses = [row["loss"] for row in rows]
    return statistics.median(seconds[1:] if len(seconds) > 1 else seconds), losses


def collective_bytes(partita, scratch):
    """The collective bytes per device per step table (see the docstring)."""
    model = os.path.join(scratch, "bytes.mlir")
    with open(model, "w") as f:
        gen = MODEL[2:]
        gen[gen.index("--batch") + 1] = str(32 // MICRO)
        subprocess.run([partita, "gen", "gpt", *gen], stdout=f, check=True)

    def report(extra, name):
        path = os.path.join(scratch, name)
        subprocess.run([partita, "compile", model, "--train", "--micro-batches",
                        str(MICRO), *extra, "--report", path], check=True,
                       stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)

    print()
    print("| rules | mesh | collectives per step | bytes per device per "
          "step | vs unpipelined |")
    print("|---|---|---|---|---|")
    for rules, flat, piped in (
            ("dp", "data=8", ("pipe=2,data=4", "pipe=4,data=2")),
            ("dp+tp", "data=4,model=2",
             ("pipe=2,data=2,model=2", "pipe=4,model=2"))):
        totals = report(["--mesh", flat, "--rules", rules],
                        f"flat-{rules}.json")["totals"]
        base = totals["bytes_per_device"]
        print(f"| {rules} | {flat} | {totals['collectives']} | {base:,.0f} | "
              f"1.00 |")
        for mesh in piped:
            pp = int(mesh.split(",")[0].split("=")[1])
            ranks = report(["--pp", str(pp), "--mesh", mesh, "--rules", rules],
                           f"pp-{rules}-{pp}.json")["per_rank"]
            busiest = max(ranks,
                          key=lambda r: r["collective_bytes_per_device_per_step"])
            moved = busiest["collective_bytes_per_device_per_step"]
            print(f"| {rules} | {mesh} (rank {busiest['rank']}) | "
                  f"{busiest['collectives_per_step']} | {moved:,.0f} | "
                  f"{moved / base:.2f} |")


def run_mpi(partita, steps, scratch):
    exe = os.path.join(os.path.dirname(partita), "partita-exec")
    model = os.path.join(scratch, "gpt.mlir")
    with open(model, "w") as f:
        # The module's batch is one micro-batch's: the step takes MICRO of
        # them, the same 32 rows as the table above.
        gen = MODEL[2:]
        gen[gen.index("--batch") + 1] = str(32 // MICRO)
        subprocess.run([partita, "gen", "gpt", *gen], stdout=f, check=True)
    print()
    print("| pp | one process, ranks as threads: step ms | P processes "
          "(mpirun): step ms | threads / processes |")
    print("|---|---|---|---|")
    for pp in (2, 4):
        step_dir = os.path.join(scratch, f"step{pp}")
        subprocess.run([partita, "compile", model, "--train", "--pp", str(pp),
                        "--mesh", f"pipe={pp},data={8 // pp}", "--rules", "dp",
                        "--micro-batches", str(MICRO), "-o", step_dir],
                       check=True, stdout=subprocess.DEVNULL)
        here = os.path.join(scratch, f"here{pp}.csv")
        there = os.path.join(scratch, f"mpi{pp}.csv")
        subprocess.run([exe, "train", step_dir, "--steps", str(steps),
                        "--losses", here], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["mpirun", "--oversubscribe", "--allow-run-as-root",
                        "-np", str(pp), exe, "train", step_dir, "--steps",
                        str(steps), "--distributed", "--losses", there],
                       check=True, stdout=subprocess.DEVNULL)
        threads, losses_here = median_step_seconds(here)
        processes, losses_there = median_step_seconds(there)
        if losses_here != losses_there:
            sys.exit(f"pp={pp}: losses differ: {losses_here} {losses_there}")
        print(f"| {pp} | {threads * 1e3:.1f} | {processes * 1e3:.1f} | "
              f"{threads / processes:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--mpi", action="store_true",
                        help="also pipeline ranks as processes under mpirun")
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
        collective_bytes(args.partita, scratch)
        if args.mpi:
            run_mpi(args.partita, args.steps, scratch)


if __name__ == "__main__":
    main()
