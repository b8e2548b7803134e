"""The GPT train step in JAX that the benchmarks compare Partita with.

The model `partita gen gpt` writes (learned positions, LayerNorm, GELU MLP,
multi-head attention, untied LM head, softmax cross-entropy, one-hot token
embedding) with an AdamW step, and for each strategy (dp, fsdp, tp, dp+tp,
fsdp+tp)
the Megatron-style shardings Partita's rules presets give, on a
(data=2, model=4) mesh.
"""


def jax_available():
    """True when JAX imports; else says so (the caller prints only Partita's figures)."""
    try:
        import jax  # noqa: F401
        return True
    except ImportError:
        print("# JAX not installed: Partita's figures only (pip install jax)")
        return False


def find_jax_python(given=None):
    """The interpreter to run JAX in: `given`, else the repository's
    build/pyenv-latest or build/pyenv (tools/setup-jax.sh), else this one;
    the first that imports jax, or None."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates = [given] if given else [
        os.path.join(root, "build", "pyenv-latest", "bin", "python"),
        os.path.join(root, "build", "pyenv", "bin", "python"), sys.executable]
    for python in candidates:
        if python and os.path.exists(python) and subprocess.run(
                [python, "-c", "import jax"], capture_output=True).returncode == 0:
            return python
    return None


def parameter_layouts(config, rules):
    """{name: (shape, PartitionSpec axes)} for every parameter."""
    D, H, S, V = config["d_model"], config["heads"], config["seq"], config["vocab"]
    K, F = D // H, config["mlp_ratio"] * D
    tp = rules in ("tp", "dp+tp", "fsdp+tp")
    fsdp = rules in ("fsdp", "fsdp+tp")
    model = "model" if tp else None
    embed = "data" if fsdp else None
    shapes = {"wte": ((V, D), (model, embed)), "wpe": ((S, D), (None, embed)),
              "final_scale": ((D,), (None,)), "final_bias": ((D,), (None,)),
              "head": ((D, V), (embed, model))}
    for l in range(config["layers"]):
        shapes.update({
            f"{l}.n1s": ((D,), (None,)), f"{l}.n1b": ((D,), (None,)),
            f"{l}.wq": ((D, H, K), (embed, model, None)),
            f"{l}.wk": ((D, H, K), (embed, model, None)),
            f"{l}.wv": ((D, H, K), (embed, model, None)),
            f"{l}.wo": ((H, K, D), (model, None, embed)),
            f"{l}.n2s": ((D,), (None,)), f"{l}.n2b": ((D,), (None,)),
            f"{l}.w1": ((D, F), (embed, model)), f"{l}.w2": ((F, D), (model, embed))})
    return shapes


def train_step(config, rules, mesh):
    """(jitted step, parameter shardings, batch sharding). The step takes
    (params, m, v, t, tokens, targets) and returns (loss, params, m, v); the
    parameters and optimizer states are donated."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    c = config
    D, H, S, V = c["d_model"], c["heads"], c["seq"], c["vocab"]
    K = D // H
    dp = rules in ("dp", "fsdp", "dp+tp", "fsdp+tp")

    def spec(*axes):
        return NamedSharding(mesh, P(*axes))

    shardings = {k: spec(*axes) for k, (_, axes) in parameter_layouts(c, rules).items()}
    batch_spec = spec("data" if dp else None, None)

    def norm(x, s, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * s + b

    mask = jnp.tril(jnp.ones((S, S), bool))

    def block(x, lp):
        a = norm(x, lp["n1s"], lp["n1b"])
        q = jnp.einsum("bsd,dhk->bshk", a, lp["wq"]) / np.sqrt(K)
        k_ = jnp.einsum("bsd,dhk->bshk", a, lp["wk"])
        v = jnp.einsum("bsd,dhk->bshk", a, lp["wv"])
        scores = jnp.where(mask, jnp.einsum("bshk,bthk->bhst", q, k_), -1e9)
        ctx = jnp.einsum("bhst,bthk->bshk", jax.nn.softmax(scores, -1), v)
        x = x + jnp.einsum("bshk,hkd->bsd", ctx, lp["wo"])
        m = norm(x, lp["n2s"], lp["n2b"])
        return x + jax.nn.gelu(m @ lp["w1"], approximate=True) @ lp["w2"]

    # config["remat"]: each layer recomputed in the backward pass
    # (jax.checkpoint), as `partita train --remat per-layer` does.
    layer = jax.checkpoint(block) if c.get("remat") else block

    def loss_fn(p, tokens, targets):
        x = jax.nn.one_hot(tokens, V) @ p["wte"] + p["wpe"]
        for l in range(c["layers"]):
            x = layer(x, {k: p[f"{l}.{k}"] for k in
                          ("n1s", "n1b", "wq", "wk", "wv", "wo", "n2s",
                           "n2b", "w1", "w2")})
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
    return jitted, shardings, batch_spec
