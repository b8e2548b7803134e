"""Training throughput: partita train against JAX on 8 emulated CPU devices.

The same GPT (learned positions, LayerNorm, GELU MLP, multi-head attention,
untied LM head, softmax cross-entropy), the same AdamW step and the same
shardings for each strategy, in the same run: Partita through
`partita train`, JAX through jax.jit with NamedShardings on a
(data=2, model=4) mesh of --xla_force_host_platform_device_count=8 CPU
devices. Prints tokens per second (median step time after a warm-up step)
and Partita's ratio to JAX per strategy.

    python3 bench/train_vs_jax.py [--partita build/bin/partita] [--steps 6]

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

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

CONFIG = dict(layers=2, d_model=128, heads=4, seq=64, batch=16, vocab=256, mlp_ratio=4)
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
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import numpy as np

    c = CONFIG
    D, H, S, B, V = c["d_model"], c["heads"], c["seq"], c["batch"], c["vocab"]
    K, F = D // H, c["mlp_ratio"] * D
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    dp = rules in ("dp", "fsdp", "dp+tp")
    tp = rules in ("tp", "dp+tp")
    fsdp = rules == "fsdp"
    model = "model" if tp else None
    embed = "data" if fsdp else None

    def spec(*axes):
        return NamedSharding(mesh, P(*axes))

    shapes = {"wte": ((V, D), (model, embed)), "wpe": ((S, D), (None, embed)),
              "final_scale": ((D,), (None,)), "final_bias": ((D,), (None,)),
              "head": ((D, V), (embed, model))}
    for l in range(c["layers"]):
        shapes.update({
            f"{l}.n1s": ((D,), (None,)), f"{l}.n1b": ((D,), (None,)),
            f"{l}.wq": ((D, H, K), (embed, model, None)),
            f"{l}.wk": ((D, H, K), (embed, model, None)),
            f"{l}.wv": ((D, H, K), (embed, model, None)),
            f"{l}.wo": ((H, K, D), (model, None, embed)),
            f"{l}.n2s": ((D,), (None,)), f"{l}.n2b": ((D,), (None,)),
            f"{l}.w1": ((D, F), (embed, model)), f"{l}.w2": ((F, D), (model, embed))})
    shardings = {k: spec(*axes) for k, (shape, axes) in shapes.items()}
    key = jax.random.PRNGKey(0)
    params = {}
    for i, (k, (shape, _)) in enumerate(sorted(shapes.items())):
        bound = 1.0 if len(shape) < 2 else 1.0 / np.sqrt(shape[-2])
        params[k] = jax.device_put(
            jax.random.uniform(jax.random.fold_in(key, i), shape, jnp.float32, -bound, bound),
            shardings[k])
    zeros = {k: jax.device_put(jnp.zeros_like(v), shardings[k]) for k, v in params.items()}
    batch_spec = spec("data" if dp else None, None)

    def norm(x, s, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * s + b

    def loss_fn(p, tokens, targets):
        x = jax.nn.one_hot(tokens, V) @ p["wte"] + p["wpe"]
        mask = jnp.tril(jnp.ones((S, S), bool))
        for l in range(c["layers"]):
            a = norm(x, p[f"{l}.n1s"], p[f"{l}.n1b"])
            q = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wq"]) / np.sqrt(K)
            k_ = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wk"])
            v = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wv"])
            scores = jnp.where(mask, jnp.einsum("bshk,bthk->bhst", q, k_), -1e9)
            ctx = jnp.einsum("bhst,bthk->bshk", jax.nn.softmax(scores, -1), v)
            x = x + jnp.einsum("bshk,hkd->bsd", ctx, p[f"{l}.wo"])
            m = norm(x, p[f"{l}.n2s"], p[f"{l}.n2b"])
            x = x + jax.nn.gelu(m @ p[f"{l}.w1"], approximate=True) @ p[f"{l}.w2"]
        logits = norm(x, p["final_scale"], p["final_bias"]) @ p["head"]
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.take_along_axis(logp, targets[..., None], -1).mean()

    def step(p, m, v, t, tokens, targets):
        loss, g = jax.value_and_grad(loss_fn)(p, tokens, targets)
        m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        c1, c2 = 1 - 0.9 ** (t + 1.0), 1 - 0.999 ** (t + 1.0)
        p = jax.tree.map(lambda p, m, v: p - 1e-3 * (m / c1 / (jnp.sqrt(v / c2) + 1e-8) + 0.01 * p), p, m, v)
        return loss, p, m, v

    jitted = jax.jit(step, in_shardings=(shardings, shardings, shardings, None, batch_spec, batch_spec),
                     out_shardings=(None, shardings, shardings, shardings), donate_argnums=(0, 1, 2))
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
    args = parser.parse_args()
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
        print("# JAX not installed: Partita's figures only (pip install jax)")
    print(f"# GPT {CONFIG}, AdamW, cpu:8 (data=2, model=4), {os.cpu_count()} hardware threads,"
          f" median of {args.steps - 1} steps after a warm-up")
    print(f"{'strategy':10} {'partita tok/s':>14} {'jax tok/s':>10} {'ratio':>7}")
    for rules in STRATEGIES:
        ours = partita_tokens_per_second(args.partita, rules, args.steps)
        theirs = jax_tokens_per_second(rules, args.steps) if have_jax else float("nan")
        print(f"{rules:10} {ours:14.0f} {theirs:10.0f} {ours / theirs:7.2f}")


if __name__ == "__main__":
    sys.exit(main())
