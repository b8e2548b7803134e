#!/usr/bin/env python3
"""Does `partita plan` rank layouts as they measure?

    python3 bench/plan_ranking.py [--partita build/bin/partita]
        [--interconnect cluster.json | --calibrate] [--plans 12] [--steps 8]
        [--repeats 1] [-- MODEL FLAGS...]

Plans a model on cpu:8 (`partita plan --explain`), takes PLANS layouts
evenly spaced in the predicted order (fastest, slowest and between), trains
each with `partita train` for STEPS steps and takes the median step time of
steps 3..STEPS (the first two warm caches and threads), then prints the
predicted and measured step times side by side and the Spearman rank
correlation between them (docs/Planning.md, "Proving the prediction").
With --calibrate the cluster file comes from `partita calibrate` run first,
in the same run. With --mpi P the layouts (pipelined ones left out) run
under MPI instead: each train step compiled to an Executable and run by P
processes, each driving its share of the devices (`mpirun -np P
partita-exec run --distributed --repeat STEPS`), the median run timed by
the runtime. With --repeats R each layout is trained R times (in
round-robin order, so a slow spell of the machine touches every layout) and
the median of the R medians is kept.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+([\d.]+)\s+"
                 r"([\d.]+)\s+([\d.]+)\s")


def ranks(values):
    """Average ranks (ties share the mean of their positions)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a, b):
    """Pearson correlation of the ranks."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else 0.0


def plan_batch(plan):
    """The global batch `partita plan` printed."""
    return re.search(r"global batch (\d+)", plan)[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--interconnect", default="")
    parser.add_argument("--calibrate", action="store_true",
                        help="measure this machine with partita calibrate "
                             "first and plan with its cluster file")
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--plans", type=int, default=12)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--mpi", type=int, default=0,
                        help="run each layout as P MPI processes")
    parser.add_argument("--mpirun", default="mpirun --oversubscribe "
                        "--allow-run-as-root")
    parser.add_argument("model", nargs="*",
                        help="gen's model flags, after --")
    args = parser.parse_args()
    model = args.model or ["--model", "gpt"]
    if "--model" not in model:
        model = ["--model", "gpt"] + model
    work = tempfile.mkdtemp(prefix="plan-ranking-")
    try:
        run(args, model, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, model, work):
    cluster = args.interconnect
    if args.calibrate:
        cluster = os.path.join(work, "cluster.json")
        subprocess.run([args.partita, "calibrate", "--devices",
                        f"cpu:{args.devices}", "-o", cluster], check=True,
                       stdout=sys.stderr)
    plan_cmd = [args.partita, "plan", *model, "--devices",
                str(args.devices), "--explain"]
    if cluster:
        plan_cmd += ["--interconnect", cluster]
    plan = subprocess.run(plan_cmd, check=True, capture_output=True,
                          text=True).stdout
    rows = []
    for line in plan.splitlines():
        m = ROW.match(line)
        if m:
            # A pipelined layout's rules carry its schedule: "tp/1f1b".
            rules, _, schedule = m[3].partition("/")
            rows.append({"mesh": m[2], "rules": rules,
                         "schedule": schedule or "1f1b", "micro": m[4],
                         "remat": m[5], "predicted": float(m[6])})
    if args.mpi:
        rows = [r for r in rows if not r["mesh"].startswith("pipe=")]
    if len(rows) < 2:
        sys.exit("plan printed fewer than two layouts that fit:\n" + plan)
    n = min(args.plans, len(rows))
    picked = [rows[round(i * (len(rows) - 1) / (n - 1))] for i in range(n)]
    # Batch flag: plan's global batch is the model's --batch.
    measured = {id(r): [] for r in picked}
    executables = {}
    if args.mpi:
        exec_tool = os.path.join(os.path.dirname(args.partita), "partita-exec")
        for k, r in enumerate(picked):
            source = os.path.join(work, f"step{k}.mlir")
            exe = os.path.join(work, f"step{k}.exe")
            flags = model[2:]
            batch = ["--batch", str(int(plan_batch(plan)) // int(r["micro"]))]
            subprocess.run([args.partita, "gen", model[1], *flags, *batch,
                            "--mesh", r["mesh"], "-o", source], check=True,
                           capture_output=True)
            subprocess.run([args.partita, "compile", source, "--train",
                            "--optimizer", "adamw", "--lr", "1e-3",
                            "--rules", r["rules"], "--micro-batches",
                            r["micro"], "--remat", r["remat"], "--stage",
                            "executable", "-o", exe], check=True,
                           capture_output=True)
            executables[id(r)] = exe
    for repeat in range(args.repeats):
        for r in picked:
            if args.mpi:
                run = subprocess.run(
                    [*args.mpirun.split(), "-np", str(args.mpi), exec_tool,
                     "run", executables[id(r)], "--distributed", "--repeat",
                     str(args.steps)],
                    check=True, capture_output=True, text=True).stdout
                ms = re.search(r"step: median ([\d.]+) ms", run)
                measured[id(r)].append(float(ms[1]) / 1e3)
                continue
            out = os.path.join(work, "train")
            cmd = [args.partita, "train", *model, "--devices",
                   f"cpu:{args.devices}", "--mesh", r["mesh"], "--rules",
                   r["rules"], "--micro-batches", r["micro"], "--remat",
                   r["remat"], "--steps", str(args.steps), "--output", out,
                   "--trace", os.path.join(out, "trace.json")]
            if r["mesh"].startswith("pipe="):
                pipe = r["mesh"].split(",")[0].split("=")[1]
                cmd += ["--pp", pipe, "--schedule", r["schedule"]]
            subprocess.run(cmd, check=True, capture_output=True)
            with open(os.path.join(out, "loss.csv")) as f:
                seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
            measured[id(r)].append(statistics.median(seconds[2:] or seconds))
    print(f"plan: {' '.join(model)} on cpu:{args.devices}"
          + (f" as {args.mpi} MPI processes" if args.mpi else "")
          + (", calibrated in this run" if args.calibrate else
             f", cluster {cluster}" if cluster else ", default cluster"))
    print(f"{'mesh':22} {'rules':8} {'micro':>5} {'remat':9} "
          f"{'predicted ms':>12} {'measured ms':>12}")
    predicted, actual = [], []
    for r in picked:
        m = statistics.median(measured[id(r)]) * 1e3
        predicted.append(r["predicted"])
        actual.append(m)
        rules = r["rules"] + ("/" + r["schedule"]
                              if r["mesh"].startswith("pipe=") else "")
        print(f"{r['mesh']:22} {rules:8} {r['micro']:>5} "
              f"{r['remat']:9} {r['predicted']:12.3f} {m:12.3f}")
    print(f"spearman {spearman(predicted, actual):.3f} over {n} layouts "
          f"({len(rows)} fit)")


if __name__ == "__main__":
    main()
