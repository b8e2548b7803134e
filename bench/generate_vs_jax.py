"""Generation with a KV cache: partita generate against JAX, in one run.

The same GPT (learned positions, LayerNorm, GELU MLP, multi-head attention,
untied LM head, gathered token embedding), greedy decoding with a
key/value cache per layer: a prefill of the prompts, then one decode step
per new token for every row together. Partita runs `partita generate` on
a checkpoint of the model's initial parameters (`partita train --steps
0`); JAX runs a jitted prefill and a jitted decode step (caches donated,
written with `.at[rows, positions].set`, the next token chosen inside the
step) on the same mesh of emulated CPU devices
(--xla_force_host_platform_device_count=8), batch over `data`, heads over
`model`. Each side is its own process; prints prefill time, decode tokens
per second (new tokens after the first, over the decode steps' time; JAX's
after a warm-up generation, so compiling is left out on both sides) and
each process's maximum resident memory, with Partita's ratios.

    python3 bench/generate_vs_jax.py [--partita build/bin/partita]
        [--config small|medium] [--layouts cpu1,dp8,dptp8] [--jax-python P]

Needs JAX (tools/setup-jax.sh --latest); without it only Partita's figures
print.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from jax_gpt import find_jax_python  # noqa: E402

CONFIGS = {
    "small": dict(layers=4, d_model=256, heads=8, seq=256, vocab=1024,
                  batch=8, prompt=64, new=64),
    "medium": dict(layers=8, d_model=512, heads=8, seq=512, vocab=8192,
                   batch=8, prompt=128, new=128),
}
# name: (devices, data, model, rules)
LAYOUTS = {"cpu1": (1, 1, 1, "dp"), "dp8": (8, 8, 1, "dp"),
           "dptp8": (8, 2, 4, "dp+tp")}


def run_measured(command, env=None):
    """(exit status, output, maximum resident bytes) of `command`."""
    with tempfile.TemporaryFile(mode="w+") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                 env=env, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        out.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), \
            usage.ru_maxrss * 1024


def prompts_file(config, path):
    # Deterministic prompts: token ids from a fixed linear sequence.
    with open(path, "w") as f:
        for r in range(config["batch"]):
            f.write(" ".join(str((r * 7919 + i * 104729) % config["vocab"])
                             for i in range(config["prompt"])) + "\n")


def model_flags(config):
    return ["--model", "gpt", "--layers", str(config["layers"]),
            "--d-model", str(config["d_model"]), "--heads",
            str(config["heads"]), "--seq", str(config["seq"]), "--vocab",
            str(config["vocab"]), "--embedding", "gather"]


def partita_row(partita, config, layout, work):
    devices, data, model, rules = LAYOUTS[layout]
    checkpoint = os.path.join(work, "ckpt")
    if not os.path.exists(checkpoint):
        subprocess.run([partita, "train", *model_flags(config), "--steps",
                        "0", "--devices", "cpu:1", "--batch", "2",
                        "--checkpoint-dir", checkpoint, "--output",
                        os.path.join(work, "init")], check=True,
                       stdout=subprocess.DEVNULL)
    prompts = os.path.join(work, "prompts.txt")
    prompts_file(config, prompts)
    mesh = f"data={data}" + (f",model={model}" if model > 1 else "")
    command = [partita, "generate", "--checkpoint", checkpoint, "--prompts",
               prompts, "--max-new-tokens", str(config["new"]), "--batch",
               str(config["batch"]), "--devices", f"cpu:{devices}",
               "--mesh", mesh, "--rules", rules, "-o",
               os.path.join(work, f"out-{layout}.txt")]
    code, text, rss = run_measured(command)
    found = re.search(r"prefill ([0-9.]+) ms, (\d+) decode steps in "
                      r"([0-9.]+) ms \(([0-9]+) tokens/s\)", text)
    if code != 0 or not found:
        return dict(error=f"exit {code}: {text.strip().splitlines()[-1:]}")
    return dict(prefill_ms=float(found.group(1)),
                tokens_per_s=float(found.group(4)), rss=rss)


def jax_child(config, layout):
    """In the JAX process: a warm-up generation, then a timed one."""
    import time
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devices, data, model, _ = LAYOUTS[layout]
    c = config
    L, D, H, S, V = (c["layers"], c["d_model"], c["heads"], c["seq"],
                     c["vocab"])
    B, K, F = c["batch"], D // H, 4 * D
    mesh = Mesh(np.array(jax.devices()[:devices]).reshape(data, model),
                ("data", "model"))

    def spec(*axes):
        return NamedSharding(mesh, P(*axes))

    tp = "model" if model > 1 else None
    layouts = {"wte": ((V, D), (None, None)), "wpe": ((S, D), (None, None)),
               "fs": ((D,), (None,)), "fb": ((D,), (None,)),
               "head": ((D, V), (None, tp))}
    for l in range(L):
        layouts.update({
            f"{l}.n1s": ((D,), (None,)), f"{l}.n1b": ((D,), (None,)),
            f"{l}.wq": ((D, H, K), (None, tp, None)),
            f"{l}.wk": ((D, H, K), (None, tp, None)),
            f"{l}.wv": ((D, H, K), (None, tp, None)),
            f"{l}.wo": ((H, K, D), (tp, None, None)),
            f"{l}.n2s": ((D,), (None,)), f"{l}.n2b": ((D,), (None,)),
            f"{l}.w1": ((D, F), (None, tp)), f"{l}.w2": ((F, D), (tp, None))})
    key = jax.random.PRNGKey(0)
    params = {}
    for i, (name, (shape, axes)) in enumerate(sorted(layouts.items())):
        bound = 1.0 if len(shape) < 2 else 1.0 / np.sqrt(shape[-2])
        params[name] = jax.device_put(jax.random.uniform(
            jax.random.fold_in(key, i), shape, jnp.float32, -bound, bound),
            spec(*axes))
    cache_spec = spec("data", None, tp, None)
    rows_spec = spec("data")

    def norm(x, s, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * s + b

    def mlp(x, p, l):
        m = norm(x, p[f"{l}.n2s"], p[f"{l}.n2b"])
        return x + jax.nn.gelu(m @ p[f"{l}.w1"], approximate=True) @ \
            p[f"{l}.w2"]

    def prefill(p, tokens, last):
        x = p["wte"][tokens] + p["wpe"]
        mask = jnp.tril(jnp.ones((S, S), bool))
        caches = []
        for l in range(L):
            a = norm(x, p[f"{l}.n1s"], p[f"{l}.n1b"])
            q = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wq"]) / np.sqrt(K)
            k = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wk"])
            v = jnp.einsum("bsd,dhk->bshk", a, p[f"{l}.wv"])
            scores = jnp.where(mask, jnp.einsum("bshk,bthk->bhst", q, k),
                               -1e9)
            ctx = jnp.einsum("bhst,bthk->bshk", jax.nn.softmax(scores, -1), v)
            x = mlp(x + jnp.einsum("bshk,hkd->bsd", ctx, p[f"{l}.wo"]), p, l)
            caches.append((k, v))
        h = norm(x, p["fs"], p["fb"])[jnp.arange(B), last]
        return jnp.argmax(h @ p["head"], -1).astype(jnp.int32), caches

    def decode(p, caches, tokens, positions):
        x = p["wte"][tokens] + p["wpe"][positions]
        rows = jnp.arange(B)
        visible = jnp.arange(S)[None, :] <= positions[:, None]
        new = []
        for l in range(L):
            a = norm(x, p[f"{l}.n1s"], p[f"{l}.n1b"])
            q = jnp.einsum("bd,dhk->bhk", a, p[f"{l}.wq"]) / np.sqrt(K)
            k = caches[l][0].at[rows, positions].set(
                jnp.einsum("bd,dhk->bhk", a, p[f"{l}.wk"]))
            v = caches[l][1].at[rows, positions].set(
                jnp.einsum("bd,dhk->bhk", a, p[f"{l}.wv"]))
            scores = jnp.where(visible[:, None, :],
                               jnp.einsum("bhk,bthk->bht", q, k), -1e9)
            ctx = jnp.einsum("bht,bthk->bhk", jax.nn.softmax(scores, -1), v)
            x = mlp(x + jnp.einsum("bhk,hkd->bd", ctx, p[f"{l}.wo"]), p, l)
            new.append((k, v))
        logits = norm(x, p["fs"], p["fb"]) @ p["head"]
        return jnp.argmax(logits, -1).astype(jnp.int32), new

    pspec = {name: spec(*axes) for name, (_, axes) in layouts.items()}
    cspec = [(cache_spec, cache_spec)] * L
    prefill_jit = jax.jit(prefill, in_shardings=(pspec, spec("data", None),
                                                 rows_spec),
                          out_shardings=(rows_spec, cspec))
    decode_jit = jax.jit(decode, in_shardings=(pspec, cspec, rows_spec,
                                               rows_spec),
                         out_shardings=(rows_spec, cspec), donate_argnums=1)
    prompt = np.array([[(r * 7919 + i * 104729) % V
                        for i in range(c["prompt"])] for r in range(B)],
                      np.int32)
    tokens = np.zeros((B, S), np.int32)
    tokens[:, :c["prompt"]] = prompt
    last = np.full((B,), c["prompt"] - 1, np.int32)

    def generate():
        start = time.perf_counter()
        token, caches = prefill_jit(params, tokens, last)
        token.block_until_ready()
        prefilled = time.perf_counter()
        out = [token]
        for t in range(1, c["new"]):
            positions = jnp.full((B,), c["prompt"] + t - 1, jnp.int32)
            token, caches = decode_jit(params, caches, token, positions)
            out.append(token)
        token.block_until_ready()
        done = time.perf_counter()
        return prefilled - start, done - prefilled

    generate()
    prefill_s, decode_s = generate()
    print(f"prefill_ms {prefill_s * 1e3}")
    print(f"tokens_per_s {B * (c['new'] - 1) / decode_s}")


def jax_row(python, config_name, layout):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    code, text, rss = run_measured(
        [python, os.path.abspath(__file__), "--jax-child", config_name,
         layout], env=env)
    prefill = re.search(r"prefill_ms ([0-9.e+-]+)", text)
    tokens = re.search(r"tokens_per_s ([0-9.e+-]+)", text)
    if code != 0 or not tokens:
        return dict(error=f"exit {code}: {text.strip().splitlines()[-1:]}")
    return dict(prefill_ms=float(prefill.group(1)),
                tokens_per_s=float(tokens.group(1)), rss=rss)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--jax-child":
        return jax_child(CONFIGS[sys.argv[2]], sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita",
                        default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--config", default="small", choices=sorted(CONFIGS))
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--jax-python")
    options = parser.parse_args()
    config = CONFIGS[options.config]
    python = find_jax_python(options.jax_python)
    if not python:
        print("# JAX not found (tools/setup-jax.sh --latest): Partita's "
              "figures only")
    print(f"# {options.config}: {config}")
    print("| layout | Partita prefill ms | JAX prefill ms | Partita decode "
          "tokens/s | JAX decode tokens/s | ratio | Partita RSS MiB | JAX "
          "RSS MiB | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for layout in options.layouts.split(","):
            ours = partita_row(options.partita, config, layout, work)
            theirs = jax_row(python, options.config, layout) if python \
                else dict(error="no JAX")
            if "error" in ours or "error" in theirs:
                print(f"| {layout} | {ours.get('error', '')} | "
                      f"{theirs.get('error', '')} |")
                continue
            print(f"| {layout} | {ours['prefill_ms']:.1f} | "
                  f"{theirs['prefill_ms']:.1f} | {ours['tokens_per_s']:.0f} | "
                  f"{theirs['tokens_per_s']:.0f} | "
                  f"{ours['tokens_per_s'] / theirs['tokens_per_s']:.2f} | "
                  f"{ours['rss'] / 2**20:.0f} | {theirs['rss'] / 2**20:.0f} | "
                  f"{ours['rss'] / theirs['rss']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
