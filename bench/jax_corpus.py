#!/usr/bin/env python3
"""A corpus of JAX programs written the way JAX users write them, exported
for Partita's importer.

Where tools/export_jax.py writes small hand-made programs, these use the
libraries users train with: Flax NNX (and Linen), Optax optimizers and
losses, Equinox, jax.shard_map, plain jax.numpy; forward passes, gradients
and whole optimizer steps, on 1-, 2- and 3-axis meshes of 8 emulated CPU
devices. Each program is written into test/Conversion/StableHLOToPartita/
corpus/<name>/ in the fixture format that test/Conversion/
StableHLOToPartita/README.md describes (module.mlir, input_<i>.npy,
result_<i>.npy, xla.json), with the pytree of arguments flattened into
positional arguments named after their paths.

Needs JAX >= 0.12 with Flax, Optax and Equinox (tools/setup-jax.sh --latest
makes such a virtual environment):
    build/pyenv-latest/bin/python bench/jax_corpus.py [--only NAME] [--list]

The models and helpers the table below names are in jax_corpus_models.py.
"""

import argparse
import functools
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The models, meshes, sizes and helpers (sets up 8 devices before JAX).
from jax_corpus_models import *  # noqa: E402,F401,F403

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "test", "Conversion",
                           "StableHLOToPartita", "corpus")

# ---------------------------------------------------------------------------
# The corpus: name -> a function making its Program.

def corpus():
    c = {}
    # Optax optimizers on a plain MLP, data parallel.
    for name, tx in (("adamw", optax.adamw(1e-3, weight_decay=0.01)),
                     ("adam", optax.adam(1e-3)),
                     ("sgd_momentum", optax.sgd(1e-2, momentum=0.9)),
                     ("lion", optax.lion(1e-4)),
                     ("adafactor", optax.adafactor(1e-3)),
                     ("clip_adamw_cosine", optax.chain(
                         optax.clip_by_global_norm(1.0),
                         optax.adamw(optax.warmup_cosine_decay_schedule(
                             0.0, 1e-3, 10, 100))))):
        c[f"mlp_{name}_step_dp"] = functools.partial(
            mlp_step_program, 1, tx, replicated)
    c["mlp_adamw_step_fsdp"] = functools.partial(
        mlp_step_program, 2, optax.adamw(1e-3), fsdp_specs(("data", "model")),
        P(("data", "model"), None))
    c["mlp_sgd_step_1axis"] = functools.partial(
        mlp_step_program, 3, optax.sgd(1e-2), replicated, P("data", None),
        MESH1)
    c["mlp_adam_step_tp"] = functools.partial(
        mlp_step_program, 4, optax.adam(1e-3),
        lambda p, l: P(None, "model") if np.ndim(l) == 2 and "layer0" in
        jax.tree_util.keystr(p) else (P("model", None) if np.ndim(l) == 2
                                      and "layer1" in jax.tree_util.keystr(p)
                                      else P()))

    # Flax NNX GPT: learned positions, LayerNorm, nnx.MultiHeadAttention.
    gpt = functools.partial(GPT, layers=2)
    c["nnx_gpt_forward_dp_tp"] = functools.partial(nnx_program, gpt, 10,
                                                   "forward")
    c["nnx_gpt_loss_dp_tp"] = functools.partial(nnx_program, gpt, 11, "loss")
    c["nnx_gpt_grad_dp_tp"] = functools.partial(nnx_program, gpt, 12, "grad")
    c["nnx_gpt_step_dp_tp"] = functools.partial(nnx_program, gpt, 13, "step")
    c["nnx_gpt_grad_dp"] = functools.partial(
        nnx_program, gpt, 14, "grad", batch=8, param_spec=replicated,
        batch_spec=P(("data", "model"), None))
    c["nnx_gpt_step_fsdp"] = functools.partial(
        nnx_program, gpt, 15, "step", batch=8,
        param_spec=fsdp_specs(("data", "model")),
        batch_spec=P(("data", "model"), None))
    c["nnx_gpt_rms_loss_dp_tp"] = functools.partial(
        nnx_program, functools.partial(GPT, norm="rms"), 16, "loss")
    c["nnx_gpt_optimizer_step"] = functools.partial(
        nnx_program, gpt, 17, "step", nnx_optimizer=True)
    c["nnx_gpt_uneven_vocab_loss"] = functools.partial(
        nnx_program, functools.partial(GPT, vocab=50), 18, "loss",
        inputs=lambda r: (ids(r, (4, SEQ), 50), ids(r, (4, SEQ), 50)))
    # Llama: RMSNorm, rotary, GQA / MQA / MHA, SwiGLU.
    c["llama_gqa_forward_dp_tp"] = functools.partial(
        nnx_program, Llama, 20, "forward")
    c["llama_gqa_loss_dp_tp"] = functools.partial(nnx_program, Llama, 21,
                                                  "loss")
    c["llama_mqa_grad_dp_tp"] = functools.partial(
        nnx_program, functools.partial(Llama, kv_heads=1), 22, "grad",
        param_spec=lambda p, l: P() if len(path_names(p)) >= 2 and
        path_names(p)[-2] in ("k", "v") else megatron_specs(p, l))
    c["llama_mha_step_fsdp"] = functools.partial(
        nnx_program, functools.partial(Llama, kv_heads=HEADS), 23, "step",
        batch=8, param_spec=fsdp_specs(("data", "model")),
        batch_spec=P(("data", "model"), None))
    c["llama_bf16_loss_dp_tp"] = functools.partial(
        nnx_program, functools.partial(Llama, dtype=jnp.bfloat16), 24,
        "loss")
    c["llama_gqa_step_lion_dp_tp"] = functools.partial(
        nnx_program, Llama, 25, "step", tx=optax.lion(1e-4))
    c["llama_gqa_step_3axis"] = functools.partial(
        nnx_program, Llama, 26, "step", mesh=MESH3,
        batch_spec=P(("data", "fsdp"), None),
        param_spec=lambda p, l: three_axis_spec(megatron_specs(p, l), l))
    c["nnx_gpt_loss_3axis"] = functools.partial(
        nnx_program, gpt, 27, "loss", mesh=MESH3,
        batch_spec=P(("data", "fsdp"), None),
        param_spec=lambda p, l: three_axis_spec(megatron_specs(p, l), l))

    # jax.shard_map.
    def ring():
        r = rng(30)
        return Program(ring_matmul, (normal(r, (8, 32)),
                                     normal(r, (32, 16), 0.2)),
                       (P("data", None), P("model", None)), P("data", None))
    c["shard_map_ring_matmul"] = ring

    def manual_dp():
        r = rng(31)
        return Program(shard_map_dp_step, (mlp_init(31), normal(r, (16, D)),
                                           ids(r, (16,), 16)),
                       (P(), P(("data", "model")), P(("data", "model"))),
                       (P(), P()))
    c["shard_map_dp_sgd_step"] = manual_dp

    def collectives3():
        return Program(shard_map_collectives, (normal(rng(32), (8, 16)),),
                       (P(("data", "fsdp"), "model"),),
                       P(("data", "fsdp", "model"), None), MESH3)
    c["shard_map_collectives_3axis"] = collectives3

    # Mixture of experts: experts over "model", tokens over "data".
    for k in (1, 2):
        c[f"moe_top{k}_forward_ep"] = functools.partial(
            lambda k, seed: Program(
                lambda *a: moe(*a, k), moe_inputs(seed), EXPERT_SPECS,
                P("data", None)), k, 33 + k)
        c[f"moe_top{k}_grad_ep"] = functools.partial(
            lambda k, seed: Program(
                moe_grad(k), moe_inputs(seed), EXPERT_SPECS,
                EXPERT_SPECS[1:]), k, 35 + k)

    # Scanned, rematerialized layers.
    def scanned():
        r = rng(38)
        return Program(scan_stack, (stack_init(38), normal(r, (16, D))),
                       (STACK_SPECS, P("data", None)), P("data", None))
    c["scan_remat_forward_dp_tp"] = scanned

    def scanned_grad():
        r = rng(39)

        def loss(params, x):
            return jnp.mean(scan_stack(params, x) ** 2)
        return Program(jax.grad(loss), (stack_init(39), normal(r, (16, D))),
                       (STACK_SPECS, P("data", None)), STACK_SPECS)
    c["scan_remat_grad_dp_tp"] = scanned_grad

    def nnx_scanned(mode):
        def make():
            model = NNXScanned(nnx.Rngs(40))
            graphdef, state = nnx.split(model)
            state = jax.tree_util.tree_map(np.asarray, state)
            x = normal(rng(41), (16, D))
            specs = like(state, lambda p, l: P(None, None, "model")
                         if np.ndim(l) == 3 and np.shape(l)[-1] == FF else
                         (P(None, "model", None) if np.ndim(l) == 3 else P()))

            def forward(state, x):
                return nnx.merge(graphdef, state)(x)
            if mode == "forward":
                return Program(forward, (state, x), (specs, P("data", None)),
                               P("data", None))

            def loss(state, x):
                return jnp.mean(forward(state, x) ** 2)
            return Program(jax.grad(loss), (state, x),
                           (specs, P("data", None)), specs)
        return make
    c["nnx_scan_remat_forward"] = nnx_scanned("forward")
    c["nnx_scan_remat_grad"] = nnx_scanned("grad")

    # Per-example gradients with jax.vmap.
    def per_example():
        r = rng(42)
        params = mlp_init(42)

        def one(params, x, y):
            return mlp_loss(params, x[None], y[None])
        fn = jax.vmap(jax.grad(one), in_axes=(None, 0, 0))
        return Program(fn, (params, normal(r, (16, D)), ids(r, (16,), 16)),
                       (P(), P("data", None), P("data")),
                       like(params, lambda p, l: P("data")))
    c["vmap_per_example_grads_dp"] = per_example

    # A ViT, forward and a whole SGD-with-momentum step.
    def vit_inputs(r):
        return normal(r, (8, 16, 16, 3)), ids(r, (8,), 10)
    vit_loss = int_label_loss
    c["vit_forward_dp"] = functools.partial(
        nnx_program, ViT, 43, "forward", inputs=vit_inputs,
        batch_spec=P("data", None, None, None), param_spec=replicated)
    c["vit_step_dp_tp"] = functools.partial(
        nnx_program, ViT, 44, "step", inputs=vit_inputs, loss=vit_loss,
        batch_spec=P("data", None, None, None), label_spec=P("data"),
        tx=optax.sgd(1e-2, momentum=0.9))

    # Flax Linen and Equinox.
    c["linen_mlp_grad_dp_tp"] = linen_program
    # Rounding: quantization-aware training (fake int8 weights with a
    # straight-through estimator) and every rounding op on ties.
    c["qat_mlp_grad_dp"] = qat_program
    c["rounding_ops_dp"] = rounding_program
    # Dropout: jax.random's threefry inside the step, its key an input.
    c["linen_mlp_dropout_step_dp"] = linen_dropout_program
    c["nnx_dropout_block_loss_dp_tp"] = nnx_dropout_program
    c["equinox_mlp_step_dp"] = equinox_program

    # Control flow and sampling.
    def loop():
        r = rng(45)
        return Program(fori_power, (normal(r, (16, D)),
                                    normal(r, (D, D), 1 / math.sqrt(D))),
                       (P("data", None), P()), (P("data", None), P()))
    c["fori_loop_tuple_carry"] = loop

    def branch():
        r = rng(46)
        return Program(cond_branch, (normal(r, (16, D)),
                                     normal(r, (D, D), 1 / math.sqrt(D)),
                                     np.int32(1)),
                       (P("data", None), P(), P()), P("data", None))
    c["cond_branch_dp"] = branch

    def sample():
        r = rng(47)
        return Program(sampling, (normal(r, (16, VOCAB)), np.float32(0.7)),
                       (P("data", None), P()),
                       (P("data"), P("data", None), P("data", None),
                        P("data")))
    c["sampling_topk_sort_dp"] = sample

    # Convolutions: a CNN forward (inference batch norm) and train step
    # (batch statistics updated), data parallel; convolutions with
    # feature dimensions over "model" and their gradients.
    def images(r):
        return normal(r, (8, 16, 16, 3)), ids(r, (8,), 10)

    def cnn(mode):
        def make():
            model = CNN(nnx.Rngs(50))
            r = rng(51)
            x, y = images(r)
            if mode == "forward":
                model.eval()
                graphdef, state = nnx.split(model)
                state = jax.tree_util.tree_map(np.asarray, state)
                return Program(lambda st, x: nnx.merge(graphdef, st)(x),
                               (state, x), (like(state, replicated),
                                            P("data", None, None, None)),
                               P("data", None))
            tx = optax.sgd(1e-2, momentum=0.9)
            graphdef, params, rest = nnx.split(model, nnx.Param, ...)
            params = jax.tree_util.tree_map(np.asarray, params)
            rest = jax.tree_util.tree_map(np.asarray, rest)
            opt_state = tx.init(params)

            def step(params, rest, opt_state, x, y):
                model = nnx.merge(graphdef, params, rest)
                value, grads = nnx.value_and_grad(
                    lambda m: int_label_loss(m(x), y))(model)
                _, params, rest = nnx.split(model, nnx.Param, ...)
                updates, opt_state = tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), rest,
                        opt_state, value)
            batch = P("data", None, None, None)
            return Program(step, (params, rest, opt_state, x, y),
                           (P(), P(), P(), batch, P("data")),
                           (P(), P(), P(), P()))
        return make
    c["cnn_forward_dp"] = cnn("forward")
    c["cnn_step_dp"] = cnn("step")

    def convs(mode):
        def make():
            r = rng(52)
            x = normal(r, (8, 8, 8, 8))
            w1 = normal(r, (3, 3, 8, 16), 1 / math.sqrt(72))
            w2 = normal(r, (3, 3, 16, 8), 1 / math.sqrt(144))
            specs = (P("data", None, None, None), P(None, None, None, "model"),
                     P(None, None, "model", None))
            if mode == "loss":
                return Program(conv_tp, (x, w1, w2), specs, P())
            return Program(jax.grad(conv_tp, argnums=(0, 1, 2)), (x, w1, w2),
                           specs, specs)
        return make
    # jax.pmap, as the data-parallel tutorials write it: per-device
    # gradients averaged with lax.pmean, the update replicated.
    def pmapped():
        r = rng(53)
        params = mlp_init(53)

        def step(params, x, y):
            loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
            grads = jax.lax.pmean(grads, "batch")
            return (jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params,
                                           grads),
                    jax.lax.pmean(loss, "batch"))
        fn = jax.pmap(step, axis_name="batch", in_axes=(None, 0, 0))
        return Program(fn, (params, normal(r, (8, 2, D)),
                            ids(r, (8, 2), 16)),
                       (P(), P("batch", None, None), P("batch", None)),
                       (P("batch"), P("batch")), MESH_PMAP)
    c["pmap_dp_sgd_step"] = pmapped
    c["conv_tp_loss"] = convs("loss")
    c["conv_tp_grad"] = convs("grad")
    return c


def three_axis_spec(spec, leaf):
    """A Megatron spec on the 3-axis mesh, with FSDP over "fsdp" on the
    first free dimension that divides."""
    parts = list(spec) + [None] * (np.ndim(leaf) - len(spec))
    for d, part in enumerate(parts):
        if part is None and np.ndim(leaf) >= 2 and np.shape(leaf)[d] % 2 == 0:
            parts[d] = "fsdp"
            break
    return P(*parts)


def linen_program():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(FF)(x))
            x = nn.relu(nn.Dense(FF)(x))
            return nn.Dense(16)(x)
    model = MLP()
    r = rng(48)
    x, y = normal(r, (16, D)), ids(r, (16,), 16)
    params = jax.tree_util.tree_map(
        np.asarray, model.init(jax.random.key(48), x))
    specs = like(params, lambda p, l: (
        P(None, "model") if "Dense_0" in jax.tree_util.keystr(p) and
        np.ndim(l) == 2 else P("model", None)
        if "Dense_1" in jax.tree_util.keystr(p) and np.ndim(l) == 2 else P()))

    def loss(params, x, y):
        return int_label_loss(model.apply(params, x), y)
    return Program(jax.grad(loss), (params, x, y),
                   (specs, P("data", None), P("data")), specs)


def qat_program():
    """Quantization-aware training as users write it: each weight fake-
    quantized to int8 per output column (jnp.round, clip), the straight-
    through estimator (x + stop_gradient(q - x)); gradients, data parallel."""
    params = mlp_init(65)
    r = rng(66)
    x, y = normal(r, (16, D)), ids(r, (16,), 16)

    def fake_quant(w):
        scale = jnp.max(jnp.abs(w), axis=0, keepdims=True) / 127.0
        q = jnp.clip(jnp.round(w / scale), -127, 127) * scale
        return w + jax.lax.stop_gradient(q - w)

    def loss(params, x, y):
        quantized = jax.tree_util.tree_map(
            lambda p: fake_quant(p) if p.ndim == 2 else p, params)
        return mlp_loss(quantized, x, y)
    specs = like(params, replicated)
    return Program(jax.grad(loss), (params, x, y),
                   (specs, P(("data", "model"), None), P(("data", "model"))),
                   specs)


def rounding_program():
    """jnp.round (ties to even), lax.round (ties away from zero),
    jnp.ceil and jnp.cbrt on values with exact ties, negatives, zeros and
    large magnitudes, split over the batch."""
    r = rng(67)
    halves = (np.arange(-64, 64, dtype=np.float32) / 2.0).reshape(8, 16)
    noise = normal(r, (8, 16)) * 1000.0

    def fn(a, b):
        return (jnp.round(a), jax.lax.round(a), jnp.ceil(a), jnp.cbrt(a),
                jnp.round(b), jax.lax.round(b), jnp.ceil(b), jnp.cbrt(b))
    spec = P(("data", "model"), None)
    return Program(fn, (halves, noise), (spec, spec), spec)


def linen_dropout_program():
    """A Linen MLP with dropout, trained by an AdamW step as Flax's
    examples write it: the dropout key passed in (as its uint32 data) and
    given to apply(); the batch over both mesh axes."""
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            x = nn.relu(nn.Dense(FF)(x))
            x = nn.Dropout(0.2, deterministic=not train)(x)
            x = nn.relu(nn.Dense(FF)(x))
            x = nn.Dropout(0.1, deterministic=not train)(x)
            return nn.Dense(16)(x)
    model = MLP()
    r = rng(60)
    x, y = normal(r, (16, D)), ids(r, (16,), 16)
    params = jax.tree_util.tree_map(
        np.asarray, model.init(jax.random.key(60), x, False))
    tx = optax.adamw(1e-3)
    opt_state = tx.init(params)
    key = np.asarray(jax.random.key_data(jax.random.key(61)))

    def loss(params, key, x, y):
        logits = model.apply(params, x, True,
                             rngs={"dropout": jax.random.wrap_key_data(key)})
        return int_label_loss(logits, y)
    specs = like(params, replicated)
    o_specs = optimizer_state_specs(opt_state, params, specs)
    batch = P(("data", "model"), None)
    return Program(optax_step(loss, tx), (params, opt_state, key, x, y),
                   (specs, o_specs, P(), batch, P(("data", "model"))),
                   (specs, o_specs, P()))


def nnx_dropout_program():
    """An NNX block with dropout after attention and the MLP (and on the
    attention weights), its loss under Megatron's tensor parallelism: the
    dropout key an input, given as nnx.Rngs at the call."""
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.norm = nnx.LayerNorm(D, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(
                HEADS, D, dropout_rate=0.1, decode=False, rngs=rngs)
            self.up = nnx.Linear(D, FF, rngs=rngs)
            self.down = nnx.Linear(FF, D, rngs=rngs)
            self.drop = nnx.Dropout(0.1)
            self.head = nnx.Linear(D, VOCAB, rngs=rngs)

        def __call__(self, x, rngs):
            h = self.norm(x)
            x = x + self.drop(self.attn(h, deterministic=False, rngs=rngs),
                              rngs=rngs)
            x = x + self.drop(self.down(jax.nn.gelu(self.up(x))), rngs=rngs)
            return self.head(x)
    model = Block(nnx.Rngs(62))
    # The parameters are the arguments; the rest (the attention's own
    # stream of dropout keys, unused when keys come at the call) stays.
    graphdef, state, rest = nnx.split(model, nnx.Param, ...)
    state = jax.tree_util.tree_map(np.asarray, state)
    r = rng(63)
    x, y = normal(r, (4, SEQ, D)), ids(r, (4, SEQ))
    key = np.asarray(jax.random.key_data(jax.random.key(64)))

    def loss(state, key, x, y):
        rngs = nnx.Rngs(dropout=jax.random.wrap_key_data(key))
        return int_label_loss(nnx.merge(graphdef, state, rest)(x, rngs), y)
    return Program(loss, (state, key, x, y),
                   (like(state, megatron_specs), P(), P("data", None, None),
                    P("data", None)), P())


def equinox_program():
    import equinox as eqx
    model = eqx.nn.MLP(D, 16, FF, 2, key=jax.random.key(49))
    params, static = eqx.partition(model, eqx.is_array)
    params = jax.tree_util.tree_map(np.asarray, params)
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    r = rng(49)
    x, y = normal(r, (16, D)), ids(r, (16,), 16)

    def loss(params, x, y):
        m = eqx.combine(params, static)
        return int_label_loss(jax.vmap(m)(x), y)
    specs = like(params, replicated)
    o_specs = optimizer_state_specs(opt_state, params, specs)
    return Program(optax_step(loss, tx), (params, opt_state, x, y),
                   (specs, o_specs, P("data", None), P("data")),
                   (specs, o_specs, P()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", metavar="NAME", action="append",
                        help="export these programs alone")
    parser.add_argument("--list", action="store_true",
                        help="print the programs' names and stop")
    parser.add_argument("--out", default=DEFAULT_OUT)
    options = parser.parse_args()
    table = corpus()
    if options.list:
        print("\n".join(table))
        return
    for name in options.only or []:
        if name not in table:
            sys.exit(f"unknown program {name}")
    failed = []
    for name, make in table.items():
        if options.only and name not in options.only:
            continue
        try:
            fn, args, in_shardings, out_shardings = make().flat()
            export_jax.export(options.out, name, fn, args, in_shardings,
                              out_shardings)
        except Exception as error:  # noqa: BLE001 - report and go on
            failed.append(name)
            print(f"{name}: export failed: {type(error).__name__}: "
                  f"{str(error)[:2000]}", file=sys.stderr)
    if failed:
        sys.exit(f"{len(failed)} programs failed to export: "
                 + ", ".join(failed))


if __name__ == "__main__":
    main()
