"""Overlapping communication: exposed collective time with and without
asynchronous collectives, on dp and fsdp train steps of a small GPT.

Each configuration is compiled twice (`partita compile --train --stage
executable`, with and without --no-overlap) and run by `partita-exec run
--repeat R`, which prints device 0's medians per step: computing (kernels),
communicating (collectives in flight, start to data complete) and exposed
(the part of that the device spent inside collective calls instead of
computing), and of that the time it waited for peers to arrive (skew:
another device still computing, which is load imbalance, not data
movement). The two variants of a configuration alternate --rounds times in
the same run; the table gives the medians over rounds.

Read exposed/comm with the skew column: when a peer arrives late, the
collective is "in flight" from this device's start to the peer's arrival,
so communicating grows by the skew and the fraction shrinks without any
data having moved sooner. On cpu:2 the copies themselves are CPU work
that can only take a core from a device.

On cpu:8 (8 emulated devices on this machine's cores) a device mostly waits
for peers that share its cores, so little can hide; cpu:2 gives each device
a core of its own.

    python3 bench/overlap.py [--partita build/bin/partita]
                             [--exec build/bin/partita-exec] [--rounds 3]
                             [--repeat 12]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

MODEL = ["--layers", "2", "--d-model", "128", "--heads", "4", "--seq", "64",
         "--batch", "16", "--vocab", "256"]
CONFIGS = [  # (devices, mesh, rules)
    ("cpu:2", "data=2", "dp"),
    ("cpu:2", "data=2", "fsdp"),
    ("cpu:8", "data=2,model=4", "dp"),
    ("cpu:8", "data=2,model=4", "fsdp"),
]
TIMES = re.compile(r"computing ([0-9.]+) ms, communicating ([0-9.]+) ms, "
                   r"exposed ([0-9.]+) ms")
SKEW = re.compile(r"waiting for other devices ([0-9.]+) ms")
STEP = re.compile(r"step: median ([0-9.]+) ms")


def compile_step(partita, model, mesh, rules, overlap, path):
    command = [partita, "compile", model, "--train", "--optimizer", "adamw",
               "--mesh", mesh, "--rules", rules, "--stage", "executable",
               "-o", path]
    if not overlap:
        command.append("--no-overlap")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def measure(executable, path, repeat):
    out = subprocess.run([executable, "run", path, "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    times = TIMES.search(out)
    step = STEP.search(out)
    if not times or not step:
        raise SystemExit("unexpected partita-exec output:\n" + out)
    computing, communicating, exposed = (float(x) for x in times.groups())
    skew = SKEW.search(out)
    return dict(step=float(step.group(1)), computing=computing,
                communicating=communicating, exposed=exposed,
                skew=float(skew.group(1)) if skew else float("nan"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--exec", dest="executable",
                        default="build/bin/partita-exec")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=12)
    args = parser.parse_args()
    print(f"# GPT {' '.join(MODEL)}, AdamW; {os.cpu_count()} hardware threads;"
          f" medians of {args.rounds} rounds of partita-exec run --repeat"
          f" {args.repeat}")
    print(f"{'devices':7} {'rules':5} {'overlap':7} {'step ms':>8} "
          f"{'compute':>8} {'comm':>8} {'exposed':>8} {'skew':>8} "
          f"{'exposed/comm':>12}")
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for devices, mesh, rules in CONFIGS:
            model = os.path.join(tmp, f"gpt-{rules}-{mesh}.mlir")
            subprocess.run([args.partita, "gen", "gpt", *MODEL, "-o", model],
                           check=True)
            paths = {}
            for overlap in (True, False):
                paths[overlap] = os.path.join(
                    tmp, f"{rules}-{mesh}-{int(overlap)}.exe")
                compile_step(args.partita, model, mesh, rules, overlap,
                             paths[overlap])
            runs = {True: [], False: []}
            for _ in range(args.rounds):
                for overlap in (True, False):
                    runs[overlap].append(
                        measure(args.executable, paths[overlap], args.repeat))
            fractions = {}
            for overlap in (True, False):
                med = {k: statistics.median(r[k] for r in runs[overlap])
                       for k in runs[overlap][0]}
                fraction = med["exposed"] / med["communicating"] \
                    if med["communicating"] > 0 else float("nan")
                fractions[overlap] = fraction
                print(f"{devices:7} {rules:5} {'on' if overlap else 'off':7} "
                      f"{med['step']:8.2f} {med['computing']:8.2f} "
                      f"{med['communicating']:8.2f} {med['exposed']:8.2f} "
                      f"{med['skew']:8.2f} {fraction:12.2f}")
            verdicts.append((devices, rules, fractions[True], fractions[False]))
    print("# exposed fraction with overlap (goal for dp: at most 0.5) vs without:")
    for devices, rules, on, off in verdicts:
        goal = " (goal met)" if rules == "dp" and on <= 0.5 else \
            (" (goal not met)" if rules == "dp" else "")
        print(f"#   {devices} {rules}: {on:.2f} vs {off:.2f}{goal}")


if __name__ == "__main__":
    sys.exit(main())
