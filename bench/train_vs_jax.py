"""Training throughput: partita train against JAX on 8 emulated CPU devices.

The same GPT (learned positions, LayerNorm, GELU MLP, multi-head attention,
untied LM head, softmax cross-entropy), the same AdamW step and the same
shardings for each strategy, in the same run: Partita through
`partita train`, JAX through jax.jit with NamedShardings on a
(data=2, model=4) mesh of --xla_force_host_platform_device_count=8 CPU
devices. Prints tokens per second (median step time after a warm-up step)
and Partita's ratio to JAX per strategy.

    python3 bench/train_vs_jax.py [--partita build/bin/partita] [--steps 6]
                                  [--config small|large] [--strategies dp,tp]

Needs JAX (pip install jax); without it, only Partita's figures print.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_gpt import jax_available  # noqa: E402

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

CONFIGS = {
    "small": dict(layers=2, d_model=128, heads=4, seq=64, batch=16, vocab=256, mlp_ratio=4),
    # Where compute dominates (issue goal: at least JAX's tokens/s here too).
    "large": dict(layers=4, d_model=512, heads=8, seq=256, batch=16, vocab=1024, mlp_ratio=4),
}
CONFIG = dict(CONFIGS["small"])
STRATEGIES = ["dp", "fsdp", "tp", "dp+tp"]


def partita_tokens_per_second(partita, rules, steps):
    with tempfile.TemporaryDirectory() as out:
        command = [partita, "train", "--model", "gpt", "--devices", "cpu:8",
                   "--mesh", "data=2,model=4", "--rules", rules,
                   "--steps", str(steps), "--output", out, "--lr", "1e-3",
                   "--layers", str(CONFIG["layers"]), "--d-model", str(CONFIG["d_model"]),
                   "--heads", str(CONFIG["heads"]), "--seq", str(CONFIG["seq"]),
                   "--batch", str(CONFIG["batch"]), "--vocab", str(CONFIG["vocab"]),
                   "--mlp-ratio", str(CONFIG["mlp_ratio"])]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "loss.csv")) as f:
            seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    return CONFIG["batch"] * CONFIG["seq"] / statistics.median(seconds[1:])


def jax_tokens_per_second(rules, steps):
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh
    import numpy as np
    from jax_gpt import parameter_layouts, train_step

    c = CONFIG
    S, B, V = c["seq"], c["batch"], c["vocab"]
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    jitted, shardings, batch_spec = train_step(c, rules, mesh)
    key = jax.random.PRNGKey(0)
    params = {}
    for i, (k, (shape, _)) in enumerate(sorted(parameter_layouts(c, rules).items())):
        bound = 1.0 if len(shape) < 2 else 1.0 / np.sqrt(shape[-2])
        params[k] = jax.device_put(
            jax.random.uniform(jax.random.fold_in(key, i), shape, jnp.float32, -bound, bound),
            shardings[k])
    zeros = {k: jax.device_put(jnp.zeros_like(v), shardings[k]) for k, v in params.items()}
    rng = np.random.default_rng(0)
    m, v = zeros, {k: jax.device_put(jnp.zeros_like(x), shardings[k]) for k, x in params.items()}
    times = []
    for s in range(steps):
        tokens = jax.device_put(rng.integers(0, V, (B, S), dtype=np.int32), batch_spec)
        targets = jax.device_put(rng.integers(0, V, (B, S), dtype=np.int32), batch_spec)
        start = time.perf_counter()
        loss, params, m, v = jitted(params, m, v, float(s), tokens, targets)
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    return B * S / statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args()
    CONFIG.clear()
    CONFIG.update(CONFIGS[args.config])
    have_jax = jax_available()
    print(f"# GPT {CONFIG}, AdamW, cpu:8 (data=2, model=4), {os.cpu_count()} hardware threads,"
          f" median of {args.steps - 1} steps after a warm-up")
    print(f"{'strategy':10} {'partita tok/s':>14} {'jax tok/s':>10} {'ratio':>7}")
    for rules in args.strategies.split(","):
        ours = partita_tokens_per_second(args.partita, rules, args.steps)
        theirs = jax_tokens_per_second(rules, args.steps) if have_jax else float("nan")
        print(f"{rules:10} {ours:14.0f} {theirs:10.0f} {ours / theirs:7.2f}")


if __name__ == "__main__":
    sys.exit(main())
