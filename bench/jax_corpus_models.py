"""The models, meshes and helpers of the JAX corpus (bench/jax_corpus.py):
plain jax.numpy MLPs and Optax steps, Flax NNX models (a GPT with
nnx.MultiHeadAttention, Llama blocks, scanned layer stacks, a ViT, a CNN),
shard_map and MoE programs, and `Program`, one corpus entry with the
PartitionSpecs of its arguments and results. Imported by jax_corpus.py,
which lists the programs and exports them.
"""

import math
import os
import re
import sys

# Eight emulated CPU devices; must be set before jax is imported.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))

import export_jax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


AUTO2 = (AxisType.Auto, AxisType.Auto)
MESH2 = jax.make_mesh((2, 4), ("data", "model"), axis_types=AUTO2)
MESH1 = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
# pmap's own mesh: one axis over every device, named by axis_name.
MESH_PMAP = jax.make_mesh((8,), ("batch",), axis_types=(AxisType.Auto,))
MESH3 = jax.make_mesh((2, 2, 2), ("data", "fsdp", "model"),
                      axis_types=(AxisType.Auto,) * 3)

D = 32       # model width
HEADS = 4
HEAD_DIM = D // HEADS
FF = 64
VOCAB = 64
SEQ = 8


def is_spec(x):
    return isinstance(x, P) or x is None


def named(mesh, specs):
    """NamedShardings over `mesh` for a pytree of PartitionSpecs."""
    return jax.tree_util.tree_map(
        lambda s: NamedSharding(mesh, s if s is not None else P()), specs,
        is_leaf=is_spec)


def arg_name(path):
    text = jax.tree_util.keystr(path)
    text = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")
    return text if text and not text[0].isdigit() else "a_" + text


class Program:
    """One corpus entry: `fn` over the pytree `args`, with PartitionSpecs for
    the arguments (a pytree prefix of args) and the results."""

    def __init__(self, fn, args, in_specs, out_specs, mesh=MESH2):
        self.fn, self.args, self.mesh = fn, args, mesh
        self.in_specs, self.out_specs = in_specs, out_specs

    def flat(self):
        """The program over positional leaves: (fn, leaves, in, out)."""
        paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(
            self.args)
        leaves = [np.asarray(leaf) for _, leaf in paths_leaves]
        names = []
        for path, _ in paths_leaves:
            name = arg_name(path)
            while name in names:
                name += "_"
            names.append(name)
        spec_tree = jax.tree_util.tree_map(
            lambda s: s, self.in_specs, is_leaf=is_spec)
        in_leaves = broadcast_prefix(spec_tree, self.args)
        fn = self.fn

        def flat_fn(*xs):
            return fn(*jax.tree_util.tree_unflatten(treedef, list(xs)))

        export_jax.with_arg_names(flat_fn, names)
        return (flat_fn, leaves, tuple(named(self.mesh, s) for s in in_leaves),
                named(self.mesh, self.out_specs))


def broadcast_prefix(prefix, tree):
    """The leaves of `tree`, each paired with the spec of `prefix` above it."""
    out = []

    def visit(spec, sub):
        n = len(jax.tree_util.tree_leaves(sub))
        out.extend([spec] * n)

    jax.tree_util.tree_map(visit, prefix, tree, is_leaf=is_spec)
    return out


def rng(seed):
    return np.random.default_rng(seed)


def normal(r, shape, std=1.0, dtype=np.float32):
    return (r.standard_normal(shape) * std).astype(dtype)


def ids(r, shape, high=VOCAB):
    return r.integers(0, high, shape, dtype=np.int32)


def like(tree, spec_of):
    """A spec tree shaped like `tree`: spec_of(path, leaf) for each leaf."""
    return jax.tree_util.tree_map_with_path(spec_of, tree)


def fsdp_specs(axis):
    """FSDP: each array's largest dimension divisible by the axis size split
    over `axis`; vectors and the indivisible replicated."""
    def spec(path, leaf):
        shape = np.shape(leaf)
        if len(shape) < 2:
            return P()
        size = MESH2.shape.get(axis, 0) if isinstance(axis, str) else 8
        best = max(range(len(shape)), key=lambda d: shape[d])
        if shape[best] % size:
            return P()
        parts = [None] * len(shape)
        parts[best] = axis
        return P(*parts)
    return spec


COLUMN = {"query", "key", "value", "q", "k", "v", "up", "gate", "wi", "fc1",
          "w1", "lm_head", "head"}
ROW = {"out", "o", "down", "fc2", "w2", "proj"}


def path_names(path):
    """The names along a pytree path (dict keys and attributes), without
    NNX's trailing `.value`."""
    names = []
    for key in path:
        name = getattr(key, "key", getattr(key, "name", None))
        if isinstance(name, str):
            names.append(name)
    if names and names[-1] == "value":
        names.pop()
    return names


def megatron_specs(path, leaf):
    """Megatron by module name: column-parallel in-projections (query, key,
    value, up, gate, ...: the output features, and their biases, over
    "model"), row-parallel out-projections (out, o, down, ...: the input
    features), the embedding split over the vocabulary, the rest (norms,
    row-parallel biases) replicated."""
    names = path_names(path)
    shape = np.shape(leaf)
    param = names[-1] if names else ""
    module = names[-2] if len(names) >= 2 else ""
    if param == "embedding" and len(shape) == 2 and shape[0] % 4 == 0:
        return P("model", None)
    if module in COLUMN:
        if param == "kernel" and len(shape) == 2 and shape[1] % 4 == 0:
            return P(None, "model")
        if param == "kernel" and len(shape) == 3 and shape[1] % 4 == 0:
            return P(None, "model", None)   # [d_model, heads, head_dim]
        if param == "bias" and shape and shape[0] % 4 == 0:
            return P("model", *([None] * (len(shape) - 1)))
    if module in ROW and param == "kernel" and shape and shape[0] % 4 == 0:
        return P("model", *([None] * (len(shape) - 1)))
    return P()


# ---------------------------------------------------------------------------
# Models: plain jax.numpy.

def mlp_init(seed, sizes=(D, FF, FF, 16)):
    r = rng(seed)
    return {f"layer{i}": {"w": normal(r, (a, b), 1 / math.sqrt(a)),
                          "b": np.zeros((b,), np.float32)}
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))}


def mlp_apply(params, x):
    n = len(params)
    for i in range(n):
        x = x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"]
        if i + 1 < n:
            x = jax.nn.relu(x)
    return x


def int_label_loss(logits, labels):
    return optax.softmax_cross_entropy_with_integer_labels(
        logits, labels).mean()


def mlp_loss(params, x, y):
    return int_label_loss(mlp_apply(params, x), y)


def optax_step(loss_fn, tx):
    def step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return step


def mlp_step_program(seed, tx, param_spec, batch_spec=P("data", None),
                     mesh=MESH2, batch=16):
    params = mlp_init(seed)
    r = rng(seed + 100)
    x, y = normal(r, (batch, D)), ids(r, (batch,), 16)
    opt_state = tx.init(params)
    p_specs = like(params, param_spec)
    o_specs = optimizer_state_specs(opt_state, params, p_specs)
    return Program(optax_step(mlp_loss, tx), (params, opt_state, x, y),
                   (p_specs, o_specs, batch_spec, P(batch_spec[0])),
                   (p_specs, o_specs, P()), mesh)


def optimizer_state_specs(opt_state, params, p_specs):
    """Optimizer state sharded like the parameters it shadows (moments),
    everything else (counts, scalars) replicated."""
    shapes = {}
    for (path, leaf), spec in zip(
            jax.tree_util.tree_flatten_with_path(params)[0],
            jax.tree_util.tree_leaves(p_specs, is_leaf=is_spec)):
        shapes.setdefault(np.shape(leaf), spec)

    def spec(path, leaf):
        shape = np.shape(leaf)
        if len(shape) >= 1 and shape in shapes:
            return shapes[shape]
        return P()
    return like(opt_state, spec)


def replicated(path, leaf):
    return P()


# ---------------------------------------------------------------------------
# Models: Flax NNX.

class Block(nnx.Module):
    """Pre-norm decoder block: nnx.MultiHeadAttention (causal) and a GELU
    MLP, LayerNorm or RMSNorm."""

    def __init__(self, rngs, norm="layer", heads=HEADS):
        make_norm = nnx.LayerNorm if norm == "layer" else nnx.RMSNorm
        self.norm1 = make_norm(D, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(
            num_heads=heads, in_features=D, qkv_features=D, decode=False,
            rngs=rngs)
        self.norm2 = make_norm(D, rngs=rngs)
        self.up = nnx.Linear(D, FF, rngs=rngs)
        self.down = nnx.Linear(FF, D, rngs=rngs)

    def __call__(self, x):
        mask = nnx.make_causal_mask(jnp.ones(x.shape[:2]))
        h = self.norm1(x)
        x = x + self.attn(h, mask=mask)
        return x + self.down(jax.nn.gelu(self.up(self.norm2(x))))


class GPT(nnx.Module):
    def __init__(self, rngs, layers=2, norm="layer", vocab=VOCAB):
        self.embed = nnx.Embed(vocab, D, rngs=rngs)
        self.pos = nnx.Embed(SEQ, D, rngs=rngs)
        self.blocks = nnx.List([Block(rngs, norm) for _ in range(layers)])
        self.norm = nnx.LayerNorm(D, rngs=rngs)
        self.lm_head = nnx.Linear(D, vocab, use_bias=False, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens) + self.pos(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm(x))


def rotary(x, base=10000.0):
    """Rotary position embedding of x [batch, seq, heads, head_dim]."""
    seq, dim = x.shape[1], x.shape[-1]
    freq = 1.0 / base ** (jnp.arange(0, dim, 2, dtype=jnp.float32) / dim)
    angle = jnp.arange(seq, dtype=jnp.float32)[:, None] * freq[None, :]
    cos = jnp.cos(angle)[None, :, None, :]
    sin = jnp.sin(angle)[None, :, None, :]
    x1, x2 = x[..., ::2], x[..., 1::2]
    out = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return out.reshape(x.shape).astype(x.dtype)


class LlamaBlock(nnx.Module):
    """RMSNorm, rotary grouped-query attention, SwiGLU: the Llama block."""

    def __init__(self, rngs, kv_heads=2, dtype=jnp.float32):
        self.kv_heads = kv_heads
        self.norm1 = nnx.RMSNorm(D, rngs=rngs, dtype=dtype)
        self.q = nnx.Linear(D, HEADS * HEAD_DIM, use_bias=False, rngs=rngs,
                            dtype=dtype)
        self.k = nnx.Linear(D, kv_heads * HEAD_DIM, use_bias=False,
                            rngs=rngs, dtype=dtype)
        self.v = nnx.Linear(D, kv_heads * HEAD_DIM, use_bias=False,
                            rngs=rngs, dtype=dtype)
        self.o = nnx.Linear(HEADS * HEAD_DIM, D, use_bias=False, rngs=rngs,
                            dtype=dtype)
        self.norm2 = nnx.RMSNorm(D, rngs=rngs, dtype=dtype)
        self.gate = nnx.Linear(D, FF, use_bias=False, rngs=rngs, dtype=dtype)
        self.up = nnx.Linear(D, FF, use_bias=False, rngs=rngs, dtype=dtype)
        self.down = nnx.Linear(FF, D, use_bias=False, rngs=rngs, dtype=dtype)

    def __call__(self, x):
        b, s, _ = x.shape
        h = self.norm1(x)
        q = rotary(self.q(h).reshape(b, s, HEADS, HEAD_DIM))
        k = rotary(self.k(h).reshape(b, s, self.kv_heads, HEAD_DIM))
        v = self.v(h).reshape(b, s, self.kv_heads, HEAD_DIM)
        out = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(out.reshape(b, s, HEADS * HEAD_DIM))
        h = self.norm2(x)
        return x + self.down(jax.nn.silu(self.gate(h)) * self.up(h))


class Llama(nnx.Module):
    def __init__(self, rngs, layers=2, kv_heads=2, dtype=jnp.float32):
        self.embed = nnx.Embed(VOCAB, D, rngs=rngs, dtype=dtype)
        self.blocks = nnx.List([LlamaBlock(rngs, kv_heads, dtype)
                                for _ in range(layers)])
        self.norm = nnx.RMSNorm(D, rngs=rngs, dtype=dtype)
        self.lm_head = nnx.Linear(D, VOCAB, use_bias=False, rngs=rngs,
                                  dtype=dtype)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm(x)).astype(jnp.float32)


def nnx_program(make_model, seed, mode, batch=4, param_spec=megatron_specs,
                batch_spec=P("data", None), mesh=MESH2, tx=None,
                nnx_optimizer=False, inputs=None, loss=None,
                label_spec=None):
    """A program over an NNX model's state: "forward" (logits), "loss"
    (integer-label cross-entropy), "grad" (its gradients), "step" (a whole
    Optax step; with nnx_optimizer, nnx.Optimizer's)."""
    model = make_model(nnx.Rngs(seed))
    graphdef, state = nnx.split(model)
    state = jax.tree_util.tree_map(np.asarray, state)
    r = rng(seed + 1000)
    if inputs is None:
        tokens, labels = ids(r, (batch, SEQ)), ids(r, (batch, SEQ))
    else:
        tokens, labels = inputs(r)
    loss = loss or int_label_loss
    label_spec = label_spec or batch_spec
    s_specs = like(state, param_spec)

    def loss_fn(state, tokens, labels):
        return loss(nnx.merge(graphdef, state)(tokens), labels)

    if mode == "forward":
        return Program(lambda st, t: nnx.merge(graphdef, st)(t),
                       (state, tokens), (s_specs, batch_spec), P(), mesh)
    if mode == "loss":
        return Program(loss_fn, (state, tokens, labels),
                       (s_specs, batch_spec, label_spec), P(), mesh)
    if mode == "grad":
        return Program(jax.grad(loss_fn), (state, tokens, labels),
                       (s_specs, batch_spec, label_spec), s_specs, mesh)
    tx = tx or optax.adamw(1e-3)
    if not nnx_optimizer:
        opt_state = tx.init(state)
        o_specs = optimizer_state_specs(opt_state, state, s_specs)
        return Program(optax_step(loss_fn, tx), (state, opt_state, tokens,
                                                 labels),
                       (s_specs, o_specs, batch_spec, label_spec),
                       (s_specs, o_specs, P()), mesh)
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    og, ostate = nnx.split((model, optimizer))
    ostate = jax.tree_util.tree_map(np.asarray, ostate)
    o_specs = like(ostate, lambda p, l: megatron_specs(p, l)
                   if np.ndim(l) >= 2 else P())

    def step(ostate, tokens, labels):
        model, optimizer = nnx.merge(og, ostate)
        value, grads = nnx.value_and_grad(
            lambda m: loss(m(tokens), labels))(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), value
    return Program(step, (ostate, tokens, labels),
                   (o_specs, batch_spec, label_spec), (o_specs, P()), mesh)


# ---------------------------------------------------------------------------
# Models: shard_map, Linen, Equinox, MoE, scans, control flow.

def ring_matmul(x, w):
    """A collective matmul over a ring (jax.shard_map): each device holds a
    block of rows of x and of w; w's blocks travel round the "model" ring
    with ppermute while each device multiplies the block it holds, picked
    by axis_index and a remainder."""
    n = MESH2.shape["model"]

    def local(x, w):
        me = jax.lax.axis_index("model")
        cols = x.shape[1] // n
        acc = jnp.zeros((x.shape[0], w.shape[1]), x.dtype)
        block = w
        for step in range(n):
            owner = (me + step) % n
            xs = jax.lax.dynamic_slice_in_dim(x, owner * cols, cols, axis=1)
            acc = acc + xs @ block
            block = jax.lax.ppermute(
                block, "model", [((i + 1) % n, i) for i in range(n)])
        return acc
    return jax.shard_map(local, mesh=MESH2,
                         in_specs=(P("data", None), P("model", None)),
                         out_specs=P("data", None), check_vma=False)(x, w)


def shard_map_dp_step(params, x, y):
    """Data parallelism written by hand: per-device gradients, pmean over
    the batch axes, an SGD update."""
    def local(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        grads = jax.lax.pmean(grads, ("data", "model"))
        loss = jax.lax.pmean(loss, ("data", "model"))
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params,
                                      grads), loss
    return jax.shard_map(local, mesh=MESH2,
                         in_specs=(P(), P(("data", "model")),
                                   P(("data", "model"))),
                         out_specs=(P(), P()))(params, x, y)


def shard_map_collectives(x):
    """all_gather, psum_scatter, all_to_all and axis_index on a 3-axis
    mesh."""
    def local(x):
        g = jax.lax.all_gather(x, "fsdp", axis=0, tiled=True)
        s = jax.lax.psum_scatter(g, "model", scatter_dimension=1, tiled=True)
        t = jax.lax.all_to_all(s, "data", 0, 0, tiled=True)
        rank = (jax.lax.axis_index("data") * 4 + jax.lax.axis_index("fsdp")
                * 2 + jax.lax.axis_index("model"))
        return t * (1.0 + rank.astype(t.dtype))
    return jax.shard_map(local, mesh=MESH3,
                         in_specs=P(("data", "fsdp"), "model"),
                         out_specs=P(("data", "fsdp", "model"), None),
                         check_vma=False)(x)


def moe(x, router, w1, w2, k):
    """Top-k routed experts with capacity-free dense dispatch: gates from a
    softmax router, the chosen experts' outputs weighted by their gates."""
    probs = jax.nn.softmax(x @ router, axis=-1)
    gate, chosen = jax.lax.top_k(probs, k)
    gate = gate / jnp.sum(gate, axis=-1, keepdims=True)
    combine = jnp.sum(jax.nn.one_hot(chosen, router.shape[1]) *
                      gate[..., None], axis=1)
    h = jax.nn.silu(jnp.einsum("td,edf->tef", x, w1))
    y = jnp.einsum("tef,efd->ted", h, w2)
    return jnp.einsum("ted,te->td", y, combine)


def moe_inputs(seed, experts=4, tokens=16):
    r = rng(seed)
    return (normal(r, (tokens, D)), normal(r, (D, experts), 0.2),
            normal(r, (experts, D, FF), 1 / math.sqrt(D)),
            normal(r, (experts, FF, D), 1 / math.sqrt(FF)))


EXPERT_SPECS = (P("data", None), P(), P("model", None, None),
                P("model", None, None))


def moe_grad(k):
    def loss(x, router, w1, w2):
        return jnp.mean(moe(x, router, w1, w2, k) ** 2)
    return jax.grad(loss, argnums=(1, 2, 3))


def scan_stack(params, x):
    """nnx-style stacked layers as lax.scan with a remat'd body."""
    @jax.checkpoint
    def body(h, layer):
        h = h + jax.nn.gelu(layer["norm"] * h @ layer["w1"]) @ layer["w2"]
        return h, None
    return jax.lax.scan(body, x, params)[0]


def stack_init(seed, layers=3):
    r = rng(seed)
    return {"norm": 1 + normal(r, (layers, D), 0.1),
            "w1": normal(r, (layers, D, FF), 1 / math.sqrt(D)),
            "w2": normal(r, (layers, FF, D), 1 / math.sqrt(FF))}


STACK_SPECS = {"norm": P(), "w1": P(None, None, "model"),
               "w2": P(None, "model", None)}


class NNXScanned(nnx.Module):
    """Layers created with nnx.vmap and applied with nnx.scan (and
    nnx.remat), as Flax's guide on scanned layers writes them."""

    def __init__(self, rngs, layers=3):
        @nnx.split_rngs(splits=layers)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def make(rngs):
            return MLPBlock(rngs)
        self.blocks = make(rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        @nnx.remat
        def step(x, block):
            return block(x)
        return step(x, self.blocks)


class MLPBlock(nnx.Module):
    def __init__(self, rngs):
        self.norm = nnx.LayerNorm(D, rngs=rngs)
        self.up = nnx.Linear(D, FF, rngs=rngs)
        self.down = nnx.Linear(FF, D, rngs=rngs)

    def __call__(self, x):
        return x + self.down(jax.nn.gelu(self.up(self.norm(x))))


class ViT(nnx.Module):
    """A small vision transformer: 4x4 patches of 16x16x3 images embedded
    by a Linear over flattened patches, a class token, learned positions,
    two nnx.MultiHeadAttention blocks, a classifier head."""

    def __init__(self, rngs, classes=10):
        self.patch = nnx.Linear(4 * 4 * 3, D, rngs=rngs)
        self.cls = nnx.Param(jnp.zeros((1, 1, D)))
        self.pos = nnx.Param(
            jax.random.normal(rngs.params(), (1, 17, D)) * 0.02)
        self.blocks = nnx.List([ViTBlock(rngs) for _ in range(2)])
        self.norm = nnx.LayerNorm(D, rngs=rngs)
        self.head = nnx.Linear(D, classes, rngs=rngs)

    def __call__(self, images):
        b = images.shape[0]
        patches = images.reshape(b, 4, 4, 4, 4, 3).transpose(
            0, 1, 3, 2, 4, 5).reshape(b, 16, 48)
        x = self.patch(patches)
        x = jnp.concatenate([jnp.broadcast_to(self.cls[...], (b, 1, D)), x],
                            axis=1) + self.pos[...]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))


class ViTBlock(nnx.Module):
    def __init__(self, rngs):
        self.norm1 = nnx.LayerNorm(D, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=HEADS, in_features=D,
                                           decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(D, rngs=rngs)
        self.mlp = MLPBlock(rngs)

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        return self.mlp(self.norm2(x))


def fori_power(x, w):
    """lax.fori_loop with a tuple carry: a few power-iteration steps."""
    def body(i, carry):
        v, norm = carry
        v = jnp.tanh(v @ w)
        return v, norm + jnp.sum(v * v)
    return jax.lax.fori_loop(0, 4, body, (x, jnp.zeros((), x.dtype)))


def cond_branch(x, w, flag):
    """lax.cond on a traced predicate."""
    return jax.lax.cond(flag > 0, lambda a: jnp.tanh(a @ w),
                        lambda a: jax.nn.relu(a @ w), x)


def sampling(logits, temperature):
    """Greedy and top-k next-token choice: argmax, lax.top_k, sort,
    cumulative sums (nucleus sampling's mask) on data-parallel rows."""
    scaled = logits / temperature
    top_values, top_ids = jax.lax.top_k(scaled, 5)
    probs = jax.nn.softmax(jnp.sort(scaled, axis=-1)[:, ::-1], axis=-1)
    nucleus = jnp.cumsum(probs, axis=-1) < 0.9
    return (jnp.argmax(scaled, axis=-1), top_ids, top_values,
            jnp.sum(nucleus, axis=-1))


class CNN(nnx.Module):
    """A small convolutional classifier: nnx.Conv (3x3, SAME; a strided
    one), nnx.BatchNorm, max and average pooling, a Linear head."""

    def __init__(self, rngs, classes=10):
        self.conv1 = nnx.Conv(3, 16, (3, 3), padding="SAME", rngs=rngs)
        self.norm1 = nnx.BatchNorm(16, rngs=rngs)
        self.conv2 = nnx.Conv(16, 32, (3, 3), strides=(2, 2), rngs=rngs)
        self.norm2 = nnx.BatchNorm(32, rngs=rngs)
        self.head = nnx.Linear(32, classes, rngs=rngs)

    def __call__(self, x):
        x = nnx.max_pool(jax.nn.relu(self.norm1(self.conv1(x))), (2, 2),
                         strides=(2, 2))
        x = jax.nn.relu(self.norm2(self.conv2(x)))
        x = nnx.avg_pool(x, (2, 2), strides=(2, 2))
        return self.head(jnp.mean(x, axis=(1, 2)))


def conv_tp(x, w1, w2):
    """Two convolutions with their feature dimensions split over "model"
    (the first's outputs, the second's inputs), batch over "data", then a
    dilated depthwise one (feature_group_count = channels)."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.gelu(jax.lax.conv_general_dilated(
        x, w1, (1, 1), "SAME", dimension_numbers=dn))
    h = jax.lax.conv_general_dilated(h, w2, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=dn)
    return jnp.sum(h ** 2)
