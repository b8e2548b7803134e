#!/usr/bin/env python3
"""Exports small sharded JAX programs as fixtures for Partita's importer.

For every model below it writes a directory
test/Conversion/StableHLOToPartita/<name>/ holding
  module.mlir      the jitted function lowered to StableHLO with Shardy
                   shardings, in generic op form with debug locations (the
                   absolute path of this script in them becomes
                   tools/export_jax.py, so the file is the same wherever it
                   is generated);
  input_<i>.npy    the i-th positional argument (deterministic numpy RNG);
  result_<i>.npy   the i-th output of the jitted function on those inputs,
                   computed by JAX (outputs flattened in pytree order);
  tolerance.json   {"spread": [...]}: per result, the largest difference
                   between JAX's sharded result and the same program on one
                   device (partita run --expect allows four times more);
  xla.json         what XLA did with it: the collectives of the compiled SPMD
                   module with their per-device bus traffic, the compiled
                   input and output shardings, lowering and compile times.

All programs run on a (2, 4) mesh with axes ("data", "model") over 8
emulated CPU devices, and every array is float32 (token ids int32) and
smaller than 64 KiB.

Bus traffic per device, with S the size in bytes of the per-device buffer
and n the size of the collective's device group:
  all-reduce          2 (n-1)/n S
  all-gather          (n-1)/n S   (S: the gathered result)
  reduce-scatter      (n-1)/n S   (S: the operand before scattering)
  all-to-all          (n-1)/n S
  collective-permute  S

Usage (CPU JAX from PyPI is enough: pip install jax==0.10.2 numpy):
    /tmp/jaxenv/bin/python tools/export_jax.py [--only NAME] [--out DIR]
"""

import argparse
import inspect
import json
import math
import os
import re
import shutil
import statistics
import sys
import time

# Eight emulated CPU devices; must be set before jax is imported.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

from hlo_collectives import check_collectives_found, collectives  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

SCRIPT = os.path.abspath(__file__)
REPO_ROOT = os.path.dirname(os.path.dirname(SCRIPT))
SCRIPT_REL = "tools/export_jax.py"
DEFAULT_OUT = os.path.join(REPO_ROOT, "test", "Conversion",
                           "StableHLOToPartita")

# Auto axes: shardings are given to jit and propagated by the compiler, not
# carried in the types of traced values.
MESH = jax.make_mesh((2, 4), ("data", "model"),
                     axis_types=(AxisType.Auto, AxisType.Auto))
ALL = ("data", "model")  # both axes on one dimension: 8-way

TIMING_RUNS = 3

# Model dimensions.
D_MODEL = 32
N_HEADS = 4
HEAD_DIM = 8
D_FF = 64
VOCAB = 64
SEQ = 8
LN_EPS = 1e-5
N_LAYERS = 2


def sharding(*spec):
    return NamedSharding(MESH, P(*spec))


def with_arg_names(fn, names):
    """Gives a function taking *args named positional parameters, so that the
    lowered module names its arguments (loc("wq_0")) instead of args[i]."""
    fn.__signature__ = inspect.Signature([
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    return fn


# ---------------------------------------------------------------------------
# Inputs.

def normal(rng, shape, std):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def weight(rng, shape, fan_in):
    """A weight with activations of unit variance: normal / sqrt(fan_in)."""
    return normal(rng, shape, 1.0 / math.sqrt(fan_in))


def ln_scale(rng):
    return (1.0 + rng.standard_normal(D_MODEL) * 0.1).astype(np.float32)


def ln_bias(rng):
    return normal(rng, (D_MODEL,), 0.1)


def tokens(rng, batch):
    return rng.integers(0, VOCAB, (batch, SEQ), dtype=np.int32)


# ---------------------------------------------------------------------------
# Models.

def ffn(x, w1, w2):
    return jax.nn.gelu(x @ w1, approximate=True) @ w2


def ffn_inputs(seed, batch=16):
    rng = np.random.default_rng(seed)
    return [normal(rng, (batch, D_MODEL), 1.0),
            weight(rng, (D_MODEL, D_FF), D_MODEL),
            weight(rng, (D_FF, D_MODEL), D_FF)]


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + LN_EPS) * scale + bias


def attention(h, wq, wk, wv, wo):
    """Causal multi-head self-attention; h is [batch, seq, d_model], wq/wk/wv
    are [d_model, heads, head_dim] and wo is [heads, head_dim, d_model]."""
    q = jnp.einsum("bsm,mhd->bshd", h, wq)
    k = jnp.einsum("bsm,mhd->bshd", h, wk)
    v = jnp.einsum("bsm,mhd->bshd", h, wv)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(HEAD_DIM)
    seq = h.shape[1]
    mask = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v)
    return jnp.einsum("bqhd,hdm->bqm", out, wo)


LAYER_PARAMS = ("ln1_scale", "ln1_bias", "wq", "wk", "wv", "wo",
                "ln2_scale", "ln2_bias", "w1", "w2")


def transformer_layer(x, ln1_scale, ln1_bias, wq, wk, wv, wo,
                      ln2_scale, ln2_bias, w1, w2):
    """Pre-LayerNorm transformer layer: attention and MLP, each residual."""
    x = x + attention(layer_norm(x, ln1_scale, ln1_bias), wq, wk, wv, wo)
    h = layer_norm(x, ln2_scale, ln2_bias)
    return x + jax.nn.gelu(h @ w1, approximate=True) @ w2


def layer_params(rng):
    """The arrays of one layer, in LAYER_PARAMS order."""
    return [ln_scale(rng), ln_bias(rng),
            weight(rng, (D_MODEL, N_HEADS, HEAD_DIM), D_MODEL),
            weight(rng, (D_MODEL, N_HEADS, HEAD_DIM), D_MODEL),
            weight(rng, (D_MODEL, N_HEADS, HEAD_DIM), D_MODEL),
            weight(rng, (N_HEADS, HEAD_DIM, D_MODEL), D_MODEL),
            ln_scale(rng), ln_bias(rng),
            weight(rng, (D_MODEL, D_FF), D_MODEL),
            weight(rng, (D_FF, D_MODEL), D_FF)]


def layer_tp_shardings():
    """Megatron-style shardings of one layer's params: heads and the MLP's
    hidden dimension over "model", layer norms replicated."""
    return [sharding(), sharding(),
            sharding(None, "model", None), sharding(None, "model", None),
            sharding(None, "model", None), sharding("model", None, None),
            sharding(), sharding(),
            sharding(None, "model"), sharding("model", None)]


# GPT parameters after the two int32 arguments (tokens, targets).
GPT_PARAMS = (("wte", "wpe")
              + tuple(f"{p}_{i}" for i in range(N_LAYERS) for p in LAYER_PARAMS)
              + ("lnf_scale", "lnf_bias", "head"))


def gpt_loss(token_ids, targets, *params):
    """Mean softmax cross-entropy of a GPT with N_LAYERS layers; params are
    the arrays named in GPT_PARAMS, in that order."""
    wte, wpe = params[0], params[1]
    layers = params[2:2 + N_LAYERS * len(LAYER_PARAMS)]
    lnf_scale, lnf_bias, head = params[2 + N_LAYERS * len(LAYER_PARAMS):]
    x = jax.nn.one_hot(token_ids, VOCAB, dtype=jnp.float32) @ wte + wpe
    for i in range(N_LAYERS):
        x = transformer_layer(
            x, *layers[i * len(LAYER_PARAMS):(i + 1) * len(LAYER_PARAMS)])
    logits = layer_norm(x, lnf_scale, lnf_bias) @ head
    target_logits = jnp.sum(
        jax.nn.one_hot(targets, VOCAB, dtype=jnp.float32) * logits, axis=-1)
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - target_logits)


with_arg_names(gpt_loss, ("tokens", "targets") + GPT_PARAMS)


def gpt_grad(token_ids, targets, *params):
    """Gradients of gpt_loss with respect to every float parameter."""
    return jax.grad(gpt_loss, argnums=tuple(range(2, 2 + len(params))))(
        token_ids, targets, *params)


with_arg_names(gpt_grad, ("tokens", "targets") + GPT_PARAMS)


def gpt_inputs(seed, batch):
    rng = np.random.default_rng(seed)
    args = [tokens(rng, batch), tokens(rng, batch),
            # One-hot rows pick one row each: unit variance embeddings.
            normal(rng, (VOCAB, D_MODEL), 1.0),
            normal(rng, (SEQ, D_MODEL), 0.1)]
    for _ in range(N_LAYERS):
        args += layer_params(rng)
    args += [ln_scale(rng), ln_bias(rng),
             weight(rng, (D_MODEL, VOCAB), D_MODEL)]
    return args


def mlp_stack(x, w1s, w2s):
    """A residual MLP block applied once per layer with lax.scan over
    stacked weights (a scanned layer stack)."""
    def block(h, weights):
        w1, w2 = weights
        return h + jax.nn.gelu(h @ w1, approximate=True) @ w2, None
    return jax.lax.scan(block, x, (w1s, w2s))[0]


def mlp_stack_inputs(seed, layers=3, batch=16):
    rng = np.random.default_rng(seed)
    return [normal(rng, (batch, D_MODEL), 1.0),
            weight(rng, (layers, D_MODEL, D_FF), D_MODEL),
            weight(rng, (layers, D_FF, D_MODEL), D_FF)]


def shard_map_program(x, w):
    """Per-device code (shard_map): a local matmul, psum over "model", a
    ppermute swapping the two "data" halves, all_gathers, a psum_scatter
    and an all_to_all."""
    def local(x, w):
        y = jax.lax.psum(x @ w, "model")                            # [4, 4]
        z = jax.lax.ppermute(y, "data", [(0, 1), (1, 0)])
        g = jax.lax.all_gather(z, "data", axis=0, tiled=True)      # [8, 4]
        s = jax.lax.psum_scatter(g, "model", scatter_dimension=1,
                                 tiled=True)                        # [8, 1]
        s = jax.lax.all_gather(s, "model", axis=1, tiled=True)     # [8, 4]
        t = jax.lax.all_to_all(s, "data", 0, 1, tiled=True)        # [4, 8]
        return z + 0.5 * g[:z.shape[0]] + jnp.sum(t, axis=1, keepdims=True)
    return jax.shard_map(local, mesh=MESH,
                         in_specs=(P("data", "model"), P("model", None)),
                         out_specs=P("data", None), check_vma=False)(x, w)


def shard_map_inputs(seed):
    rng = np.random.default_rng(seed)
    return [normal(rng, (8, 16), 1.0), weight(rng, (16, 4), 16)]


def take_along(x, idx):
    """jnp.take_along_axis on the last axis, then a row sum."""
    picked = jnp.take_along_axis(x, idx, axis=-1)
    return picked, jnp.sum(picked, axis=-1)


def take_along_inputs(seed):
    rng = np.random.default_rng(seed)
    return [normal(rng, (8, 6), 1.0),
            rng.integers(0, 6, (8, 3), dtype=np.int32)]


N_EXPERTS = 4
TOP_K = 2


def moe_layer(x, router, w1, w2):
    """A mixture-of-experts MLP: softmax router, top-2 experts per token,
    dense dispatch and combine einsums over an expert dimension (every
    expert sees every token, weighted by its gate, 0 when not chosen)."""
    probs = jax.nn.softmax(x @ router, axis=-1)  # [tokens, experts]
    gate, chosen = jax.lax.top_k(probs, TOP_K)   # [tokens, k]
    mask = jnp.sum(jax.nn.one_hot(chosen, N_EXPERTS, dtype=jnp.float32)
                   * gate[..., None], axis=1)    # [tokens, experts]
    h = jax.nn.gelu(jnp.einsum("td,edf->etf", x, w1), approximate=True)
    y = jnp.einsum("etf,efd->etd", h, w2)
    return jnp.einsum("etd,te->td", y, mask)


def moe_loss(x, router, w1, w2):
    return jnp.mean(moe_layer(x, router, w1, w2) ** 2)


def moe_grad(x, router, w1, w2):
    return jax.grad(moe_loss, argnums=(1, 2, 3))(x, router, w1, w2)


def moe_inputs(seed, tokens_=16):
    rng = np.random.default_rng(seed)
    return [normal(rng, (tokens_, D_MODEL), 1.0),
            weight(rng, (D_MODEL, N_EXPERTS), D_MODEL),
            weight(rng, (N_EXPERTS, D_MODEL, D_FF), D_MODEL),
            weight(rng, (N_EXPERTS, D_FF, D_MODEL), D_FF)]


# Uneven dimensions: jit refuses in/out shardings that do not divide an
# argument, so these programs take whole (or evenly split) arguments and
# constrain their intermediates to splits that do not divide.

UNEVEN_VOCAB = 50  # over "model" = 4: padded to 52
UNEVEN_BATCH = 12  # over all 8 devices: padded to 16


def constrain(x, *spec):
    return jax.lax.with_sharding_constraint(x, sharding(*spec))


def vocab_loss(h, emb, targets):
    """Mean softmax cross-entropy with the vocabulary (50) split over
    "model" and the tokens over "data"."""
    logits = constrain(h @ constrain(emb, None, "model"), "data", "model")
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, targets[:, None], axis=-1)[:, 0]
    return jnp.mean(lse - picked)


def vocab_grad(h, emb, targets):
    return jax.grad(vocab_loss, argnums=(0, 1))(h, emb, targets)


def vocab_inputs(seed, tokens_=16):
    rng = np.random.default_rng(seed)
    return [normal(rng, (tokens_, D_MODEL), 1.0),
            weight(rng, (D_MODEL, UNEVEN_VOCAB), D_MODEL),
            rng.integers(0, UNEVEN_VOCAB, (tokens_,), dtype=np.int32)]


def batch_uneven_loss(x, w1, w2):
    """The FFN on 12 rows split over all 8 devices, summed into a loss."""
    return jnp.mean(ffn(constrain(x, ALL, None), w1, w2) ** 2)


def batch_uneven_grad(x, w1, w2):
    return jax.grad(batch_uneven_loss, argnums=(1, 2))(x, w1, w2)


def gpt_dp_tp_param_shardings():
    """Vocabulary-parallel embedding and head, Megatron layers, the rest
    replicated."""
    shardings = [sharding("model", None), sharding()]
    for _ in range(N_LAYERS):
        shardings += layer_tp_shardings()
    return shardings + [sharding(), sharding(), sharding(None, "model")]


def fsdp_sharding(array):
    """The first dimension over both axes where it divides by 8, else
    replicated; vectors (layer norm params) stay replicated."""
    if array.ndim >= 2 and array.shape[0] % MESH.size == 0:
        return sharding(ALL, *([None] * (array.ndim - 1)))
    return sharding()


# ---------------------------------------------------------------------------
# Export.

def portable_asm(lowered):
    asm = lowered.compiler_ir("stablehlo").operation.get_asm(
        print_generic_op_form=True, enable_debug_info=True)
    for path in {SCRIPT, os.path.realpath(SCRIPT)}:
        asm = asm.replace(f'"{path}"', f'"{SCRIPT_REL}"')
    # Other scripts of the repository that call export() (bench/vs_xla.py).
    for root in {REPO_ROOT, os.path.realpath(REPO_ROOT)}:
        asm = asm.replace(f'"{root}/', '"')
    # Library sources (Flax, Optax, JAX) by their path inside site-packages.
    asm = re.sub(r'"[^"]*/site-packages/', '"site-packages/', asm)
    for prefix in (REPO_ROOT, "/tmp/", "/work/"):
        if prefix in asm:
            raise RuntimeError(f"module still mentions {prefix}")
    return asm


def spec_strings(shardings):
    return [str(s.spec) for s in jax.tree_util.tree_leaves(shardings)]


def export(out_dir, name, fn, args, in_shardings, out_shardings):
    """Lowers and compiles fn on args with the given shardings, runs it and
    writes test/Conversion/StableHLOToPartita/<name>/. Names ending in _gspmd
    are lowered with Shardy off: GSPMD's mhlo.sharding strings instead of sdy
    shardings."""
    gspmd = name.endswith("_gspmd")
    jax.config.update("jax_use_shardy_partitioner", not gspmd)
    try:
        _export(out_dir, name, fn, args, in_shardings, out_shardings)
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)


def _export(out_dir, name, fn, args, in_shardings, out_shardings):
    abstract = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    lower_times, compile_times = [], []
    for _ in range(TIMING_RUNS):
        jax.clear_caches()
        start = time.perf_counter()
        lowered = jax.jit(fn, in_shardings=in_shardings,
                          out_shardings=out_shardings,
                          keep_unused=True).lower(*abstract)
        lowered_at = time.perf_counter()
        compiled = lowered.compile()
        lower_times.append(lowered_at - start)
        compile_times.append(time.perf_counter() - lowered_at)

    jitted = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings)
    results = [np.asarray(r) for r in jax.tree_util.tree_leaves(jitted(*args))]
    # The same program on one device: how far JAX itself moves each result
    # when only the order of its sums changes (tolerance.json).
    alone = [np.asarray(r) for r in jax.tree_util.tree_leaves(
        jax.jit(fn, keep_unused=True)(*args))]
    spread = [float(np.max(np.abs(a.astype(np.float64)
                                  - b.astype(np.float64)), initial=0.0))
              for a, b in zip(results, alone)]
    # A program that computes in 16-bit floats is as exact as their
    # rounding, which XLA's fusions skip between ops (Partita rounds after
    # each): at least one 16-bit ulp of each result's largest magnitude.
    asm_types = lowered.as_text()
    narrow = 2.0 ** -8 if "bf16" in asm_types else (
        2.0 ** -11 if re.search(r"[x<]f16>", asm_types) else 0.0)
    spread = [max(s, narrow * float(np.max(np.abs(r.astype(np.float64)),
                                            initial=0.0)))
              if not (np.issubdtype(r.dtype, np.integer) or r.dtype == bool)
              else s
              for s, r in zip(spread, results)]

    hlo_text = compiled.as_text()
    found = collectives(hlo_text)
    check_collectives_found(hlo_text, found)
    report = {
        "collectives": found,
        "collective_count": sum(c["count"] for c in found),
        "total_bytes_per_device": sum(c["bytes_per_device"] for c in found),
        "input_shardings": spec_strings(compiled.input_shardings[0]),
        "output_shardings": spec_strings(compiled.output_shardings),
        "lower_seconds": statistics.median(lower_times),
        "compile_seconds": statistics.median(compile_times),
        "jax_version": jax.__version__,
    }

    directory = os.path.join(out_dir, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    with open(os.path.join(directory, "module.mlir"), "w") as f:
        f.write(portable_asm(lowered))
    for i, a in enumerate(args):
        np.save(os.path.join(directory, f"input_{i}.npy"), a)
    for i, r in enumerate(results):
        np.save(os.path.join(directory, f"result_{i}.npy"), r)
    with open(os.path.join(directory, "tolerance.json"), "w") as f:
        json.dump({"spread": spread}, f)
        f.write("\n")
    with open(os.path.join(directory, "xla.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"{name}: {len(args)} inputs, {len(results)} results, "
          f"{report['collective_count']} collectives per step, "
          f"{report['total_bytes_per_device']:.0f} bytes per device")


# ---------------------------------------------------------------------------
# Fixtures: name -> (function, inputs, in_shardings, out_shardings).

def fixtures():
    ffn_tp = (sharding("data", None), sharding(None, "model"),
              sharding("model", None))
    layer_in = [sharding("data", None, None)] + layer_tp_shardings()

    def layer_inputs():
        rng = np.random.default_rng(5)
        return [normal(rng, (4, SEQ, D_MODEL), 1.0)] + layer_params(rng)

    gpt_dp = [sharding("data", None), sharding("data", None)]
    gpt_dp_tp = gpt_dp + gpt_dp_tp_param_shardings()
    fsdp_args = gpt_inputs(8, batch=8)
    gpt_fsdp = ([sharding(ALL, None), sharding(ALL, None)]
                + [fsdp_sharding(a) for a in fsdp_args[2:]])
    gpt_grad_fsdp_args = gpt_inputs(20, batch=8)
    gpt_grad_fsdp = ([sharding(ALL, None), sharding(ALL, None)]
                     + [fsdp_sharding(a) for a in gpt_grad_fsdp_args[2:]])
    rng = np.random.default_rng(21)
    layer_fsdp_args = [normal(rng, (8, SEQ, D_MODEL), 1.0)] + layer_params(rng)

    return {
        # Megatron MLP: hidden dimension over "model", batch over "data".
        "ffn_tp": (ffn, ffn_inputs(1), ffn_tp, sharding("data", None)),
        # Data parallel: replicated weights, "model" unused.
        "ffn_dp": (ffn, ffn_inputs(2),
                   (sharding("data", None), sharding(), sharding()),
                   sharding("data", None)),
        # Fully sharded: batch and every weight's rows 8-way.
        "ffn_fsdp": (ffn, ffn_inputs(3),
                     (sharding(ALL, None), sharding(ALL, None),
                      sharding(ALL, None)),
                     sharding(ALL, None)),
        # As ffn_tp, but the output stays sharded over "model" too, so the
        # partial sums can be reduce-scattered instead of all-reduced.
        "ffn_dp_tp": (ffn, ffn_inputs(4), ffn_tp, sharding("data", "model")),
        "layer_tp": (transformer_layer, layer_inputs(), layer_in,
                     sharding("data", None, None)),
        "gpt_loss_dp_tp": (gpt_loss, gpt_inputs(6, batch=4), gpt_dp_tp,
                           sharding()),
        "gpt_grad_dp_tp": (gpt_grad, gpt_inputs(7, batch=4), gpt_dp_tp,
                           tuple(gpt_dp_tp[2:])),
        "gpt_loss_fsdp": (gpt_loss, fsdp_args, gpt_fsdp, sharding()),
        # FSDP (ZeRO-3): a transformer layer with batch and every weight
        # whose first dimension divides split 8-way, and the GPT's
        # gradients, each sharded like its parameter.
        "layer_fsdp": (transformer_layer, layer_fsdp_args,
                       [sharding(ALL, None, None)]
                       + [fsdp_sharding(a) for a in layer_fsdp_args[1:]],
                       sharding(ALL, None, None)),
        "gpt_grad_fsdp": (gpt_grad, gpt_grad_fsdp_args, gpt_grad_fsdp,
                          tuple(gpt_grad_fsdp[2:])),
        # The Megatron FFN and the GPT loss again, as GSPMD (Shardy off)
        # writes them: mhlo.sharding strings, custom_call @Sharding.
        "ffn_tp_gspmd": (ffn, ffn_inputs(13), ffn_tp, sharding("data", None)),
        "gpt_loss_dp_tp_gspmd": (gpt_loss, gpt_inputs(14, batch=4),
                                 gpt_dp_tp, sharding()),
        # Three residual MLP blocks as one lax.scan over stacked weights,
        # Megatron-sharded over "model", batch over "data".
        "scan_stack_dp_tp": (mlp_stack, mlp_stack_inputs(9),
                             (sharding("data", None),
                              sharding(None, None, "model"),
                              sharding(None, "model", None)),
                             sharding("data", None)),
        # shard_map with psum, ppermute and all_gather.
        "shard_map": (shard_map_program, shard_map_inputs(10),
                      (sharding("data", "model"), sharding("model", None)),
                      sharding("data", None)),
        # A per-row gather (take_along_axis) on data-parallel rows.
        "take_along_dp": (take_along, take_along_inputs(15),
                          (sharding("data", None), sharding("data", None)),
                          (sharding("data", None), sharding("data"))),
        # Mixture of experts, experts over "model" (expert parallelism),
        # tokens over "data"; forward and gradient.
        "moe_ep": (moe_layer, moe_inputs(11),
                   (sharding("data", None), sharding(),
                    sharding("model", None, None),
                    sharding("model", None, None)),
                   sharding("data", None)),
        # Uneven dimensions (constrained inside: jit refuses uneven
        # arguments): a vocabulary of 50 over "model", forward and
        # gradient; 12 rows over 8 devices, forward and gradient.
        "vocab_uneven_tp": (vocab_loss, vocab_inputs(16),
                            (sharding("data", None), sharding(),
                             sharding("data")),
                            sharding()),
        "vocab_grad_uneven_tp": (vocab_grad, vocab_inputs(17),
                                 (sharding("data", None), sharding(),
                                  sharding("data")),
                                 (sharding("data", None), sharding())),
        "batch_uneven_dp": (batch_uneven_loss,
                            ffn_inputs(18, batch=UNEVEN_BATCH),
                            (sharding(), sharding(), sharding()),
                            sharding()),
        "batch_grad_uneven_dp": (batch_uneven_grad,
                                 ffn_inputs(19, batch=UNEVEN_BATCH),
                                 (sharding(), sharding(), sharding()),
                                 (sharding(), sharding())),
        "moe_grad_ep": (moe_grad, moe_inputs(12),
                        (sharding("data", None), sharding(),
                         sharding("model", None, None),
                         sharding("model", None, None)),
                        (sharding(), sharding("model", None, None),
                         sharding("model", None, None))),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", metavar="NAME",
                        help="export this fixture alone")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="output directory (default: "
                             "test/Conversion/StableHLOToPartita)")
    options = parser.parse_args()

    table = fixtures()
    if options.only and options.only not in table:
        sys.exit(f"unknown fixture {options.only}; "
                 f"one of {', '.join(table)}")
    for name, (fn, args, in_shardings, out_shardings) in table.items():
        if options.only in (None, name):
            export(options.out, name, fn, args, tuple(in_shardings),
                   out_shardings)


if __name__ == "__main__":
    main()
