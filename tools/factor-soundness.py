#!/usr/bin/env python3
"""Per-op, per-factor soundness: for every op and every operand dimension,
shard that dimension (and so its factor) over 2 and then 4 devices, let
propagation and the partitioner do the rest, run on cpu:N and compare with
the unpartitioned run on cpu:1 (partita run --check). Pass-through factors
must split the result, reduction factors must combine partial results, and
need-replication factors must be gathered first; all must reproduce the
global result.

    factor-soundness.py --partita build/bin/partita
"""
import argparse
import os
import subprocess
import sys
import tempfile

F = "f32"


def t(*shape, dtype=F):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


# (name, [(arg shape, dtype)], body using %a0.., result type)
CASES = [
    ("exp", [((8, 8), F)], f"partita.exp %a0 : {t(8, 8)}", t(8, 8)),
    ("tanh", [((8, 8), F)], f"partita.tanh %a0 : {t(8, 8)}", t(8, 8)),
    ("neg", [((8, 8), F)], f"partita.neg %a0 : {t(8, 8)}", t(8, 8)),
    ("add", [((8, 8), F), ((8, 8), F)], f"partita.add %a0, %a1 : {t(8, 8)}", t(8, 8)),
    ("mul", [((8, 8), F), ((8, 8), F)], f"partita.mul %a0, %a1 : {t(8, 8)}", t(8, 8)),
    ("div", [((8, 8), F), ((8, 8), F)], f"partita.max %a0, %a1 : {t(8, 8)}", t(8, 8)),
    ("einsum", [((8, 16), F), ((16, 8), F)],
     f'partita.einsum "ij,jk->ik" %a0, %a1 : ({t(8, 16)}, {t(16, 8)}) -> {t(8, 8)}',
     t(8, 8)),
    ("einsum_batched", [((4, 8, 8), F), ((4, 8, 8), F)],
     f'partita.einsum "bij,bjk->bik" %a0, %a1 : ({t(4, 8, 8)}, {t(4, 8, 8)}) -> '
     f'{t(4, 8, 8)}', t(4, 8, 8)),
    ("reduce_sum", [((8, 8), F)],
     f"partita.reduce sum %a0 dims = [1] : {t(8, 8)} -> {t(8)}", t(8)),
    ("reduce_max", [((8, 8), F)],
     f"partita.reduce max %a0 dims = [0] : {t(8, 8)} -> {t(8)}", t(8)),
    ("argmax", [((8, 8), F)],
     f"partita.argmax %a0 dim = 1 : {t(8, 8)} -> {t(8, dtype='i32')}", t(8, dtype="i32")),
    ("cumsum", [((8, 8), F)], f"partita.cumsum %a0 dim = 1 : {t(8, 8)}", t(8, 8)),
    ("broadcast", [((8,), F)],
     f"partita.broadcast %a0 dims = [1] : {t(8)} -> {t(4, 8)}", t(4, 8)),
    ("reshape_merge", [((8, 8), F)],
     f"partita.reshape %a0 : {t(8, 8)} -> {t(64)}", t(64)),
    ("reshape_split", [((64,), F)],
     f"partita.reshape %a0 : {t(64)} -> {t(8, 8)}", t(8, 8)),
    ("transpose", [((8, 16), F)],
     f"partita.transpose %a0 perm = [1, 0] : {t(8, 16)} -> {t(16, 8)}", t(16, 8)),
    ("slice", [((8, 8), F)],
     f"partita.slice %a0 start = [0, 2] limit = [8, 6] stride = [1, 1] : {t(8, 8)} -> "
     f"{t(8, 4)}", t(8, 4)),
    ("concatenate", [((8, 8), F), ((8, 8), F)],
     f"partita.concatenate %a0, %a1 dim = 0 : ({t(8, 8)}, {t(8, 8)}) -> {t(16, 8)}",
     t(16, 8)),
    ("gather", [((16, 8), F), ((4, 8), "i32")],
     f"partita.gather %a0[%a1] : {t(16, 8)}, {t(4, 8, dtype='i32')} -> {t(4, 8, 8)}",
     t(4, 8, 8)),
    ("scatter_add", [((16, 8), F), ((4, 8), "i32"), ((4, 8, 8), F)],
     f"partita.scatter_add %a0, %a1, %a2 : {t(16, 8)}, {t(4, 8, dtype='i32')}, "
     f"{t(4, 8, 8)}", t(16, 8)),
    ("top_k", [((8, 8), F)],
     f"partita.top_k %a0 dim = 1 k = 2 : {t(8, 8)} -> {t(8, 2)}, {t(8, 2, dtype='i32')}",
     None),
]


def module(name, args, body, result, axis_count, arg_index, dim):
    params = []
    for i, (shape, dtype) in enumerate(args):
        attr = ""
        if i == arg_index:
            dims = ", ".join('{"x"}' if d == dim else "{}" for d in range(len(shape)))
            attr = f" {{partita.sharding = #partita.sharding<@mesh, [{dims}]>}}"
        params.append(f"%a{i}: {t(*shape, dtype=dtype)}{attr}")
    if result is None:  # top_k: return the values
        result_type = body.split("-> ")[1].split(",")[0]
        return (f'partita.mesh @mesh = <["x"={axis_count}]>\n'
                f"func.func @{name}({', '.join(params)}) -> {result_type} {{\n"
                f"  %r:2 = {body}\n  return %r#0 : {result_type}\n}}\n")
    return (f'partita.mesh @mesh = <["x"={axis_count}]>\n'
            f"func.func @{name}({', '.join(params)}) -> {result} {{\n"
            f"  %r = {body}\n  return %r : {result}\n}}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", required=True)
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, inputs, body, result in CASES:
            for arg_index, (shape, dtype) in enumerate(inputs):
                for dim, size in enumerate(shape):
                    for devices in (2, 4):
                        if size % devices:
                            continue
                        text = module(name, inputs, body, result, devices, arg_index, dim)
                        path = os.path.join(work, f"{name}.mlir")
                        with open(path, "w") as f:
                            f.write(text)
                        run = subprocess.run(
                            [args.partita, "run", path, "--devices", f"cpu:{devices}",
                             "--check"], capture_output=True, text=True)
                        if run.returncode == 0:
                            passed += 1
                        else:
                            failed += 1
                            print(f"FAILED {name}: operand {arg_index} dim {dim} over "
                                  f"{devices}\n{text}{run.stdout}{run.stderr}")
    print(f"factor soundness: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
