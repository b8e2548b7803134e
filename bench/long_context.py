"""Long sequences on 8 emulated CPU devices: context parallelism (ring and
Ulysses) against tensor + sequence parallelism and data parallelism.

The same small GPT (4 layers, d 256, 8 heads, vocabulary 1,024, global
batch 8) for every layout, on cpu:8:

  dp       data=8        each device a whole sequence, attention whole
  tp+sp    model=8       heads over model, the residual stream split along
                         the sequence between blocks (Megatron SP)
  cp ring  context=8     the sequence split through attention; keys and
                         values travel around the ring
  ulysses  context=8     the sequence split, an all_to_all to a head split
                         around attention

Three tables, one run:
  1. the planned peak bytes per device (`partita compile --train --report`)
     for sequences of 1 K to 32 K;
  2. `partita train` at the shorter lengths: tokens/s (median step after
     the first), the process's measured peak resident memory and the
     prediction, beside JAX's data-parallel step at the same shapes (its
     tokens/s and peak resident memory; ratios are Partita's over JAX's);
  3. the longest sequence whose planned peak fits a per-device budget,
     per layout (global batch 8) and for cp = 1, 2, 4, 8 (mesh data=8/cp,
     context=cp, one sequence per data-parallel group).

    python3 bench/long_context.py [--partita build/bin/partita]
        [--run-lengths 1024,2048] [--budget-gib 1] [--python PY]

JAX comes from build/pyenv-latest (tools/setup-jax.sh --latest build) or
--python; without it the JAX columns say so.
"""
import argparse
import csv
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from jax_gpt import find_jax_python  # noqa: E402

MODEL = dict(layers=4, d_model=256, heads=8, batch=8, vocab=1024, mlp_ratio=4)
LAYOUTS = {
    "dp": ("data=8", "dp", "ring"),
    "tp+sp": ("model=8", "tp+sp", "ring"),
    "cp ring": ("context=8", "cp", "ring"),
    "ulysses": ("context=8", "cp", "ulysses"),
}
GIB = 1 << 30


def model_flags(seq, batch=MODEL["batch"]):
    return ["--model", "gpt", "--layers", str(MODEL["layers"]),
            "--d-model", str(MODEL["d_model"]), "--heads", str(MODEL["heads"]),
            "--batch", str(batch), "--vocab", str(MODEL["vocab"]),
            "--mlp-ratio", str(MODEL["mlp_ratio"]), "--seq", str(seq)]


def planned_peak(partita, mesh, rules, attention, seq, scratch,
                 batch=MODEL["batch"]):
    """The plan's peak bytes per device of the train step, or None when the
    layout does not take this length."""
    program = os.path.join(scratch, "model.mlir")
    report = os.path.join(scratch, "report.json")
    flags = model_flags(seq, batch)[2:]
    gen = subprocess.run([partita, "gen", "gpt", *flags, "--mesh", mesh,
                          "--rules", rules, "--context-attention", attention],
                         capture_output=True, text=True)
    if gen.returncode != 0:
        return None
    with open(program, "w") as f:
        f.write(gen.stdout)
    done = subprocess.run([partita, "compile", program, "--train", "--report",
                           report], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    with open(report) as f:
        return json.load(f)["memory"]["peak_bytes_per_device"]


def longest(partita, mesh, rules, attention, budget, scratch,
            batch=MODEL["batch"], step=1024):
    """The longest multiple of `step` whose planned peak fits `budget`."""
    fits, seq = 0, step
    while seq <= 1 << 20:
        peak = planned_peak(partita, mesh, rules, attention, seq, scratch, batch)
        if peak is None or peak > budget:
            break
        fits, seq = seq, seq * 2
    low, high = fits, seq
    while high - low > step:
        middle = (low + high) // 2 // step * step
        peak = planned_peak(partita, mesh, rules, attention, middle, scratch,
                            batch)
        if peak is not None and peak <= budget:
            low = middle
        else:
            high = middle
    return low


def partita_run(partita, mesh, rules, attention, seq, steps):
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [partita, "train", *model_flags(seq), "--devices", "cpu:8",
             "--mesh", mesh, "--rules", rules, "--context-attention", attention,
             "--steps", str(steps), "--output", out],
            capture_output=True, text=True)
        text = done.stdout + done.stderr
        if done.returncode != 0:
            last = [line for line in text.splitlines() if "error" in line]
            return dict(error=(last or text.splitlines()[-1:] or ["killed"])[0])
        with open(os.path.join(out, "loss.csv")) as f:
            seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    peak = re.search(r"peak resident memory ([\d.]+) GiB \(predicted ([\d.]+) GiB\)",
                     text)
    return dict(tokens=MODEL["batch"] * seq / statistics.median(seconds[1:]),
                rss=float(peak.group(1)), predicted=float(peak.group(2)))


def jax_child(seq, steps):
    """JAX's data-parallel step at this length: prints tokens/s and the peak
    resident memory in GiB."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax_gpt import parameter_layouts, train_step

    c = dict(MODEL, seq=seq)
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(8, 1), ("data", "model"))
    jitted, shardings, batch_spec = train_step(c, "dp", mesh)
    key = jax.random.PRNGKey(0)
    params = {}
    for i, (k, (shape, _)) in enumerate(sorted(parameter_layouts(c, "dp").items())):
        bound = 1.0 if len(shape) < 2 else 1.0 / np.sqrt(shape[-2])
        params[k] = jax.device_put(jax.random.uniform(
            jax.random.fold_in(key, i), shape, jnp.float32, -bound, bound),
            shardings[k])
    m = {k: jax.device_put(jnp.zeros_like(x), shardings[k]) for k, x in params.items()}
    v = {k: jax.device_put(jnp.zeros_like(x), shardings[k]) for k, x in params.items()}
    rng = np.random.default_rng(0)
    times = []
    for s in range(steps):
        tokens = jax.device_put(rng.integers(0, c["vocab"], (c["batch"], seq),
                                             dtype=np.int32), batch_spec)
        targets = jax.device_put(rng.integers(0, c["vocab"], (c["batch"], seq),
                                              dtype=np.int32), batch_spec)
        start = time.perf_counter()
        loss, params, m, v = jitted(params, m, v, float(s), tokens, targets)
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)
    print(f"{c['batch'] * seq / statistics.median(times[1:])} {rss}")


def jax_run(python, seq, steps):
    if not python:
        return dict(error="JAX not installed (tools/setup-jax.sh --latest build)")
    done = subprocess.run([python, os.path.abspath(__file__), "--jax-child",
                           str(seq), str(steps)], capture_output=True, text=True)
    if done.returncode != 0:
        return dict(error=f"exit {done.returncode}")
    tokens, rss = done.stdout.split()[-2:]
    return dict(tokens=float(tokens), rss=float(rss))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--jax-child":
        return jax_child(int(sys.argv[2]), int(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita", default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--run-lengths", default="1024,2048")
    parser.add_argument("--plan-lengths", default="1024,2048,4096,8192,16384,32768")
    parser.add_argument("--budget-gib", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--python", default=None)
    args = parser.parse_args()
    python = find_jax_python(args.python)
    print(f"# GPT {MODEL['layers']} layers, d {MODEL['d_model']}, {MODEL['heads']} heads, "
          f"vocab {MODEL['vocab']}, global batch {MODEL['batch']}; cpu:8")

    with tempfile.TemporaryDirectory() as scratch:
        print("\n## Planned peak per device (GiB), train step")
        lengths = [int(x) for x in args.plan_lengths.split(",")]
        print("| layout | " + " | ".join(f"{s // 1024} K" for s in lengths) + " |")
        print("|---|" + "---|" * len(lengths))
        for name, (mesh, rules, attention) in LAYOUTS.items():
            cells = []
            for seq in lengths:
                peak = planned_peak(args.partita, mesh, rules, attention, seq, scratch)
                cells.append("-" if peak is None else f"{peak / GIB:.2f}")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)

        print("\n## partita train beside JAX's dp step (same shapes, cpu:8)")
        print("| seq | layout | tokens/s | vs JAX dp | peak RSS GiB | predicted GiB "
              "| vs JAX dp RSS |")
        print("|---|---|---|---|---|---|---|")
        for seq in [int(x) for x in args.run_lengths.split(",")]:
            peer = jax_run(python, seq, args.steps)
            if "error" in peer:
                print(f"| {seq} | JAX dp | {peer['error']} | | | | |")
            else:
                print(f"| {seq} | JAX dp | {peer['tokens']:.0f} | 1.00 | "
                      f"{peer['rss']:.2f} | | 1.00 |", flush=True)
            for name, (mesh, rules, attention) in LAYOUTS.items():
                mine = partita_run(args.partita, mesh, rules, attention, seq, args.steps)
                if "error" in mine:
                    print(f"| {seq} | {name} | {mine['error'][:90]} | | | | |")
                    continue
                speed = (f"{mine['tokens'] / peer['tokens']:.2f}"
                         if "tokens" in peer else "-")
                memory = f"{mine['rss'] / peer['rss']:.2f}" if "rss" in peer else "-"
                print(f"| {seq} | {name} | {mine['tokens']:.0f} | {speed} | "
                      f"{mine['rss']:.2f} | {mine['predicted']:.2f} | {memory} |",
                      flush=True)

        budget = args.budget_gib * GIB
        print(f"\n## Longest sequence whose planned peak fits {args.budget_gib:g} GiB "
              "per device")
        print("| layout | longest seq |")
        print("|---|---|")
        for name, (mesh, rules, attention) in LAYOUTS.items():
            print(f"| {name} | {longest(args.partita, mesh, rules, attention, budget, scratch)} |",
                  flush=True)
        # One sequence per data-parallel group: each device holds 1/cp of
        # one sequence, whatever cp is.
        print("| **cp (ring), data=8/cp, one sequence per data group** | |")
        base = None
        for cp in (1, 2, 4, 8):
            mesh = f"data={8 // cp}" + (f",context={cp}" if cp > 1 else "")
            rules = "dp+cp" if cp > 1 else "dp"
            seq = longest(args.partita, mesh, rules, "ring", budget, scratch,
                          batch=8 // cp)
            base = base or seq
            print(f"| cp = {cp} ({mesh}) | {seq} ({seq / base:.1f}x) |", flush=True)


if __name__ == "__main__":
    main()
