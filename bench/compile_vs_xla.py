"""Compile time: Partita against XLA on the same GPT train step, 12 to 96 layers.

For each depth, Partita compiles `partita gen gpt` (d_model 1024, 16 heads,
seq 512, batch 16, vocab 32000, dp+tp rules on data=2,model=4) as an AdamW
train step from its text to the Executable on disk (`partita compile --train
--stage executable --timing`), and XLA lowers and compiles the same step
written in JAX (bench/jax_gpt.py: same shapes, same Megatron shardings,
AdamW, parameters donated) for 8 CPU devices, from abstract arguments (no
parameters are allocated). Prints the median wall time of --runs runs of
each, Partita's time per stage and per layer, and the ratio
Partita / XLA (the goal: at most 0.1, and a time per layer that stays flat).

    python3 bench/compile_vs_xla.py [--partita build/bin/partita]
                                    [--layers 12,24,48,96] [--runs 3]

Needs JAX (pip install jax); without it, only Partita's figures print.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_gpt import jax_available  # noqa: E402

CONFIG = dict(d_model=1024, heads=16, seq=512, batch=16, vocab=32000, mlp_ratio=4)
RULES = "dp+tp"

# Stage names of `partita compile --timing`, as printed, and short labels.
STAGES = [("read and verify the input", "read"), ("TrainStepPass", "train"),
          ("ApplyRulesPass", "rules"), ("PropagatePass", "propagate"),
          ("PartitionPass", "partition"), ("CleanupCollectivesPass", "cleanup"),
          ("CombineCollectivesPass", "combine"), ("lower to the Executable", "lower"),
          ("write the Executable", "write")]


def partita_compile(partita, layers, runs, work):
    source = os.path.join(work, f"gpt{layers}.mlir")
    subprocess.run([partita, "gen", "gpt", "--layers", str(layers),
                    "--d-model", str(CONFIG["d_model"]), "--heads", str(CONFIG["heads"]),
                    "--seq", str(CONFIG["seq"]), "--batch", str(CONFIG["batch"]),
                    "--vocab", str(CONFIG["vocab"]), "--mlp-ratio", str(CONFIG["mlp_ratio"]),
                    "--mesh", "data=2,model=4", "--rules", RULES, "-o", source], check=True)
    walls, stages = [], []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([partita, "compile", source, "--train", "--stage", "executable",
                               "-o", os.path.join(work, "step.pexe"), "--timing"],
                              check=True, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        times = {}
        for line in done.stderr.splitlines():
            match = re.match(r"\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(.*\S)\s*$", line)
            if match:
                times[match.group(2)] = float(match.group(1))
        stages.append(times)
    median = statistics.median(walls)
    per_stage = {label: statistics.median(s.get(name, 0.0) for s in stages)
                 for name, label in STAGES}
    return median, per_stage


def xla_compile(layers, runs):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax_gpt import parameter_layouts, train_step

    config = dict(CONFIG, layers=layers)
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    times = []
    for _ in range(runs):
        # A new jitted function each run: nothing is reused from the last.
        jitted, shardings, batch_spec = train_step(config, RULES, mesh)
        params = {k: jax.ShapeDtypeStruct(shape, jnp.float32, sharding=shardings[k])
                  for k, (shape, _) in parameter_layouts(config, RULES).items()}
        batch = jax.ShapeDtypeStruct((config["batch"], config["seq"]), jnp.int32,
                                     sharding=batch_spec)
        start = time.perf_counter()
        jitted.lower(params, params, params, 0.0, batch, batch).compile()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--layers", default="12,24,48,96")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    have_jax = jax_available()
    print(f"# GPT train step {CONFIG}, AdamW, {RULES} on data=2,model=4; median of "
          f"{args.runs} runs; {os.cpu_count()} hardware threads")
    labels = [label for _, label in STAGES]
    print(f"{'layers':>6} {'partita s':>9} {'s/layer':>8} {'xla s':>7} {'ratio':>6}  "
          + " ".join(f"{label:>9}" for label in labels))
    with tempfile.TemporaryDirectory() as work:
        for layers in (int(x) for x in args.layers.split(",")):
            ours, stages = partita_compile(args.partita, layers, args.runs, work)
            theirs = xla_compile(layers, args.runs) if have_jax else float("nan")
            print(f"{layers:6d} {ours:9.2f} {ours / layers:8.4f} {theirs:7.2f} "
                  f"{ours / theirs:6.3f}  " + " ".join(f"{stages[l]:9.3f}" for l in labels),
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
