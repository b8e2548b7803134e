"""Runs the post-training demo chain and checks what it must learn.

The chain is docs/Training.md's (and the README's): pre-train a small GPT
on docs/examples/sft/pretrain.bin, fine-tune it on responses (SFT), then
DPO against the fine-tuned model. It is run once per CPU GEMM kernel —
OpenBLAS as it picks itself, OpenBLAS forced to each kernel this CPU can
run (OPENBLAS_CORETYPE), and the runtime's built-in GEMM
(PARTITA_GEMM=builtin) — because the rounding of a sum depends on the
kernel, and a result that holds on one trajectory only is no result.

Every property is checked with a margin measured across kernels and seeds
(docs/Training.md, "The demo chain"); the figures of each run are printed
as one row of a table.

    python3 tools/training-chain.py [--bin build/bin] [--kernels all]
        [--layout "--mesh data=2,model=4 --rules dp+tp"] [--seed S]

Exit status 0 when every run holds every property, 1 otherwise.
"""
import argparse
import csv
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "docs", "examples", "sft")

# The chain's flags, as docs/Training.md and the README write them.
PRETRAIN = ("--data pretrain.bin --batch 32 --steps 600 --lr 3e-3 "
            "--lr-schedule cosine --warmup 50 --min-lr 3e-4 "
            "--checkpoint-dir pre")
SFT = ("--objective sft --data train.txt --init-from pre --steps 60 "
       "--lr 3e-3 --lr-schedule cosine --min-lr 3e-4 --eval-every 20 "
       "--eval-data heldout.txt --checkpoint-dir sft")
DPO = ("--objective dpo --data prefs.txt --reference sft --steps 40 "
       "--lr 3e-3 --eval-every 20 --eval-data prefs-heldout.txt")

# OpenBLAS kernels and the CPU flags each needs (Debian's build picks one at
# run time; OPENBLAS_CORETYPE forces it, and a kernel whose instructions the
# CPU lacks would die of SIGILL).
OPENBLAS_KERNELS = [
    ("Prescott", {"pni"}),  # SSE3, as /proc/cpuinfo names it
    ("Sandybridge", {"avx"}),
    ("Haswell", {"avx2", "fma"}),
    ("SkylakeX", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}),
]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def kernels_to_run(wanted):
    """(name, extra environment) of each kernel to try."""
    flags = cpu_flags()
    runnable = ["default"] + [name for name, needs in OPENBLAS_KERNELS
                              if needs <= flags] + ["builtin"]
    if wanted == "all":
        chosen = runnable
    else:
        chosen = []
        for name in wanted.split(","):
            match = [k for k in runnable if k.lower() == name.lower()]
            if not match:
                sys.exit(f"error: kernel '{name}' is not one this CPU can "
                         f"run ({', '.join(runnable)})")
            chosen += match
    result = []
    for name in chosen:
        if name == "default":
            result.append((name, {}))
        elif name == "builtin":
            result.append((name, {"PARTITA_GEMM": "builtin"}))
        else:
            result.append((name, {"OPENBLAS_CORETYPE": name}))
    return result


def column(path, key):
    with open(path) as f:
        return [float(row[key]) for row in csv.DictReader(f)]


def run_chain(partita, layout, seed, env, work):
    """Runs the three commands in `work`; returns the figures."""
    for name in ("pretrain.bin", "train.txt", "heldout.txt", "prefs.txt",
                 "prefs-heldout.txt"):
        shutil.copy(os.path.join(DATA, name), work)
    common = ["--model", "gpt", "--seed", str(seed)] + shlex.split(layout)
    outputs = {}
    for stage, flags in (("pre", PRETRAIN), ("sft", SFT), ("dpo", DPO)):
        command = [partita, "train"] + common + shlex.split(flags) + [
            "--output", stage + ".out"]
        done = subprocess.run(command, cwd=work, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise RuntimeError(f"{stage}: exit {done.returncode}: "
                               f"{done.stderr.strip()[-400:]}")
        outputs[stage] = done.stdout
    pre = column(os.path.join(work, "pre.out", "loss.csv"), "loss")
    sft = column(os.path.join(work, "sft.out", "loss.csv"), "loss")
    held = column(os.path.join(work, "sft.out", "eval.csv"), "eval_loss")
    dpo = column(os.path.join(work, "dpo.out", "loss.csv"), "loss")
    margins, preferred = [], []
    for line in outputs["dpo"].splitlines():
        if "held-out margin" in line:
            margins.append(float(line.split("margin ")[1].split(",")[0]))
            preferred.append(line.split("preferred in ")[1].split(" ")[0])
    return {
        "pre_first": pre[0],
        "pre_last": sum(pre[-20:]) / len(pre[-20:]),
        "sft_first": sft[0],
        "held": held,
        "dpo_first": dpo[0],
        "dpo_last": dpo[-1],
        "margins": margins,
        "preferred": preferred,
    }


def violations(f):
    """What `f` breaks of the chain's properties (docs/Training.md)."""
    broken = []

    def need(ok, what):
        if not ok:
            broken.append(what)

    # The plateau of a model that has not learnt the reversal is ~2.45; the
    # floor (five unpredictable prompt tokens of sixteen targets) is 1.22.
    need(f["pre_last"] < 1.30, f"pre-training ends at {f['pre_last']:.3f}, "
         "not below 1.30 (the reversal is not learnt)")
    # Fine-tuning starts where pre-training got (4.8 from scratch).
    need(f["sft_first"] < 0.2,
         f"SFT's first response loss is {f['sft_first']:.3f}, not below 0.2")
    held = f["held"]
    need(len(held) == 3, f"{len(held)} SFT evaluations, not 3")
    if held:
        need(held[-1] < 0.7 * held[0] and held[-1] < 0.05,
             "SFT's held-out response loss goes " +
             " -> ".join(f"{h:.3f}" for h in held) +
             ": not below 0.7 times its first value and 0.05")
    need(abs(f["dpo_first"] - math.log(2)) < 1e-6,
         f"DPO's first loss is {f['dpo_first']:.7f}, not ln 2")
    need(f["dpo_last"] < 0.75 * f["dpo_first"],
         f"DPO's loss ends at {f['dpo_last']:.4f}, not below 0.75 ln 2")
    margins = f["margins"]
    need(len(margins) == 2 and 0 < margins[0] < margins[1],
         f"DPO's held-out margins {margins} do not rise from above 0")
    need(bool(f["preferred"]) and f["preferred"][-1] == "32/32",
         f"DPO prefers the chosen answer in {f['preferred']} of 32 pairs")
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "build",
                                                      "bin"),
                        help="the folder holding partita [build/bin]")
    parser.add_argument("--kernels", default="all",
                        help="comma-separated: default, Prescott, "
                        "Sandybridge, Haswell, SkylakeX, builtin; or all "
                        "(those this CPU can run) [all]")
    parser.add_argument("--layout", default="",
                        help="mesh and rules flags [the defaults: cpu:8, "
                        "data=8, dp]")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    partita = os.path.join(args.bin, "partita")
    if not os.access(partita, os.X_OK):
        sys.exit(f"error: no partita at {partita} (build first, or give "
                 "--bin)")

    print(f"layout: {args.layout or 'defaults'}, seed {args.seed}")
    print(f"{'kernel':12s} {'pre-train':>15s} {'SFT first':>9s} "
          f"{'SFT held-out':>20s} {'DPO loss':>15s} {'DPO margin':>13s}")
    return run_on_kernels(
        args.kernels, "chain-",
        lambda env, work: run_chain(partita, args.layout, args.seed, env,
                                    work),
        row, violations)


def row(f):
    """The table's row of one kernel's figures (after its name)."""
    held = " ".join(f"{h:.3f}" for h in f["held"])
    margins = " ".join(f"{m:.2f}" for m in f["margins"])
    return (f"{f['pre_first']:6.3f} -> {f['pre_last']:5.3f} "
            f"{f['sft_first']:9.3f} {held:>20s} "
            f"{f['dpo_first']:.4f} -> {f['dpo_last']:.3f} {margins:>13s}")


def run_on_kernels(kernels, prefix, run, row, violations):
    """Runs `run(env, work)` once per kernel of `kernels` in a scratch
    directory, prints `row` of its figures and what `violations` finds;
    exit status 0 when every run holds every property."""
    failed = 0
    for name, extra in kernels_to_run(kernels):
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("PARTITA_GEMM", None)
        env.update(extra)
        with tempfile.TemporaryDirectory(prefix=prefix) as work:
            try:
                f = run(env, work)
            except RuntimeError as error:
                print(f"{name:12s} FAILED to run: {error}")
                failed += 1
                continue
        print(f"{name:12s} {row(f)}")
        for problem in violations(f):
            print(f"  FAILED: {problem}")
            failed += 1
    if failed:
        print(f"{failed} properties broken")
        return 1
    print("every property holds on every kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
