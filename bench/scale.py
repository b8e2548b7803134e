#!/usr/bin/env python3
"""Real sizes: `partita train` beside JAX at GPT-2's shapes on cpu:8.

For each row (a shape and a layout on 8 emulated CPU devices: fsdp on
data=8, the tensor-parallel layouts on data=2, model=4), in the same run
and one after the other: `partita train`
and JAX's train step (bench/jax_gpt.py: the same GPT, AdamW and
shardings, jax.jit with NamedShardings under
--xla_force_host_platform_device_count=8), each in its own process, a few
steps. Prints per row: tokens per second (median step after a warm-up
step), each process's maximum resident memory (the kernel's figure for the
child, os.wait4), Partita's predicted peak (printed by `partita train`
before its first step), and the ratios: memory and speed against JAX,
measured against predicted.

Vocabulary: GPT-2's 50,257 for Partita, which pads a dimension that does
not divide (over model=4 and data=2, 8); JAX refuses a sharding that does
not divide the dimension, so its rows use 50,304 (the padded vocabulary
nanoGPT trains GPT-2 with) — JAX's step does that much more work.

    python3 bench/scale.py [--partita build/bin/partita] [--steps 3]
        [--rows gpt2-small/dp+tp,...] [--jax-python PYTHON] [--write-doc]

JAX runs under --jax-python (default: the first of build/pyenv-latest,
build/pyenv and this interpreter that imports jax); without one, only
Partita's figures print. A row whose process is killed (the OOM killer)
says so.
"""
import argparse
import csv
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from jax_gpt import find_jax_python  # noqa: E402

SHAPES = {
    "gpt2-small": dict(layers=12, d_model=768, heads=12, seq=256, batch=8,
                       vocab=50257, mlp_ratio=4),
    "gpt2-medium": dict(layers=24, d_model=1024, heads=16, seq=256, batch=8,
                        vocab=50257, mlp_ratio=4),
}
JAX_VOCAB = 50304
# (data, model) per layout: FSDP over all 8 devices (on data=2,model=4 it
# shards over 2 and replicates the work 4 times: neither fits in 24 GiB);
# the tensor-parallel layouts on data=2, model=4.
MESHES = {"fsdp": (8, 1), "dp": (8, 1)}
DEFAULT_MESH = (2, 4)
# "+remat": each layer recomputed in the backward pass, in both
# (`--remat per-layer`; jax.checkpoint per layer).
ROWS = ["gpt2-small/dp+tp", "gpt2-small/fsdp", "gpt2-small/fsdp+tp",
        "gpt2-medium/fsdp", "gpt2-medium/fsdp+remat", "gpt2-medium/fsdp+tp"]
BEGIN = "<!-- scale: begin -->"
END = "<!-- scale: end -->"


def run_measured(command, env=None):
    """(exit status, stdout, maximum resident bytes) of `command`."""
    with tempfile.TemporaryFile(mode="w+") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                 env=env, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return child.returncode, out.read(), usage.ru_maxrss * 1024


def partita_row(partita, shape, rules, steps):
    rules, remat = rules.split("+remat")[0], rules.endswith("+remat")
    data, model = MESHES.get(rules, DEFAULT_MESH)
    mesh = f"data={data}" + (f",model={model}" if model > 1 else "")
    with tempfile.TemporaryDirectory() as outdir:
        command = [partita, "train", "--model", "gpt", "--devices", "cpu:8",
                   "--mesh", mesh, "--rules", rules,
                   "--steps", str(steps), "--output", outdir, "--lr", "1e-3",
                   "--layers", str(shape["layers"]),
                   "--d-model", str(shape["d_model"]),
                   "--heads", str(shape["heads"]), "--seq", str(shape["seq"]),
                   "--batch", str(shape["batch"]),
                   "--vocab", str(shape["vocab"]),
                   "--mlp-ratio", str(shape["mlp_ratio"])]
        if remat:
            command += ["--remat", "per-layer"]
        code, text, rss = run_measured(command)
        if code != 0:
            return dict(error=f"exit {code}: {text.strip().splitlines()[-1:]}",
                        rss=rss)
        with open(os.path.join(outdir, "loss.csv")) as f:
            seconds = [float(r["seconds"]) for r in csv.DictReader(f)]
    predicted = re.search(r"predicted peak resident memory ([0-9.]+) GiB",
                          text)
    tokens = shape["batch"] * shape["seq"]
    return dict(tokens_per_s=tokens / statistics.median(seconds[1:]),
                rss=rss,
                predicted=float(predicted.group(1)) * 2**30 if predicted
                else float("nan"))


def jax_child(config, rules, steps, mesh_shape=(2, 4)):
    """In the JAX process: trains `steps` steps on a (data, model) mesh of
    `mesh_shape` (8 emulated CPU devices, or one GPU: tools/gpu-check.sh),
    prints tokens/s and, on a GPU, the device's peak memory."""
    os.environ.setdefault("XLA_FLAGS",
                          "--xla_force_host_platform_device_count=8")
    import time
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax_gpt import parameter_layouts, train_step

    S, B, V = config["seq"], config["batch"], config["vocab"]
    count = mesh_shape[0] * mesh_shape[1]
    mesh = Mesh(np.array(jax.devices()[:count]).reshape(mesh_shape),
                ("data", "model"))
    jitted, shardings, batch_spec = train_step(config, rules, mesh)
    key = jax.random.PRNGKey(0)
    params = {}
    for i, (k, (shp, _)) in enumerate(
            sorted(parameter_layouts(config, rules).items())):
        bound = 1.0 if len(shp) < 2 else 1.0 / np.sqrt(shp[-2])
        params[k] = jax.device_put(
            jax.random.uniform(jax.random.fold_in(key, i), shp, jnp.float32,
                               -bound, bound), shardings[k])
    m = {k: jax.device_put(jnp.zeros_like(v), shardings[k])
         for k, v in params.items()}
    v = {k: jax.device_put(jnp.zeros_like(x), shardings[k])
         for k, x in params.items()}
    rng = np.random.default_rng(0)
    times = []
    for s in range(steps):
        tokens = jax.device_put(rng.integers(0, V, (B, S), dtype=np.int32),
                                batch_spec)
        targets = jax.device_put(rng.integers(0, V, (B, S), dtype=np.int32),
                                 batch_spec)
        start = time.perf_counter()
        loss, params, m, v = jitted(params, m, v, float(s), tokens, targets)
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    print(f"tokens_per_s {B * S / statistics.median(times[1:])}")
    print(f"loss {float(loss)}")
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        print(f"device_peak_bytes {stats['peak_bytes_in_use']}")


def jax_row(python, shape, rules, steps):
    rules, remat = rules.split("+remat")[0], rules.endswith("+remat")
    config = dict(shape, vocab=JAX_VOCAB, remat=int(remat))
    data, model = MESHES.get(rules, DEFAULT_MESH)
    command = [python, os.path.abspath(__file__), "--jax-child",
               ",".join(f"{k}={v}" for k, v in config.items()), rules,
               str(steps), f"{data}x{model}"]
    code, text, rss = run_measured(command)
    found = re.search(r"tokens_per_s ([0-9.e+]+)", text)
    if code != 0 or not found:
        last = text.strip().splitlines()[-1:] if text.strip() else []
        return dict(error=f"exit {code}: {last}", rss=rss)
    return dict(tokens_per_s=float(found.group(1)), rss=rss)


def gib(nbytes):
    return f"{nbytes / 2**30:.2f}"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--jax-child":
        config = {k: int(v) for k, v in
                  (item.split("=") for item in sys.argv[2].split(","))}
        mesh_shape = (tuple(int(n) for n in sys.argv[5].split("x"))
                      if len(sys.argv) > 5 else (2, 4))
        return jax_child(config, sys.argv[3], int(sys.argv[4]), mesh_shape)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita",
                        default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--jax-python")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--doc",
                        default=os.path.join(ROOT, "docs", "benchmarks.md"))
    options = parser.parse_args()
    python = find_jax_python(options.jax_python)
    if not python:
        print("# no Python with JAX found (tools/setup-jax.sh --latest): "
              "Partita's figures only")
    header = ("| row | Partita tok/s | JAX tok/s | speed | Partita peak GiB "
              "| JAX peak GiB | memory | predicted GiB | measured/predicted |")
    lines = [header, "|" + "---|" * 9]
    print(header, flush=True)
    for row in options.rows.split(","):
        name, rules = row.split("/")
        shape = SHAPES[name]
        layout = rules.split("+remat")[0]
        ours = partita_row(options.partita, shape, rules, options.steps)
        theirs = (jax_row(python, shape, rules, options.steps) if python
                  else dict(error="no JAX", rss=0))
        data, model = MESHES.get(layout, DEFAULT_MESH)
        cells = [f"`{row}` (data={data}" + (f", model={model})" if model > 1
                                             else ")")]
        if "error" in ours:
            cells += [f"failed ({ours['error']})"]
        else:
            cells += [f"{ours['tokens_per_s']:.1f}"]
        cells += [f"failed ({theirs['error']})" if "error" in theirs
                  else f"{theirs['tokens_per_s']:.1f}"]
        both = "error" not in ours and "error" not in theirs
        cells += [f"{ours['tokens_per_s'] / theirs['tokens_per_s']:.2f}x"
                  if both else "-"]
        cells += [gib(ours["rss"]), gib(theirs["rss"]) if theirs["rss"] else "-"]
        cells += [f"{ours['rss'] / theirs['rss']:.2f}x" if both else "-"]
        if "error" in ours:
            cells += ["-", "-"]
        else:
            cells += [gib(ours["predicted"]),
                      f"{ours['rss'] / ours['predicted']:.3f}"]
        line = "| " + " | ".join(cells) + " |"
        lines.append(line)
        print(line, flush=True)
    if options.write_doc:
        with open(options.doc) as f:
            text = f.read()
        if BEGIN not in text or END not in text:
            sys.exit(f"{options.doc}: no {BEGIN} ... {END} markers")
        stamp = (f"Measured {datetime.date.today().isoformat()}, "
                 f"{os.cpu_count()} hardware threads, {options.steps} steps "
                 f"per process (the first a warm-up); `python3 bench/scale.py`.")
        table = "\n".join([BEGIN, stamp, "", *lines, END])
        start, stop = text.index(BEGIN), text.index(END) + len(END)
        with open(options.doc, "w") as f:
            f.write(text[:start] + table + text[stop:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
