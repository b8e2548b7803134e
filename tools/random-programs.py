#!/usr/bin/env python3
"""Randomized differential testing: random small partita programs (chains
and DAGs of elementwise ops, einsums, reductions, transposes, broadcasts)
on random meshes (1-D to 3-D, up to 8 devices) with random input shardings
(multi-axis and partial included), each run with `partita run --check`
(partitioned on cpu:N vs unpartitioned on cpu:1).

    random-programs.py --partita build/bin/partita [--cases 200] [--seed 1]
                       [--keep DIR] [--gradient-share F] [--jobs J]

With --gradient-share F, that share of the cases is a train step instead:
the program's result summed to a scalar loss, every argument a parameter,
run with `partita run --train --check` (gradients and the AdamW update on
cpu:N against cpu:1). --jobs runs that many cases at once.

Prints a coverage table (op kinds in the programs, collective kinds in the
partitioned programs) and fails when a case fails (its program is written
to DIR, default ./random-failures) or when an op kind or collective kind
appears in fewer than --min-coverage cases.
"""
import argparse
import collections
import concurrent.futures
import itertools
import os
import random
import re
import subprocess
import sys
import tempfile

MESHES = [
    [("x", 2)], [("x", 4)], [("x", 8)],
    [("a", 2), ("b", 2)], [("a", 2), ("b", 4)], [("a", 4), ("b", 2)],
    [("a", 2), ("b", 2), ("c", 2)],
]
UNARY = ["exp", "tanh", "neg", "abs", "logistic", "sin"]
BINARY = ["add", "sub", "mul", "max", "min"]


def tensor(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def random_sharding(rng, mesh, rank, allow_partial):
    axes = [name for name, _ in mesh]
    rng.shuffle(axes)
    dims = [[] for _ in range(rank)]
    partial = []
    for axis in axes:
        choice = rng.random()
        if choice < 0.55 and rank > 0:
            dims[rng.randrange(rank)].append(axis)
        elif choice < 0.7 and allow_partial:
            partial.append(axis)
    text = "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims) + "]"
    if partial:
        text += ", partial = sum{" + ", ".join(f'"{a}"' for a in partial) + "}"
    return text


class Program:
    def __init__(self, rng, mesh, gradient=False):
        self.rng = rng
        self.mesh = mesh
        self.gradient = gradient
        self.lines = []
        self.args = []
        self.values = []  # (name, shape)
        self.ops = collections.Counter()
        self.count = 0

    def fresh(self):
        self.count += 1
        return f"%v{self.count}"

    def argument(self, shape):
        name = f"%a{len(self.args)}"
        sharding = random_sharding(self.rng, self.mesh, len(shape),
                                   allow_partial=self.rng.random() < 0.2
                                   and not self.gradient)
        role = "partita.role = #partita.role<param>, " if self.gradient else ""
        self.args.append(f"{name}: {tensor(shape)} {{{role}partita.sharding = "
                         f"#partita.sharding<@mesh, {sharding}>}}")
        self.values.append((name, shape))
        return name, shape

    def pick(self, shape=None):
        choices = [v for v in self.values if shape is None or v[1] == shape]
        return self.rng.choice(choices) if choices else None

    def emit(self, op, text, shape):
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        self.values.append((name, shape))
        self.ops[op] += 1
        return name, shape

    def step(self):
        rng = self.rng
        kind = rng.choice(["unary", "binary", "einsum", "reduce", "transpose",
                           "broadcast", "reshard"])
        value, shape = self.pick()
        if kind == "unary":
            op = rng.choice(UNARY)
            return self.emit(op, f"partita.{op} {value} : {tensor(shape)}", shape)
        if kind == "binary":
            other = self.pick(shape)
            if other is None or rng.random() < 0.3:
                other = self.argument(shape)
            op = rng.choice(BINARY)
            return self.emit(op, f"partita.{op} {value}, {other[0]} : {tensor(shape)}",
                             shape)
        if kind == "einsum" and len(shape) == 2:
            n = rng.choice([8, 16])
            weight = self.argument([shape[1], n])
            return self.emit("einsum", f'partita.einsum "ij,jk->ik" {value}, {weight[0]} '
                             f": ({tensor(shape)}, {tensor([shape[1], n])}) -> "
                             f"{tensor([shape[0], n])}", [shape[0], n])
        if kind == "reduce" and len(shape) >= 2:
            dim = rng.randrange(len(shape))
            out = shape[:dim] + shape[dim + 1:]
            op = rng.choice(["sum", "max"])
            return self.emit("reduce", f"partita.reduce {op} {value} dims = [{dim}] : "
                             f"{tensor(shape)} -> {tensor(out)}", out)
        if kind == "transpose" and len(shape) >= 2:
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            out = [shape[p] for p in perm]
            return self.emit("transpose", f"partita.transpose {value} perm = "
                             f"[{', '.join(map(str, perm))}] : {tensor(shape)} -> "
                             f"{tensor(out)}", out)
        if kind == "broadcast" and len(shape) == 1:
            n = rng.choice([8, 16])
            out = [n] + shape
            return self.emit("broadcast", f"partita.broadcast {value} dims = [1] : "
                             f"{tensor(shape)} -> {tensor(out)}", out)
        if kind == "reshard":
            target = random_sharding(rng, self.mesh, len(shape), allow_partial=False)
            return self.emit("reshard", f"partita.reshard {value} <@mesh, {target}> : "
                             f"{tensor(shape)}", shape)
        op = rng.choice(UNARY)
        return self.emit(op, f"partita.{op} {value} : {tensor(shape)}", shape)

    def text(self, result):
        mesh = ", ".join(f'"{n}"={s}' for n, s in self.mesh)
        name, shape = result
        if self.gradient and shape:
            dims = ", ".join(str(d) for d in range(len(shape)))
            loss = self.fresh()
            self.lines.append(f"  {loss} = partita.reduce sum {name} dims = [{dims}] : "
                              f"{tensor(shape)} -> tensor<f32>")
            name, shape = loss, []
        return (f"partita.mesh @mesh = <[{mesh}]>\n"
                f"func.func @f({', '.join(self.args)}) -> {tensor(shape)} {{\n"
                + "\n".join(self.lines)
                + f"\n  return {name} : {tensor(shape)}\n}}\n")


def make_case(rng, gradient_share=0.0):
    gradient = gradient_share > 0 and rng.random() < gradient_share
    mesh = rng.choice(MESHES)
    program = Program(rng, mesh, gradient)
    rank = rng.choice([1, 2, 2, 3])
    shape = [rng.choice([8, 16]) for _ in range(rank)]
    program.argument(shape)
    last = program.values[-1]
    for _ in range(rng.randint(2, 7)):
        last = program.step()
    return program, last


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", required=True)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", default="random-failures")
    parser.add_argument("--min-coverage", type=int, default=5)
    parser.add_argument("--gradient-share", type=float, default=0.0)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    op_cases = collections.Counter()
    collective_cases = collections.Counter()
    failures = 0
    gradients = 0

    def run_case(case, program, text, work):
        path = os.path.join(work, f"case{case}.mlir")
        with open(path, "w") as f:
            f.write(text)
        devices = 1
        for _, size in program.mesh:
            devices *= size
        train = ["--train"] if program.gradient else []
        run = subprocess.run([args.partita, "run", path, "--devices", f"cpu:{devices}",
                              "--check", "--seed", str(case)] + train,
                             capture_output=True, text=True)
        compiled = subprocess.run([args.partita, "compile", path] + train,
                                  capture_output=True, text=True)
        return case, program, text, devices, train, run, compiled

    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        cases = []
        for case in range(args.cases):
            program, result = make_case(rng, args.gradient_share)
            cases.append((case, program, program.text(result)))
        for case, program, text, devices, train, run, compiled in pool.map(
                lambda c: run_case(*c, work), cases):
            gradients += 1 if program.gradient else 0
            for op in program.ops:
                op_cases[op] += 1
            for kind in set(re.findall(r"partita\.(all_gather|all_reduce|reduce_scatter|"
                                       r"all_to_all|collective_permute|all_slice) ",
                                       compiled.stdout)):
                collective_cases[kind] += 1
            if run.returncode != 0:
                failures += 1
                os.makedirs(args.keep, exist_ok=True)
                kept = os.path.join(args.keep, f"case{case}.mlir")
                with open(kept, "w") as f:
                    f.write(f"// partita run {kept} --devices cpu:{devices} --check "
                            f"--seed {case} {' '.join(train)}\n" + text)
                print(f"case {case}: FAILED ({kept})\n{run.stdout}{run.stderr}")
    print(f"{args.cases} cases, seed {args.seed}: {args.cases - failures} passed, "
          f"{failures} failed" +
          (f" ({gradients} of them train steps)" if args.gradient_share else ""))
    print("op kinds (cases): " + ", ".join(f"{k} {v}" for k, v in sorted(op_cases.items())))
    print("collective kinds (cases): " +
          ", ".join(f"{k} {v}" for k, v in sorted(collective_cases.items())))
    thin = [k for k, v in itertools.chain(op_cases.items(), collective_cases.items())
            if v < args.min_coverage]
    wanted = {"all_gather", "all_reduce", "reduce_scatter", "all_to_all", "all_slice",
              "collective_permute"}
    missing = sorted(wanted - set(collective_cases))
    if thin or missing:
        print(f"coverage too thin: {thin} missing: {missing}")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
