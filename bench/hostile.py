#!/usr/bin/env python3
"""A generated sweep of hostile inputs against every Partita command.

What it is for: a new user's mistakes and a damaged file must end in a
located error with exit code 1 (docs/Robustness.md), never a signal, an
abort, a hang, or a success that should have been an error. This script
generates some 600 such cases from a fixed seed and runs each one in a
subprocess with a time limit:

  * bad flags and values for every command of `partita` (gen, import,
    compile, explain, show, run, train, plan, calibrate, checkpoint info and
    convert), `partita-exec` (layout, shard, assemble, info, describe, train,
    run) and `partita-opt`: missing values, negative, zero, huge, 1e309,
    nan, inf, -0, empty, unicode and very long strings;
  * the programs in docs/examples, mutated: truncated, lines deleted,
    duplicated or swapped, characters flipped, shapes swapped, unknown mesh
    axes, non-dividing meshes, deeply nested attributes;
  * malformed JSON where a JSON file is read: --interconnect, --rules, the
    cluster file of plan, a sharded array's index.json, a checkpoint's
    checkpoint.json, a pipelined step's step.json;
  * corrupt .npy inputs, Executables, token files, SFT and DPO text files,
    checkpoints whose shards were damaged, and paths that are directories,
    missing, FIFOs, /dev/null or /dev/full;
  * the Python API (`partita.compile`, `Module.run/explain/show/html/save`,
    `partita.run_tool`), each case in its own interpreter so that a crash
    is counted as a signal of that case.

Each case says whether it expects an error, a success, or either (a
mutation that may leave a valid program). Outcomes:

  ok                expected success (or "either") and exit code 0
  ok-error          exit code 1 with an `error:` message (optionally after
                    a file:line:col location)
  silent            exit code 0 where an error was expected
  signal            killed by a signal
  abort             LLVM ERROR, terminate called, an assertion, a stack
                    dump, a sanitizer report, or (Python) a traceback of an
                    exception other than PartitaError/TypeError/ValueError/
                    OSError, or an interpreter that exited inside the call
  hang              still running at the time limit
  odd-error         a failure whose exit code or message is not the usual
                    form (reported, not counted as a bug)
  failed            a case expected to succeed failed (reported, not
                    counted: usually the case's own mistake)

The summary counts the outcomes per command and lists every signal, abort,
hang and silent case with its command line and the end of its output; the
exit status is 1 when there is any, else 0.

Run it from anywhere:

  python3 bench/hostile.py              # every case, 2 workers
  python3 bench/hostile.py --quick      # about 100 of them (CI)
  python3 bench/hostile.py --list       # print the cases, run nothing
  python3 bench/hostile.py --bin DIR -j 4 --only train --keep

--bin DIR names the directory of partita, partita-exec and partita-opt
(default: build/bin of this repository); the Python package is taken from
DIR/../python. The fixtures (a trained checkpoint, an Executable, a
pipelined step, sharded arrays) are made first in a temporary directory,
which is kept (and named) when a case is not clean, or with --keep.
"""

import argparse
import errno
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20250117
TIMEOUT_S = 30
# Address space per case: a runaway allocation fails (and is reported)
# instead of taking the machine's memory from everything else on it.
MEMORY_LIMIT = 6 << 30
ERROR, OK, EITHER = "error", "ok", "either"
REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "docs" / "examples"
FX = "@FX@"                     # stands for the fixtures directory in argv
DIRECTORY = object()            # a case file that is an empty directory

# The examples, with the devices they run on and a value to show.
PROGRAMS = {
    "mlp.mlir": (8, "blocks.w1"),
    "megatron-mlp.mlir": (8, "mlp.gelu"),
    "transformer-layer.mlir": (8, "attn.wq"),
    "shard-map.mlir": (4, "x"),
}

# A program small enough to feed hand-made inputs to.
ADD_PROGRAM = """\
// Two 4x3 inputs, the first split over "data"; their sum.
partita.mesh @mesh = <["data"=2]>

func.func @add(
    %a: tensor<4x3xf32> {partita.role = #partita.role<input>,
                         partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("a"),
    %b: tensor<4x3xf32> {partita.role = #partita.role<input>} loc("b"))
    -> tensor<4x3xf32> {
  %c = partita.add %a, %b : tensor<4x3xf32> loc("c")
  return %c : tensor<4x3xf32>
}
"""

INTERCONNECT = {
    "axes": {"data": {"bandwidth_GBps": 50, "latency_us": 20},
             "model": {"bandwidth_GBps": 450, "latency_us": 5}},
    "default": {"bandwidth_GBps": 100, "latency_us": 10},
    "combine_bytes": 1048576,
}

RULES = {"rules": [
    {"logical": "batch", "mesh": "data", "role": "input"},
    {"logical": "embed", "mesh": "data", "role": "opt_state"},
    {"logical": "mlp", "mesh": ["model"]},
    {"logical": "vocab", "mesh": None},
]}

CLUSTER = {
    "devices_per_node": 2,
    "flops_per_second": 5e9,
    "memory_bytes": 1 << 30,
    "intra_node": {"bandwidth_GBps": 100, "latency_us": 2},
    "inter_node": {"bandwidth_GBps": 1, "latency_us": 50},
    "calibration": {
        "devices": "cpu:4", "instruction_us": 0.8,
        "einsum_flops_per_second": 4e10, "elements_per_second": 1e9,
        "host_bytes_per_second": 6e9, "launch_us": 600,
        "collectives": [
            {"kind": kind, "group": group, "latency_us": 12,
             "bandwidth_GBps": 3}
            for kind in ("all_reduce", "all_gather", "reduce_scatter",
                         "all_to_all", "collective_permute")
            for group in (2, 4)],
    },
}

# Bad spellings of numbers. Each kind says what a flag must do with them:
#   int   an integer (count, seed, index) where a large value is cheap
#   size  an integer where a large valid value would make a long run
#         (steps, layers, devices): only values that are invalid or small
#   real  a real number (may be zero or negative)
#   pos   a real number that must be positive
LONG_DIGITS = "9" * 400
LONG_TEXT = "x" * 20000


def number_values(kind):
    values = [("", ERROR), ("abc", ERROR), ("nan", ERROR), ("inf", ERROR),
              ("-inf", ERROR), ("1e309", ERROR), ("\u0663", ERROR),
              ("\uff11", ERROR), (LONG_DIGITS, ERROR), (LONG_TEXT, ERROR),
              ("0", EITHER), ("-0", EITHER), ("+1", EITHER), (" 1", EITHER),
              ("-9223372036854775809", ERROR)]
    integer = kind in ("int", "size")
    values += [("-1", ERROR if kind != "real" else EITHER),
               ("1.5", ERROR if integer else EITHER),
               ("99999999999999999999", ERROR if integer else EITHER)]
    if kind != "size":
        values += [("0x10", EITHER), ("1e3", EITHER), ("2147483648", EITHER),
                   ("1_000", EITHER)]
    return values


BAD_MESHES = [
    ("", ERROR), ("data", ERROR), ("data=", ERROR), ("=2", ERROR),
    ("data=0", ERROR), ("data=-1", ERROR), ("data=2,data=2", ERROR),
    ("data=2,,model=4", ERROR), ("data=99999999999999999999", ERROR),
    ("data=1e309", ERROR), ("data=nan", ERROR), ("data=2;model=4", ERROR),
    ("data=2,model=4,", EITHER), (" data = 2 , model = 4 ", EITHER),
    ("d\u00e4ta=2,model=4", EITHER), ("data=3,model=4", EITHER),
    ("data=65536,model=65536", EITHER), ("data=2147483647", EITHER),
    ("nomesh:data=2,model=4", EITHER), ("a" * 5000 + "=2", EITHER),
    ("data=2,model=4,x=1,y=1,z=1", EITHER), ("data=1", EITHER),
]


@dataclass
class Case:
    command: str                 # the table row: 'compile', 'exec run', ...
    what: str                    # what is hostile about it
    argv: list                   # tool name first; FX stands for fixtures
    expect: str                  # ERROR, OK or EITHER
    stdin: bytes = None
    files: dict = field(default_factory=dict)   # path in the case dir -> bytes
    prepare: object = None       # fn(case_dir, fixtures_dir): copy and damage
    code: str = None             # a Python case's body
    timeout: float = TIMEOUT_S
    number: int = 0


# --------------------------------------------------------------------------
# File builders


def npy_bytes(descr="<f4", shape=(4, 3), data=None, fortran=False,
              version=(1, 0), header=None, magic=b"\x93NUMPY", pad=True):
    """A .npy file, by hand, so that any part of it can be wrong."""
    if header is None:
        dims = "".join("%d, " % d for d in shape)
        dims = "(%s)" % (dims[:-2] + ("," if len(shape) == 1 else "")) \
            if shape else "()"
        header = "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (
            descr, fortran, dims)
    if data is None:
        count = 1
        for d in shape:
            count *= max(d, 0)
        data = struct.pack("<%df" % count, *[float(i) for i in range(count)])
    text = header.encode("latin-1", "replace")
    prefix = magic + bytes(version)
    length_bytes = 2 if version[0] == 1 else 4
    if pad:
        used = len(prefix) + length_bytes + len(text) + 1
        text += b" " * (-used % 64) + b"\n"
    length = struct.pack("<H" if length_bytes == 2 else "<I",
                         len(text) & (0xFFFF if length_bytes == 2 else ~0))
    return prefix + length + text + data


def int32_tokens(values):
    return struct.pack("<%di" % len(values), *values)


def json_text(obj):
    return json.dumps(obj, indent=1).encode()


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def reseal(exe):
    """An Executable whose trailing checksum matches its (damaged) body."""
    body = exe[:-8]
    return body + struct.pack("<Q", fnv1a64(body))


# --------------------------------------------------------------------------
# Mutations


WEIRD_JSON_VALUES = [None, -1, 0, -0.0, 0.5, 1e308, 2 ** 64,
                     99999999999999999999, "", "fast", "\u00e9\u202e",
                     "y" * 10000, [], {}, True, [1, [2, [3]]], {"x": 1}]


def json_paths(obj, path=()):
    """Every (path, value) in a JSON object, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from json_paths(value, path + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from json_paths(value, path + (i,))


def json_set(obj, path, value):
    obj = json.loads(json.dumps(obj))
    if not path:
        return value
    target = obj
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return obj


_DELETE = object()


def json_mutants(rng, base, count):
    """count damaged copies of a JSON document: (what, bytes, expect).
    Broken syntax must be an error; a changed value may be fine."""
    text = json_text(base)
    fixed = [
        ("empty file", b"", ERROR),
        ("'null'", b"null", ERROR),
        ("a list instead of an object", b"[]", ERROR),
        ("trailing garbage", text + b"x", ERROR),
        ("nested 300 deep", b"[" * 300 + b"]" * 300, ERROR),
        ("NaN literal", text.replace(b"}", b', "nan_field": NaN}', 1), ERROR),
        ("a // comment", b"// hello\n" + text, ERROR),
        ("invalid UTF-8 in a key", text.replace(b"{", b'{"\xff\xfe": 1,', 1),
         ERROR),
        ("byte order mark", b"\xef\xbb\xbf" + text, EITHER),
        ("1e309 somewhere", text.replace(b"}", b', "huge": 1e309}', 1),
         EITHER),
    ]
    out = list(fixed)
    paths = [p for p, _ in json_paths(base) if p]
    for i in range(count - len(fixed)):
        choice = i % 4
        if choice == 0:
            cut = rng.randrange(1, len(text) - 1)
            out.append(("truncated at byte %d" % cut, text[:cut], ERROR))
        elif choice == 1:
            path = rng.choice(paths)
            out.append(("deleted %s" % _path_text(path),
                        json_text(json_set(base, path, _DELETE)), EITHER))
        else:
            path = rng.choice(paths)
            value = rng.choice(WEIRD_JSON_VALUES)
            out.append(("%s = %s" % (_path_text(path), _short(value)),
                        json_text(json_set(base, path, value)), EITHER))
    return out[:count]


def _path_text(path):
    return "".join("[%d]" % p if isinstance(p, int) else ".%s" % p
                   for p in path) or "(root)"


def _short(value):
    text = json.dumps(value)
    return text if len(text) < 30 else text[:24] + "..."


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def unbalanced(text):
    code = strip_comments(text)
    return code.count("{") != code.count("}")


def program_mutants(rng, name, text, count, executes):
    """Damaged copies of a program: (what, bytes, expect). executes: the
    result is run, so only small shapes (a valid program must stay cheap)."""
    lines = text.splitlines(keepends=True)
    code_lines = [i for i, line in enumerate(lines)
                  if line.strip() and not line.strip().startswith("//")]
    types = sorted(set(re.findall(r"tensor<[0-9x]*[a-z0-9]+>", text)))
    dims = sorted(set(int(d) for d in re.findall(r"(\d+)x", text)))
    axes = re.findall(r'"(\w+)"=\d+', text)
    mesh_sizes = re.findall(r'"\w+"=(\d+)', text)
    specs = re.findall(r'einsum "([^"]*)"', text)
    names = re.findall(r'loc\("([^"]*)"\)', text)
    out = []
    kinds = ["truncate", "delete", "duplicate", "swap", "flip", "shape",
             "dim", "axis", "meshsize", "nest", "einsum", "loc", "garbage",
             "truncate", "flip", "delete"]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        if kind == "truncate":
            cut = rng.randrange(len(text))
            t = text[:cut]
            out.append(("truncated at %d of %d" % (cut, len(text)), t,
                        ERROR if unbalanced(t) else EITHER))
        elif kind == "delete":
            k = rng.choice(code_lines)
            t = "".join(lines[:k] + lines[k + 1:])
            out.append(("line %d deleted" % (k + 1), t,
                        ERROR if unbalanced(t) else EITHER))
        elif kind == "duplicate":
            k = rng.choice(code_lines)
            t = "".join(lines[:k + 1] + lines[k:])
            out.append(("line %d duplicated" % (k + 1), t,
                        ERROR if unbalanced(t) else EITHER))
        elif kind == "swap":
            a, b = rng.sample(code_lines, 2)
            swapped = list(lines)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            out.append(("lines %d and %d swapped" % (a + 1, b + 1),
                        "".join(swapped), EITHER))
        elif kind == "flip":
            chars = list(text)
            where = []
            for _ in range(rng.randint(1, 4)):
                p = rng.randrange(len(chars))
                chars[p] = rng.choice('{}<>()[]"%@#:,=x09-\u00e9\u202e\t')
                where.append(p)
            out.append(("characters flipped at %s" % where, "".join(chars),
                        EITHER))
        elif kind == "shape" and len(types) > 1:
            old = rng.choice(types)
            new = rng.choice([t for t in types if t != old])
            spots = [m.start() for m in re.finditer(re.escape(old), text)]
            at = rng.choice(spots)
            t = text[:at] + new + text[at + len(old):]
            out.append(("one %s became %s" % (old, new), t, EITHER))
        elif kind == "dim" and dims:
            old = rng.choice(dims)
            choices = [old + 1, 1, 3, 7, 0]
            if not executes:
                choices += [65536, 2 ** 62, 99999999999999999999]
            new = rng.choice(choices)
            t = re.sub(r"(?<![0-9])%dx" % old, "%dx" % new, text)
            out.append(("every dimension %d became %d" % (old, new), t,
                        ERROR if new > 2 ** 63 else EITHER))
        elif kind == "axis" and axes:
            axis = rng.choice(axes)
            spots = [m.start() for m in
                     re.finditer(r'\{"%s"\}' % axis, text)]
            if spots:
                at = rng.choice(spots)
                t = text[:at] + '{"nosuchaxis"}' + text[at + len(axis) + 4:]
                out.append(("a sharding names unknown axis 'nosuchaxis'",
                            t, ERROR))
            else:
                t = text.replace('"%s"=' % axis, '"renamed"=', 1)
                out.append(("mesh axis %s renamed" % axis, t, EITHER))
        elif kind == "meshsize" and mesh_sizes:
            new, expect = rng.choice(
                [("0", ERROR), ("-1", ERROR), ("99999999999999999999", ERROR),
                 ("3", EITHER), ("1", EITHER), ("5", EITHER),
                 ("2147483647", EITHER), ("65536", EITHER)])
            old = rng.choice(mesh_sizes)
            t = re.sub(r'("\w+")=%s\b' % old, r"\1=%s" % new, text, count=1)
            out.append(("a mesh axis of size %s" % new, t, expect))
        elif kind == "nest":
            depth, expect = rng.choice([(900, EITHER), (1001, ERROR),
                                        (100000, ERROR)])
            alias = "#deep = " + "[" * depth + "]" * depth + "\n"
            out.append(("an attribute alias nested %d deep" % depth,
                        alias + text, expect))
        elif kind == "einsum" and specs:
            spec = rng.choice(specs)
            bad = rng.choice(["bd,df->bz", "", "->", "bdd,df->bf", "b,d->",
                              spec.replace("->", "-->"), spec + ",q"])
            t = text.replace('"%s"' % spec, '"%s"' % bad, 1)
            out.append(("einsum spec %r became %r" % (spec, bad), t, ERROR))
        elif kind == "loc" and names:
            name_ = rng.choice(names)
            new = rng.choice(["", "n" * 100000, "\u00e9\u202e\u4e2d",
                              "a\\22b", "arg0", "result0"])
            t = text.replace('loc("%s")' % name_, 'loc("%s")' % new, 1)
            out.append(("loc name %r became %s" % (name_, _short(new)), t,
                        EITHER))
        else:  # garbage
            line, expect = rng.choice([
                ("%q = partita.bogus %x : tensor<2xf32>\n", ERROR),
                ('partita.mesh @mesh = <["data"=2]>\n', ERROR),
                ("func.func\n", ERROR), ('"\n', ERROR), ("#x = \n", ERROR),
                ("// a harmless comment\n", EITHER),
                ("}\n", ERROR), ("\x00\n", ERROR)])
            k = rng.choice(code_lines)
            t = "".join(lines[:k] + [line] + lines[k:])
            out.append(("inserted line %d: %r" % (k + 1, line.strip()), t,
                        expect))
    # Targeted damage, the same for every program.
    mesh_line = next(i for i, l in enumerate(lines)
                     if l.startswith("partita.mesh"))
    func_name = re.search(r"func\.func @(\w+)", text).group(1)
    out += [
        ("the mesh declaration removed",
         "".join(lines[:mesh_line] + lines[mesh_line + 1:]), ERROR),
        ("a sharding names @nomesh",
         text.replace("<@mesh,", "<@nomesh,", 1), ERROR),
        ("@%s defined twice" % func_name,
         text + strip_comments("".join(lines[mesh_line + 1:])), ERROR),
        ("an axis twice in one sharding",
         re.sub(r'\{"(\w+)"\}', r'{"\1", "\1"}', text, count=1), ERROR),
        ("CRLF line endings", text.replace("\n", "\r\n"), EITHER),
        ("a NUL byte in a comment", "// \x00\n" + text, ERROR),
        ("bytes that are not UTF-8 in a comment", "// \udcff\n" + text,
         EITHER),
        ("empty", "", EITHER),
        ("only a comment", "// nothing here\n", EITHER),
    ]
    return out


# --------------------------------------------------------------------------
# The cases


class Sweep:
    """The cases being generated, and the one random generator that picks
    among them (so that the list is the same on every run)."""

    def __init__(self):
        self.rng = random.Random(SEED)
        self.cases = []

    def add(self, command, what, argv, expect, **extra):
        self.cases.append(Case(command, what, list(argv), expect, **extra))

    def sample(self, items, k):
        items = list(items)
        return items if k >= len(items) else self.rng.sample(items, k)

    def flag_values(self, command, base, flag, kind, k):
        """The flag missing its value, and k bad values of its kind."""
        self.add(command, "%s without a value" % flag, base + [flag], ERROR)
        for value, expect in self.sample(number_values(kind), k):
            self.add(command, "%s %s" % (flag, _short(value)),
                     base + [flag, value], expect)


def generate():
    s = Sweep()
    gen_cases(s)
    program_cases(s)
    compile_cases(s)
    explain_show_cases(s)
    run_cases(s)
    npy_cases(s)
    train_cases(s)
    data_cases(s)
    checkpoint_cases(s)
    plan_cases(s)
    calibrate_cases(s)
    json_file_cases(s)
    exec_cases(s)
    opt_cases(s)
    python_cases(s)
    path_cases(s)
    for i, case in enumerate(s.cases):
        case.number = i + 1
    return s.cases


def gen_cases(s):
    for model in ("mlp", "ffn", "gpt", "moe"):
        s.add("gen", "a valid %s" % model, ["partita", "gen", model], OK)
    for model, expect in [("", ERROR), ("GPT", ERROR), ("bert", ERROR),
                          ("gpt gpt", ERROR), (LONG_TEXT, ERROR),
                          ("-", ERROR), ("\u00e9", ERROR)]:
        s.add("gen", "model %s" % _short(model), ["partita", "gen", model],
              expect)
    s.add("gen", "no model", ["partita", "gen"], ERROR)
    s.add("gen", "two models", ["partita", "gen", "gpt", "mlp"], ERROR)
    s.add("gen", "unknown flag", ["partita", "gen", "gpt", "--bogus"], ERROR)
    s.add("gen", "flag with =", ["partita", "gen", "gpt", "--layers=1"],
          EITHER)
    sizes = ["--layers", "--d-model", "--heads", "--kv-heads", "--seq",
             "--batch", "--vocab", "--mlp-ratio", "--experts", "--top-k",
             "--groups", "--pp"]
    for flag in sizes:
        model = "moe" if flag in ("--experts", "--top-k", "--groups") else \
            "gpt"
        s.flag_values("gen", ["partita", "gen", model], flag, "size", 1)
    s.flag_values("gen", ["partita", "gen", "moe"], "--capacity-factor",
                  "pos", 4)
    for flag, values in [("--embedding", ["", "onehot,gather", "ONEHOT"]),
                         ("--dtype", ["", "f64", "bf8", "i32"]),
                         ("--rules", ["", "dp+", "nosuchpreset",
                                      "dp+tp+fsdp", "@FX@/nonexistent.json",
                                      "@FX@", "/dev/null"])]:
        for value in values:
            s.add("gen", "%s %s" % (flag, value or "''"),
                  ["partita", "gen", "gpt", flag, value], ERROR)
    for mesh, expect in s.sample(BAD_MESHES, 4):
        s.add("gen", "--mesh %s" % _short(mesh),
              ["partita", "gen", "gpt", "--rules", "dp+tp", "--mesh", mesh],
              expect)
    for extra, expect in [
            (["--heads", "3"], EITHER),            # 64 not divisible by 3
            (["--kv-heads", "3"], ERROR),          # 4 heads, 3 kv heads
            (["--top-k", "9"], ERROR),             # more than 4 experts
            (["--d-model", "1000000000", "--summary"], ERROR),
            (["--scan", "--layers", "0"], EITHER),
            (["--pp", "3", "--layers", "2"], EITHER),
            (["--dtype", "bf16", "--summary"], OK),
            (["-o", "/dev/full"], ERROR),
            (["-o", "adir"], ERROR),
            (["-o", "nosuchdir/out.mlir"], ERROR),
            (["-o", ""], ERROR)]:
        model = "moe" if "--top-k" in extra else "gpt"
        s.add("gen", " ".join(extra), ["partita", "gen", model] + extra,
              expect)


def program_cases(s):
    """Mutated example programs through every command that reads one."""
    runners = ["compile", "compile-verified", "compile-exe-stdin",
               "explain", "show", "run", "import", "opt", "python",
               "compile-strict"]
    turn = 0
    for name, (devices, value) in PROGRAMS.items():
        text = (EXAMPLES / name).read_text()
        for runner in ("compile", "explain", "show", "run"):
            argv, command, stdin = _program_argv(runner, devices, value)
            s.add(command, "%s unchanged" % name, argv, OK,
                  files={"prog.mlir": text.encode()}, stdin=stdin)
        count = 8
        # Decide each mutant's runner first: a mutant that runs keeps its
        # shapes small.
        plan = [runners[(turn + i) % len(runners)] for i in range(count + 9)]
        turn += count + 9
        mutants = program_mutants(s.rng, name, text, count, executes=False)
        small = program_mutants(random.Random(SEED + len(name)), name, text,
                                count, executes=True)
        for i, runner in enumerate(plan):
            what, mutated, expect = (small if runner == "run" else
                                     mutants)[i]
            data = mutated.encode("utf-8", "surrogateescape")
            argv, command, stdin = _program_argv(runner, devices, value)
            if runner == "python":
                s.add("python", "compile(%s %s)" % (name, what),
                      ["python"], expect, files={"prog.mlir": data},
                      code="m = partita.compile(pathlib.Path('prog.mlir'))\n"
                           "print(m)\nprint(m.explain()[:200])")
            else:
                s.add(command, "%s %s" % (name, what), argv, expect,
                      files={"prog.mlir": data},
                      stdin=data if stdin else None)


def _program_argv(runner, devices, value):
    """(argv, command, reads stdin) for one way of feeding prog.mlir."""
    p = "partita"
    table = {
        "compile": ([p, "compile", "prog.mlir"], "compile", False),
        "compile-verified": ([p, "compile", "prog.mlir", "--stage",
                              "verified"], "compile", False),
        "compile-exe-stdin": ([p, "compile", "-", "--stage", "executable",
                               "-o", "out.exe"], "compile", True),
        "compile-strict": ([p, "compile", "prog.mlir", "--strict", "--report",
                            "r.json", "--html", "r.html", "-o", "out.mlir"],
                           "compile", False),
        "explain": ([p, "explain", "prog.mlir"], "explain", False),
        "show": ([p, "show", "prog.mlir", "--value", value], "show", False),
        "run": ([p, "run", "prog.mlir", "--devices", "cpu:%d" % devices],
                "run", False),
        "import": ([p, "import", "prog.mlir"], "import", False),
        "opt": (["partita-opt", "prog.mlir", "--partita-pipeline"],
                "partita-opt", False),
        "python": (["python"], "python", False),
    }
    return table[runner]


def compile_cases(s):
    mlp = FX + "/mlp.mlir"
    base = ["partita", "compile", mlp]
    s.add("compile", "a valid compile with a report",
          base + ["--report", "r.json", "-o", "out.mlir"], OK)
    for stage, expect in [("", ERROR), ("bogus", ERROR), ("PARTITIONED",
                          ERROR), ("executable", ERROR),
                          ("verified,partitioned", ERROR)]:
        s.add("compile", "--stage %s" % (stage or "''"),
              base + ["--stage", stage], expect)
    for flag in ("--report", "--html", "-o"):
        for target, expect in [("/dev/full", ERROR), ("adir", ERROR),
                               ("nosuchdir/x", ERROR), ("", ERROR)]:
            s.add("compile", "%s %s" % (flag, target),
                  base + [flag, target], expect)
    s.add("compile", "--stage executable -o /dev/full",
          base + ["--stage", "executable", "-o", "/dev/full"], ERROR)
    s.add("compile", "--stage executable -o -",
          base + ["--stage", "executable", "-o", "-"], EITHER)
    s.flag_values("compile", base, "--combine-bytes", "int", 3)
    s.flag_values("compile", base, "--max-padding", "real", 3)
    for mesh, expect in s.sample(BAD_MESHES, 6):
        s.add("compile", "--mesh %s" % _short(mesh), base + ["--mesh", mesh],
              expect)
    for rules, expect in [("", ERROR), ("nosuchpreset", ERROR),
                          ("dp+", ERROR), (FX, ERROR), ("/dev/null", ERROR),
                          ("tp", EITHER), ("ep", EITHER)]:
        s.add("compile", "--rules %s" % (rules or "''"),
              ["partita", "compile", FX + "/gpt1.mlir", "--rules", rules],
              expect)
    for fmt, expect in [("", ERROR), ("bogus", ERROR), ("stablehlo", ERROR),
                        ("partita", OK), ("auto", OK)]:
        s.add("compile", "--from %s" % (fmt or "''"), base + ["--from", fmt],
              expect)
    gpt = FX + "/gpt-pp.mlir"
    for extra, expect in [
            (["--pp", "2"], ERROR),                      # without --train
            (["--train", "--pp", "0"], ERROR),
            (["--train", "--pp", "-1"], ERROR),
            (["--train", "--pp", "3"], ERROR),           # mesh has pipe=2
            (["--train", "--pp", "99999999999999999999"], ERROR),
            (["--train", "--pp", "2", "--schedule", "bogus"], ERROR),
            (["--train", "--pp", "2", "--schedule", "interleaved",
              "--virtual-stages", "0"], ERROR),
            (["--train", "--pp", "2", "--schedule", "interleaved",
              "--virtual-stages", "99999999999999999999"], ERROR),
            (["--train", "--pp", "2", "--programs", "/dev/null"], ERROR),
            (["--train", "--pp", "2", "-o", "/dev/null"], ERROR),
            (["--train", "--pp", "2", "--rules", "dp"], OK),
            (["--train", "--pp", "2", "--schedule", "zb", "--rules", "dp"],
             OK)]:
        s.add("compile", "gpt %s" % " ".join(extra),
              ["partita", "compile", gpt] + extra, expect)
    for extra, expect in [
            (["--bogus"], ERROR), ([mlp], ERROR), (["--strict", "--strict"],
                                                    EITHER),
            (["--timing"], OK), (["--no-fusion"], EITHER),
            (["--no-overlap", "--combine-bytes", "0"], OK),
            (["--train"], OK)]:
        s.add("compile", " ".join(extra) if extra[0] != mlp else
              "two input files", base + extra, expect)
    s.add("compile", "stdin that is empty", ["partita", "compile"], EITHER)
    s.add("compile", "stdin of binary garbage", ["partita", "compile", "-"],
          ERROR, stdin=bytes(range(256)) * 8)


def explain_show_cases(s):
    mlp = FX + "/transformer-layer.mlir"
    for value, expect in [("", EITHER), ("nosuchvalue", ERROR),
                          ("arg0", OK), ("arg7", ERROR), ("arg-1", ERROR),
                          ("arg99999999999999999999", ERROR),
                          ("result0", OK), ("result1", ERROR),
                          ("@layer:arg0", OK), ("@nofunc:arg0", ERROR),
                          ("@layer:", ERROR), (LONG_TEXT, ERROR),
                          ("\u00e9\u202e", ERROR), ("attn.wq", OK),
                          ("*", EITHER), ("attn.q", OK)]:
        command = ("explain", "show")[len(s.cases) % 2]
        s.add(command, "--value %s" % _short(value),
              ["partita", command, mlp, "--value", value], expect)
    s.add("explain", "no --value", ["partita", "explain", mlp], OK)
    s.add("show", "no --value", ["partita", "show", mlp], ERROR)
    s.add("show", "--value without a value",
          ["partita", "show", mlp, "--value"], ERROR)
    for color, expect in [("", ERROR), ("sometimes", ERROR),
                          ("always", OK), ("never", OK)]:
        s.add("show", "--color %s" % (color or "''"),
              ["partita", "show", mlp, "--value", "attn.wq", "--color", color],
              expect)
    for command in ("explain", "show"):
        for mesh, expect in s.sample(BAD_MESHES, 3):
            s.add(command, "--mesh %s" % _short(mesh),
                  ["partita", command, mlp, "--value", "attn.wq", "--mesh",
                   mesh], expect)
        s.add(command, "--interconnect of a directory",
              ["partita", command, mlp, "--value", "x", "--interconnect", FX],
              ERROR)
        s.add(command, "--strict",
              ["partita", command, mlp, "--value", "x", "--strict"], EITHER)
    sched = ["partita", "show", "--schedule"]
    for extra, expect in [
            (["1f1b", "--pp", "4", "--micro-batches", "8"], OK),
            (["bogus", "--pp", "4", "--micro-batches", "8"], ERROR),
            (["1f1b", "--pp", "0", "--micro-batches", "8"], ERROR),
            (["1f1b", "--pp", "4", "--micro-batches", "0"], ERROR),
            (["1f1b", "--pp", "-4", "--micro-batches", "8"], ERROR),
            (["gpipe", "--pp", "99999999999999999999", "--micro-batches",
              "8"], ERROR),
            (["zb", "--pp", "4", "--micro-batches", "1e309"], ERROR),
            (["interleaved", "--pp", "4", "--micro-batches", "8",
              "--virtual-stages", "0"], ERROR),
            (["interleaved", "--pp", "4", "--micro-batches", "6",
              "--virtual-stages", "2"], EITHER),
            (["1f1b", "--pp", "4", "--micro-batches", "8", "--width", "0"],
             EITHER),
            (["1f1b", "--pp", "4", "--micro-batches", "8", "--width", "-1"],
             ERROR),
            (["1f1b", "--pp", "4", "--micro-batches", "8", "--width",
              "99999999999999999999"], ERROR),
            (["1f1b", "--pp", "4", "--micro-batches", "8", "--width",
              "1000000"], EITHER),
            (["1f1b", "--pp", "1000", "--micro-batches", "1000"], EITHER),
            (["1f1b", "--pp", "4", "--micro-batches", "8", "--width",
              "1e309"], ERROR),
            (["zb", "--pp", "1", "--micro-batches", "1"], EITHER),
            (["1f1b", "--pp", "4"], EITHER),
            ([], ERROR)]:
        s.add("show", "--schedule %s" % " ".join(extra), sched + extra,
              expect)


def run_cases(s):
    add = FX + "/add.mlir"
    base = ["partita", "run", add, "--devices", "cpu:2"]
    s.add("run", "valid inputs", base + ["--inputs",
          FX + "/in/a.npy," + FX + "/in/b.npy", "--outputs", "out"], OK)
    s.add("run", "a sharded-array directory as input",
          base + ["--inputs", FX + "/sharded," + FX + "/in/b.npy"], OK)
    for devices, expect in [("", ERROR), ("cpu", ERROR), ("cpu:", ERROR),
                            ("cpu:0", ERROR), ("cpu:-1", ERROR),
                            ("cpu:3", ERROR), ("cpu:99999999999999999999",
                                               ERROR),
                            ("cpu:1e309", ERROR), ("gpu:2", ERROR),
                            ("cuda:2", ERROR), ("cpu:2,cpu:2", ERROR),
                            ("CPU:2", ERROR), ("cpu:1", OK), ("2", EITHER),
                            ("cpu:+2", EITHER), ("cpu:\uff12", ERROR)]:
        s.add("run", "--devices %s" % (devices or "''"),
              ["partita", "run", add, "--devices", devices], expect)
    s.add("run", "no --devices", ["partita", "run", add], EITHER)
    s.flag_values("run", base, "--seed", "int", 3)
    s.flag_values("run", base + ["--distributed"], "--timeout", "pos", 2)
    s.add("run", "--timeout without --distributed",
          base + ["--timeout", "5"], ERROR)
    s.add("run", "--distributed outside mpirun", base + ["--distributed"],
          EITHER)
    a, b = FX + "/in/a.npy", FX + "/in/b.npy"
    for inputs, expect in [("", ERROR), (",", ERROR), (a, ERROR),
                           (",".join([a, b, b]), ERROR), (a + ",," + b, ERROR),
                           (a + "," + b + ",", EITHER), (a + "," + a, OK),
                           (b + "," + a, OK), (FX + "," + b, ERROR),
                           ("/dev/null," + b, ERROR), ("missing.npy," + b,
                                                       ERROR),
                           (FX + "/fifo," + b, ERROR),
                           (",".join([a] * 1000), ERROR)]:
        s.add("run", "--inputs %s" % _short(inputs),
              base + ["--inputs", inputs], expect)
    for flag in ("--outputs", "--trace"):
        for target, expect in [("/dev/null", ERROR if flag == "--outputs"
                                else EITHER), ("/dev/full", ERROR),
                               ("afile", ERROR if flag == "--outputs"
                                else EITHER),
                               ("nosuchdir/deeper/x", EITHER), ("", ERROR)]:
            s.add("run", "%s %s" % (flag, target or "''"),
                  base + [flag, target], expect)
    s.add("run", "--expect a missing directory",
          base + ["--expect", "nosuchdir"], ERROR)
    s.add("run", "--expect outputs of the wrong shape",
          base + ["--expect", "want"], ERROR,
          files={"want/result_0.npy": npy_bytes(shape=(3, 4))})
    s.add("run", "--expect outputs that differ",
          base + ["--expect", "want"], ERROR,
          files={"want/result_0.npy": npy_bytes(shape=(4, 3),
                                                data=b"\0" * 48)})
    s.add("run", "--expect a result that is a corrupt .npy",
          base + ["--expect", "want"], ERROR,
          files={"want/result_0.npy": b"\x93NUMPY\x01\x00"})
    mlp = FX + "/mlp.mlir"
    for extra, expect in [
            (["--check"], OK), (["--check", "--no-fusion"], OK),
            (["--rules", "tp"], EITHER), (["--mesh", "data=8"], ERROR),
            (["--mesh", "data=4,model=2"], OK),
            (["--interconnect", "/dev/null"], ERROR),
            (["--combine-bytes", "-1"], EITHER),
            (["--inputs", a + "," + b], ERROR)]:
        s.add("run", "mlp %s" % " ".join(extra),
              ["partita", "run", mlp, "--devices", "cpu:8"] + extra, expect)
    s.add("run", "no program", ["partita", "run", "--devices", "cpu:2"],
          ERROR)


NPY_DAMAGE = [
    # (what, bytes, expected as an input of add.mlir, expected by info)
    ("bad magic", npy_bytes(magic=b"\x93NUMPX"), ERROR, ERROR),
    ("version 3.0 (NumPy's UTF-8 header)", npy_bytes(version=(3, 0)),
     EITHER, EITHER),
    ("version 9.0", npy_bytes(version=(9, 0)), ERROR, ERROR),
    ("version 2.0 (4-byte header length)", npy_bytes(version=(2, 0)),
     EITHER, EITHER),
    ("header length past the end",
     npy_bytes()[:8] + b"\xff\xff" + npy_bytes()[10:], ERROR, ERROR),
    ("header length 0", npy_bytes()[:8] + b"\0\0" + npy_bytes()[10:],
     ERROR, ERROR),
    ("header is a list", npy_bytes(header="[1, 2]"), ERROR, ERROR),
    ("header without shape",
     npy_bytes(header="{'descr': '<f4', 'fortran_order': False, }"),
     ERROR, ERROR),
    ("header without descr",
     npy_bytes(header="{'fortran_order': False, 'shape': (4, 3), }"),
     ERROR, ERROR),
    ("header with a Python call",
     npy_bytes(header="{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(4, 3), 'x': __import__('os').getpid()}"), EITHER, EITHER),
    ("header with shape as a list",
     npy_bytes(header="{'descr': '<f4', 'fortran_order': False, "
               "'shape': [4, 3], }"), EITHER, EITHER),
    ("header without the newline", npy_bytes(pad=False), EITHER, EITHER),
    ("header with non-ASCII",
     npy_bytes(header="{'descr': '<f4', 'fortran_order': False, "
               "'shape': (4, 3), '\u00e9': 1}"), EITHER, EITHER),
    ("dtype f64", npy_bytes("<f8", data=b"\0" * 96), ERROR, OK),
    ("dtype i4", npy_bytes("<i4"), ERROR, OK),
    ("dtype f2", npy_bytes("<f2", data=b"\0" * 24), ERROR, EITHER),
    ("big-endian f4", npy_bytes(">f4"), EITHER, EITHER),
    ("dtype bool", npy_bytes("|b1", data=b"\1" * 12), ERROR, EITHER),
    ("dtype complex", npy_bytes("<c8", data=b"\0" * 96), ERROR, EITHER),
    ("dtype object", npy_bytes("|O", data=b"\0" * 96), ERROR, ERROR),
    ("dtype unicode", npy_bytes("<U4", data=b"\0" * 192), ERROR, ERROR),
    ("structured dtype",
     npy_bytes(header="{'descr': [('a', '<f4')], 'fortran_order': False, "
               "'shape': (4, 3), }"), ERROR, ERROR),
    ("dtype nonsense", npy_bytes("<q9"), ERROR, ERROR),
    ("fortran order", npy_bytes(fortran=True), ERROR, EITHER),
    ("shape 3x4", npy_bytes(shape=(3, 4)), ERROR, OK),
    ("shape 4x3x1", npy_bytes(shape=(4, 3, 1)), ERROR, OK),
    ("shape 12", npy_bytes(shape=(12,)), ERROR, OK),
    ("a scalar", npy_bytes(shape=()), ERROR, OK),
    ("shape 0x3", npy_bytes(shape=(0, 3)), ERROR, OK),
    ("shape -1x3", npy_bytes(shape=(-1, 3), data=b"\0" * 48), ERROR, ERROR),
    ("shape 2^40 x 2^40", npy_bytes(shape=(1 << 40, 1 << 40), data=b""),
     ERROR, ERROR),
    ("shape 2^31 x 4 (32 GiB), no data",
     npy_bytes(shape=(1 << 31, 4), data=b"\0" * 64), ERROR, ERROR),
    ("shape 99999999999999999999",
     npy_bytes(shape=(99999999999999999999,), data=b""), ERROR, ERROR),
    ("data truncated", npy_bytes()[:-20], ERROR, ERROR),
    ("data missing", npy_bytes(data=b""), ERROR, ERROR),
    ("trailing bytes after the data", npy_bytes() + b"extra", EITHER, EITHER),
    ("NaN and infinity data",
     npy_bytes(data=struct.pack("<12f", *[float("nan"), float("inf")] * 6)),
     OK, OK),
    ("empty file", b"", ERROR, ERROR),
    ("only the magic", b"\x93NUMPY", ERROR, ERROR),
]


def npy_cases(s):
    b = FX + "/in/b.npy"
    for what, data, as_input, as_info in NPY_DAMAGE:
        files = {"bad.npy": data}
        s.add("run", ".npy input: %s" % what,
              ["partita", "run", FX + "/add.mlir", "--devices", "cpu:2",
               "--inputs", "bad.npy," + b], as_input, files=files)
        if len(s.cases) % 2:
            s.add("exec info", ".npy %s" % what,
                  ["partita-exec", "info", "bad.npy"], as_info, files=files)
    for what, data, _, as_info in s.sample(NPY_DAMAGE, 5):
        s.add("exec shard", ".npy %s" % what,
              ["partita-exec", "shard", "bad.npy", "--mesh", "data=2",
               "--spec", 'P("data", None)', "-o", "out"],
              ERROR if as_info == ERROR else EITHER,
              files={"bad.npy": data})


def train_cases(s):
    base = ["partita", "train", "--model", "gpt", "--layers", "1", "--steps",
            "1", "--devices", "cpu:2", "--output", "out"]
    s.add("train", "a valid step", base, OK)
    s.add("train", "mlp, sgd, cosine schedule",
          ["partita", "train", "--model", "mlp", "--layers", "1", "--steps",
           "2", "--devices", "cpu:2", "--optimizer", "sgd", "--lr-schedule",
           "cosine", "--output", "out"], OK)
    for model, expect in [("", ERROR), ("ffn", ERROR), ("bogus", ERROR),
                          ("moe", OK)]:
        s.add("train", "--model %s" % (model or "''"),
              ["partita", "train", "--model", model, "--layers", "1",
               "--steps", "1", "--devices", "cpu:2", "--output", "out"],
              expect)
    s.add("train", "no --model", ["partita", "train", "--steps", "1"], ERROR)
    for flag, kind, k in [("--steps", "size", 3), ("--lr", "real", 3),
                          ("--seed", "int", 2), ("--warmup", "int", 1),
                          ("--min-lr", "real", 1), ("--clip-norm", "pos", 3),
                          ("--micro-batches", "size", 2),
                          ("--eval-every", "size", 1),
                          ("--eval-batches", "size", 1),
                          ("--checkpoint-every", "size", 1),
                          ("--keep", "size", 1)]:
        s.flag_values("train", base, flag, kind, k)
    for flag, values in [
            ("--optimizer", ["", "adam", "SGD"]),
            ("--lr-schedule", ["", "exponential"]),
            ("--remat", ["", "half", "per_layer"]),
            ("--objective", ["", "rlhf"]),
            ("--schedule", ["bogus"]),
            ("--rules", ["", "nosuchpreset", "pp+"]),
            ("--devices", ["", "cpu:0", "cpu:-2", "cpu:3", "gpu:2",
                           "cpu:99999999999999999999", "cuda:2"])]:
        for value in values:
            expect = EITHER if value == "cpu:3" else ERROR
            s.add("train", "%s %s" % (flag, value or "''"),
                  base + [flag, value], expect)
    for mesh, expect in s.sample(BAD_MESHES, 4):
        s.add("train", "--mesh %s" % _short(mesh), base + ["--mesh", mesh],
              ERROR if expect == ERROR else EITHER)
    for extra, expect in [
            (["--mixed-precision"], ERROR),                 # needs bf16
            (["--mixed-precision", "--dtype", "bf16"], OK),
            (["--check"], ERROR),                           # needs --pp
            (["--pp", "3"], ERROR),
            (["--pp", "2", "--schedule", "interleaved", "--virtual-stages",
              "0"], ERROR),
            (["--pp", "2"], EITHER),                        # 1 layer, 2 ranks
            (["--rules", "pp+dp"], EITHER),                 # without --pp
            (["--micro-batches", "3"], EITHER),             # batch 8
            (["--batch", "3"], EITHER),                     # 2 data shards
            (["--warmup", "5"], EITHER),                    # past --steps
            (["--lr-schedule", "cosine", "--min-lr", "1"], EITHER),
            (["--eval-every", "1", "--eval-data", "missing.bin"], ERROR),
            (["--eval-data", FX + "/tokens.bin"], ERROR),   # no --eval-every
            (["--reference", FX + "/ckpt"], ERROR),         # not dpo
            (["--beta", "0.5"], ERROR),                     # not dpo
            (["--resume", "nosuchdir"], ERROR),
            (["--resume", "emptydir"], ERROR),
            (["--resume", "afile"], ERROR),
            (["--init-from", "nosuchdir"], ERROR),
            (["--init-from", FX + "/ckpt", "--resume", "ck"], ERROR),
            (["--init-from", FX + "/ckpt"], OK),
            (["--output", "/dev/null"], ERROR),
            (["--output", "afile"], ERROR),
            (["--output", ""], ERROR),
            (["--trace", "/dev/full"], ERROR),
            (["--trace", "adir"], ERROR),
            (["--checkpoint-dir", "/dev/null"], ERROR),
            (["--checkpoint-dir", "afile"], ERROR),
            (["--checkpoint-dir", "ck", "--keep", "0"], OK),
            (["--data-trace", "/dev/full", "--data", FX + "/tokens.bin"],
             ERROR),
            (["--data-trace", "trace.csv"], EITHER),        # synthetic data
            (["--bogus"], ERROR), (["--layers"], ERROR),
            (["--steps", "2", "--steps", "1"], EITHER)]:
        files = {"emptydir": DIRECTORY}
        # --resume writes on into its directory: give it a copy.
        prepare = _damaged_checkpoint(lambda step, rng: None, 0) \
            if "ck" in extra else None
        s.add("train", " ".join(_short(x) for x in extra), base + extra,
              expect, files=files, prepare=prepare)
    s.add("train", "--steps 99999999999999999999 (no other flag)",
          ["partita", "train", "--model", "gpt", "--steps",
           "99999999999999999999"], ERROR)


def data_cases(s):
    """Token files for --data and text files for --objective sft|dpo."""
    lm = ["partita", "train", "--model", "gpt", "--layers", "1", "--steps",
          "1", "--devices", "cpu:2", "--output", "out", "--data"]
    valid = [(3 * i + 1) % 128 for i in range(4000)]
    for what, data, expect in [
            ("valid tokens", int32_tokens(valid), OK),
            ("an empty file", b"", ERROR),
            ("7 bytes", b"\1\0\0\0\2\0\0", ERROR),
            ("4001 bytes", int32_tokens(valid[:1000]) + b"\1", ERROR),
            ("16 tokens (less than one window)", int32_tokens(valid[:16]),
             ERROR),
            ("17 tokens (one window, batch 8)", int32_tokens(valid[:17]),
             EITHER),
            ("a token 128 (vocabulary 128)",
             int32_tokens(valid[:500] + [128] + valid[:500]), ERROR),
            ("a token -1", int32_tokens(valid[:500] + [-1] + valid[:500]),
             ERROR),
            ("a token 2^31 - 1",
             int32_tokens(valid[:500] + [2 ** 31 - 1] + valid[:500]), ERROR),
            ("every token out of vocabulary", int32_tokens([1000] * 4000),
             ERROR),
            ("text, not tokens", b"1 2 3 4 5\n" * 400, ERROR)]:
        s.add("train", "--data %s" % what, lm + ["tokens.bin"], expect,
              files={"tokens.bin": data})
        if what.startswith(("valid", "7 bytes", "a token -1", "16 tokens")):
            s.add("train", "--eval-data %s" % what,
                  lm[:-1] + ["--eval-every", "1", "--eval-batches", "1",
                             "--eval-data", "tokens.bin"], expect,
                  files={"tokens.bin": data})
    for target, expect in [("/dev/null", ERROR), (FX, ERROR),
                           ("missing.bin", ERROR), (FX + "/fifo", ERROR),
                           ("", ERROR)]:
        s.add("train", "--data %s" % (target or "''"), lm + [target], expect)
    sft = ["partita", "train", "--model", "gpt", "--layers", "1", "--steps",
           "1", "--devices", "cpu:2", "--output", "out", "--objective", "sft",
           "--data", "sft.txt"]
    good = "1 37 37 29 41 40 2 | 40 41 29 37 37 3\n"
    for what, text, expect in [
            ("valid", good * 20, OK),
            ("empty", "", ERROR),
            ("blank lines only", "\n\n  \n", ERROR),
            ("a line without '|'", good * 5 + "1 2 3 4\n" + good * 5, ERROR),
            ("a token that is a word", good * 5 + "1 two 3 | 4 5\n", ERROR),
            ("a token -5", good * 5 + "1 -5 3 | 4 5\n", ERROR),
            ("a token 500 (vocabulary 128)", good * 5 + "1 500 | 4\n", ERROR),
            ("a token 99999999999999999999",
             good * 5 + "1 99999999999999999999 | 4\n", ERROR),
            ("a token 1.5", good * 5 + "1 1.5 | 4\n", ERROR),
            ("unicode digits", good * 5 + "1 \u0663 | 4\n", ERROR),
            ("a NUL byte", good * 5 + "1 2\x00 | 4\n", ERROR),
            ("an empty prompt", good * 5 + " | 4 5 6\n", EITHER),
            ("an empty response", good * 5 + "1 2 3 |\n", EITHER),
            ("three parts", good * 5 + "1 2 | 3 | 4\n", ERROR),
            ("a 5000-token line", good * 5 + "1 " * 5000 + "| 2\n", EITHER),
            ("CRLF endings", (good * 10).replace("\n", "\r\n"), EITHER),
            ("tabs as separators", (good * 10).replace(" ", "\t"), EITHER),
            ("no final newline", good * 10 + good.strip(), OK),
            ("binary garbage", bytes(range(256)).decode("latin-1") * 4,
             ERROR)]:
        s.add("train", "sft data: %s" % what, sft, expect,
              files={"sft.txt": text.encode("utf-8", "surrogateescape")})
    s.add("train", "sft without --data", sft[:-2], ERROR)
    s.add("train", "sft on a token file", sft[:-1] + [FX + "/tokens.bin"],
          ERROR)
    dpo = ["partita", "train", "--model", "gpt", "--layers", "1", "--steps",
           "1", "--devices", "cpu:2", "--output", "out", "--objective", "dpo",
           "--reference", FX + "/ckpt", "--data", "prefs.txt"]
    pref = "1 29 16 49 58 47 2 | 47 58 49 16 29 3 | 29 16 49 58 47 3\n"
    for what, text, expect in [
            ("valid", pref * 20, OK),
            ("empty", "", ERROR),
            ("two parts", pref * 5 + "1 2 | 3 4\n", ERROR),
            ("four parts", pref * 5 + "1 | 2 | 3 | 4\n", ERROR),
            ("an empty chosen", pref * 5 + "1 2 | | 3 4\n", EITHER),
            ("a token 300", pref * 5 + "1 2 | 300 | 4\n", ERROR),
            ("a token -1", pref * 5 + "1 2 | -1 | 4\n", ERROR),
            ("words", pref * 5 + "a b | c | d\n", ERROR),
            ("SFT lines", good * 10, ERROR)]:
        s.add("train", "dpo data: %s" % what, dpo, expect,
              files={"prefs.txt": text.encode()})
    for flag, value, expect in [
            ("--beta", "0", EITHER), ("--beta", "-1", ERROR),
            ("--beta", "nan", ERROR), ("--beta", "inf", ERROR),
            ("--beta", "1e309", ERROR), ("--beta", "", ERROR),
            ("--reference", "nosuchdir", ERROR),
            ("--reference", FX + "/add.mlir", ERROR),
            ("--reference", "emptydir", ERROR)]:
        argv = list(dpo) + [flag, value]
        if flag == "--reference":
            argv = [x if x != FX + "/ckpt" else value for x in dpo]
        s.add("train", "dpo %s %s" % (flag, value or "''"), argv, expect,
              files={"prefs.txt": (pref * 20).encode(),
                     "emptydir": DIRECTORY})
    s.add("train", "dpo without --reference",
          [x for x in dpo if x not in ("--reference", FX + "/ckpt")], ERROR,
          files={"prefs.txt": (pref * 20).encode()})
    s.add("train", "dpo with a reference of another model",
          dpo + ["--layers", "2"], ERROR,
          files={"prefs.txt": (pref * 20).encode()})


# Checkpoint damage: (what, fn(step_dir, rng), expected by info, by use).
def _edit_checkpoint_json(edit):
    def damage(step, rng):
        path = step / "checkpoint.json"
        doc = json.loads(path.read_text())
        result = edit(doc, rng)
        path.write_bytes(result if isinstance(result, bytes) else
                         json_text(doc))
    return damage


def _set(key, value):
    def edit(doc, rng):
        doc[key] = value
    return edit


def _tensor_edit(key, value):
    def edit(doc, rng):
        doc["tensors"][0][key] = value
    return edit


def _file_edit(key, value):
    def edit(doc, rng):
        doc["files"][1][key] = value
    return edit


def _shard(step):
    return sorted((step / "param.0").glob("shard_*.npy"))[0]


def _flip_byte(path, at=-5):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x55
    path.write_bytes(bytes(data))


CHECKPOINT_DAMAGE = [
    ("version 2", _edit_checkpoint_json(_set("version", 2)), ERROR, ERROR),
    ("version \"1\"", _edit_checkpoint_json(_set("version", "1")), ERROR,
     ERROR),
    ("step -1", _edit_checkpoint_json(_set("step", -1)), ERROR, ERROR),
    ("step 99999999999999999999",
     _edit_checkpoint_json(_set("step", 99999999999999999999)), ERROR, ERROR),
    ("step 0", _edit_checkpoint_json(_set("step", 0)), EITHER, EITHER),
    ("model ''", _edit_checkpoint_json(_set("model", "")), EITHER, ERROR),
    ("model 'gpt layers=99999999999999999999'",
     _edit_checkpoint_json(_set("model", "gpt layers=99999999999999999999")),
     EITHER, ERROR),
    ("model of another width",
     _edit_checkpoint_json(lambda d, r: d.update(
         model=d["model"].replace("d_model=64", "d_model=32"))),
     EITHER, ERROR),
    ("mesh data=0", _edit_checkpoint_json(_set("mesh", "data=0")), EITHER,
     EITHER),
    ("rules 'nope'", _edit_checkpoint_json(_set("rules", "nope")), EITHER,
     EITHER),
    ("losses []", _edit_checkpoint_json(_set("losses", [])), EITHER, EITHER),
    ("losses ['x', null]",
     _edit_checkpoint_json(_set("losses", ["x", None])), EITHER, EITHER),
    ("a tensor removed",
     _edit_checkpoint_json(lambda d, r: d["tensors"].pop(0)), EITHER, ERROR),
    ("a tensor's shape changed",
     _edit_checkpoint_json(_tensor_edit("shape", [64, 128])), ERROR, ERROR),
    ("a tensor's shape [-1]",
     _edit_checkpoint_json(_tensor_edit("shape", [-1])), ERROR, ERROR),
    ("a tensor's dtype f64",
     _edit_checkpoint_json(_tensor_edit("dtype", "f64")), ERROR, ERROR),
    ("a tensor's directory '../..'",
     _edit_checkpoint_json(_tensor_edit("directory", "../..")), ERROR, ERROR),
    ("a tensor's directory '/etc'",
     _edit_checkpoint_json(_tensor_edit("directory", "/etc")), ERROR, ERROR),
    ("a tensor listed twice, the second time with another's directory",
     _edit_checkpoint_json(lambda d, r: d["tensors"].append(
         dict(d["tensors"][1], key=d["tensors"][0]["key"]))), ERROR, ERROR),
    ("a file's crc32c changed",
     _edit_checkpoint_json(_file_edit("crc32c", "00000000")), ERROR, ERROR),
    ("a file's crc32c not hex",
     _edit_checkpoint_json(_file_edit("crc32c", "zz")), ERROR, ERROR),
    ("a file's bytes changed",
     _edit_checkpoint_json(_file_edit("bytes", 7)), ERROR, ERROR),
    ("a file's bytes -1",
     _edit_checkpoint_json(_file_edit("bytes", -1)), ERROR, ERROR),
    ("a file's path '../../x'",
     _edit_checkpoint_json(_file_edit("path", "../../x")), ERROR, ERROR),
    ("the files list removed",
     _edit_checkpoint_json(lambda d, r: d.pop("files")), EITHER, EITHER),
    ("checkpoint.json truncated",
     _edit_checkpoint_json(lambda d, r: json_text(d)[:300]), ERROR, ERROR),
    ("checkpoint.json empty", _edit_checkpoint_json(lambda d, r: b""),
     ERROR, ERROR),
    ("checkpoint.json nested 100000 deep",
     _edit_checkpoint_json(lambda d, r: b"[" * 100000 + b"]" * 100000),
     ERROR, ERROR),
    ("checkpoint.json removed",
     lambda step, rng: (step / "checkpoint.json").unlink(), ERROR, ERROR),
    ("checkpoint.json a directory",
     lambda step, rng: ((step / "checkpoint.json").unlink(),
                        (step / "checkpoint.json").mkdir()), ERROR, ERROR),
    ("a shard's byte flipped", lambda step, rng: _flip_byte(_shard(step)),
     ERROR, ERROR),
    ("a shard's header byte flipped",
     lambda step, rng: _flip_byte(_shard(step), 20), ERROR, ERROR),
    ("a shard truncated",
     lambda step, rng: _shard(step).write_bytes(
         _shard(step).read_bytes()[:100]), ERROR, ERROR),
    ("a shard removed", lambda step, rng: _shard(step).unlink(), ERROR,
     ERROR),
    ("a shard replaced by a directory",
     lambda step, rng: (_shard(step).unlink(), _shard_dir(step).mkdir()),
     ERROR, ERROR),
    ("a tensor's index.json with another shape",
     lambda step, rng: _edit_index(step / "param.0" / "index.json",
                                   "shape", [64, 128]), ERROR, ERROR),
    ("a tensor's index.json empty",
     lambda step, rng: (step / "param.0" / "index.json").write_bytes(b""),
     ERROR, ERROR),
    ("an extra unknown file",
     lambda step, rng: (step / "notes.txt").write_text("hi"), EITHER, EITHER),
    ("a newer step without checkpoint.json",
     lambda step, rng: (step.parent / "step-00000009").mkdir(), EITHER,
     EITHER),
    ("a copy under a huge step number",
     lambda step, rng: shutil.copytree(
         step, step.parent / "step-99999999999999999999"), EITHER, EITHER),
]


def _shard_dir(step):
    return step / "param.0" / "shard_0_0.npy"


def _edit_index(path, key, value):
    doc = json.loads(path.read_text())
    doc[key] = value
    path.write_bytes(json_text(doc))


def _damaged_checkpoint(damage, seed):
    def prepare(case_dir, fx):
        shutil.copytree(fx / "ckpt", case_dir / "ck")
        step = sorted((case_dir / "ck").glob("step-*"))[0]
        damage(step, random.Random(seed))
    return prepare


def checkpoint_cases(s):
    ck = FX + "/ckpt"
    uses = {
        "info": ["partita", "checkpoint", "info", "ck"],
        "convert": ["partita", "checkpoint", "convert", "ck", "-o", "out",
                    "--mesh", "data=2", "--rules", "dp", "--devices",
                    "cpu:2"],
        "resume": ["partita", "train", "--model", "gpt", "--layers", "1",
                   "--steps", "3", "--devices", "cpu:2", "--resume", "ck",
                   "--output", "o"],
        "init-from": ["partita", "train", "--model", "gpt", "--layers", "1",
                      "--steps", "1", "--devices", "cpu:2", "--init-from",
                      "ck", "--output", "o"],
    }
    for use, argv in uses.items():
        s.add("checkpoint" if use in ("info", "convert") else "train",
              "undamaged checkpoint, %s" % use, argv, OK,
              prepare=_damaged_checkpoint(lambda step, rng: None, 0))
    turn = 0
    for i, (what, damage, by_info, by_use) in enumerate(CHECKPOINT_DAMAGE):
        chosen = ["info", ["convert", "resume", "init-from"][i % 3]]
        if i % 4 == 0:
            chosen.append(["resume", "init-from", "convert"][turn % 3])
            turn += 1
        for use in chosen:
            s.add("checkpoint" if use in ("info", "convert") else "train",
                  "%s: %s" % (use, what), uses[use],
                  by_info if use == "info" else by_use,
                  prepare=_damaged_checkpoint(damage, SEED + i))
    info = ["partita", "checkpoint", "info"]
    for extra, expect in [
            ([], ERROR), (["nosuchdir"], ERROR), (["/dev/null"], ERROR),
            (["emptydir"], ERROR), ([FX + "/add.mlir"], ERROR),
            ([ck, ck], ERROR), ([ck + "/step-00000002"], OK)]:
        s.add("checkpoint", "info %s" % " ".join(extra or ["(nothing)"]),
              info + extra, expect, files={"emptydir": DIRECTORY})
    for sub, expect in [("", ERROR), ("bogus", ERROR), ("INFO", ERROR)]:
        s.add("checkpoint", "sub-command %s" % (sub or "''"),
              ["partita", "checkpoint", sub, ck], expect)
    convert = ["partita", "checkpoint", "convert", ck]
    for extra, expect in [
            (["-o", "out", "--mesh", "data=4", "--rules", "fsdp", "--devices",
              "cpu:4"], OK),
            (["--mesh", "data=2", "--rules", "dp"], ERROR),      # no -o
            (["-o", "/dev/null", "--mesh", "data=2", "--rules", "dp",
              "--devices", "cpu:2"], ERROR),
            (["-o", "afile", "--mesh", "data=2", "--rules", "dp",
              "--devices", "cpu:2"], ERROR),
            (["-o", "out", "--mesh", "data=3", "--rules", "dp", "--devices",
              "cpu:3"], EITHER),
            (["-o", "out", "--mesh", "data=2", "--rules", "dp", "--devices",
              "cpu:4"], ERROR),
            (["-o", "out", "--mesh", "data=2", "--rules", "nosuchpreset",
              "--devices", "cpu:2"], ERROR),
            (["-o", "out", "--mesh", "data=0", "--rules", "dp", "--devices",
              "cpu:2"], ERROR),
            (["-o", "out", "--mesh", "", "--rules", "dp", "--devices",
              "cpu:2"], ERROR),
            (["-o", "out", "--mesh", "data=2,model=1", "--rules", "tp",
              "--devices", "cpu:2"], EITHER),
            (["-o", "out", "--rules", "dp", "--devices", "cpu:2"], EITHER),
            (["-o", "", "--mesh", "data=2", "--rules", "dp", "--devices",
              "cpu:2"], ERROR)]:
        s.add("checkpoint", "convert %s" % " ".join(extra), convert + extra,
              expect)
    s.add("checkpoint", "convert into its own directory",
          ["partita", "checkpoint", "convert", "ck", "-o", "ck", "--mesh",
           "data=2", "--rules", "dp", "--devices", "cpu:2"], EITHER,
          prepare=_damaged_checkpoint(lambda step, rng: None, 0))


def plan_cases(s):
    base = ["partita", "plan", "--model", "gpt", "--layers", "1",
            "--devices", "4"]
    s.add("plan", "a valid plan", base + ["--top", "2"], OK)
    s.add("plan", "a valid plan with the cluster file",
          base + ["--interconnect", FX + "/cluster.json", "--emit-flags"], OK)
    for devices, expect in [("", ERROR), ("0", ERROR), ("-1", ERROR),
                            ("1", EITHER), ("3", EITHER), ("cpu:4", OK),
                            ("cpu:", ERROR), ("99999999999999999999", ERROR),
                            ("1e309", ERROR), ("nan", ERROR),
                            ("2147483648", ERROR), ("\uff14", ERROR)]:
        s.add("plan", "--devices %s" % (devices or "''"),
              ["partita", "plan", "--model", "gpt", "--layers", "1",
               "--devices", devices], expect)
    s.add("plan", "no --devices",
          ["partita", "plan", "--model", "gpt", "--layers", "1"], ERROR)
    for model, expect in [("", ERROR), ("ffn", ERROR), ("bogus", ERROR)]:
        s.add("plan", "--model %s" % (model or "''"),
              ["partita", "plan", "--model", model, "--devices", "4"], expect)
    for memory, expect in [("", ERROR), ("0", ERROR), ("-1", ERROR),
                           ("1XB", ERROR), ("KiB", ERROR), ("1.5GiB", OK),
                           ("99999999999999999999GiB", ERROR),
                           ("nan", ERROR), ("inf", ERROR), ("1e309", ERROR),
                           ("-0", ERROR), ("1", EITHER), ("2 MiB", EITHER),
                           ("1e3", EITHER), ("0x100000", EITHER)]:
        s.add("plan", "--memory-per-device %s" % (memory or "''"),
              base + ["--memory-per-device", memory], expect)
    s.flag_values("plan", base, "--global-batch", "size", 3)
    s.flag_values("plan", base, "--top", "int", 2)
    s.flag_values("plan", base, "--finalists", "int", 2)
    for extra, expect in [(["--explain"], OK), (["--bogus"], ERROR),
                          (["--global-batch", "3"], EITHER),
                          (["--interconnect", "/dev/null"], ERROR),
                          (["--interconnect", FX], ERROR),
                          (["--interconnect", "missing.json"], ERROR),
                          (["--model", "moe", "--experts", "3"], EITHER)]:
        s.add("plan", " ".join(extra), base + extra, expect)


def calibrate_cases(s):
    base = ["partita", "calibrate", "--steps", "1"]
    s.add("calibrate", "a valid calibration", base + ["--devices", "cpu:2",
                                                      "-o", "c.json"], OK)
    for devices, expect in [("", ERROR), ("cpu:0", ERROR), ("cpu:-1", ERROR),
                            ("cpu:1", EITHER), ("cpu:3", EITHER),
                            ("gpu:2", ERROR), ("cpu:99999999999999999999",
                                               ERROR),
                            ("cpu:nan", ERROR), ("cuda:2", ERROR)]:
        s.add("calibrate", "--devices %s" % (devices or "''"),
              base + ["--devices", devices], expect)
    for steps, expect in [("0", ERROR), ("-1", ERROR), ("nan", ERROR),
                          ("99999999999999999999", ERROR), ("", ERROR),
                          ("1.5", ERROR)]:
        s.add("calibrate", "--steps %s" % (steps or "''"),
              ["partita", "calibrate", "--devices", "cpu:2", "--steps",
               steps], expect)
    for target, expect in [("/dev/full", ERROR), ("adir", ERROR),
                           ("nosuchdir/c.json", ERROR), ("", ERROR)]:
        s.add("calibrate", "-o %s" % (target or "''"),
              base + ["--devices", "cpu:2", "-o", target], expect)
    s.add("calibrate", "unknown flag", base + ["--bogus"], ERROR)


def json_file_cases(s):
    """Damaged JSON where a spec, a rules table or a cluster is read."""
    # Targeted values that must be refused, then random damage.
    interconnect_bad = [
        ("a bandwidth of 0",
         json_set(INTERCONNECT, ("axes", "data", "bandwidth_GBps"), 0)),
        ("a bandwidth of -1",
         json_set(INTERCONNECT, ("axes", "data", "bandwidth_GBps"), -1)),
        ("a latency of -5",
         json_set(INTERCONNECT, ("axes", "model", "latency_us"), -5)),
        ("a bandwidth that is a string",
         json_set(INTERCONNECT, ("default", "bandwidth_GBps"), "fast")),
        ("axes that is a list", json_set(INTERCONNECT, ("axes",), [1, 2])),
        ("combine_bytes -7", json_set(INTERCONNECT, ("combine_bytes",), -7)),
        ("combine_bytes 1.5", json_set(INTERCONNECT, ("combine_bytes",),
                                       1.5)),
    ]
    commands = [
        ("compile", ["partita", "compile", FX + "/mlp.mlir",
                     "--interconnect", "spec.json"]),
        ("explain", ["partita", "explain", FX + "/mlp.mlir", "--value", "x",
                     "--interconnect", "spec.json"]),
        ("run", ["partita", "run", FX + "/mlp.mlir", "--devices", "cpu:8",
                 "--interconnect", "spec.json"]),
        ("partita-opt", ["partita-opt", FX + "/mlp.mlir",
                         "--partita-pipeline=interconnect=spec.json"]),
    ]
    s.add("compile", "--interconnect valid",
          commands[0][1], OK, files={"spec.json": json_text(INTERCONNECT)})
    docs = [(w, json_text(d), ERROR) for w, d in interconnect_bad] + \
        json_mutants(s.rng, INTERCONNECT, 14)
    for i, (what, data, expect) in enumerate(docs):
        command, argv = commands[i % len(commands)]
        s.add(command, "--interconnect %s" % what, argv, expect,
              files={"spec.json": data})
    rules_bad = [
        ("an unknown mesh axis",
         json_set(RULES, ("rules", 2, "mesh"), ["modle"])),
        ("a logical name that is a number",
         json_set(RULES, ("rules", 0, "logical"), 7)),
        ("an unknown role", json_set(RULES, ("rules", 0, "role"), "bogus")),
        ("rules that is an object", json_set(RULES, ("rules",), {"a": 1})),
        ("no rules member", {"rulez": []}),
        ("a mesh axis twice",
         json_set(RULES, ("rules", 2, "mesh"), ["model", "model"])),
    ]
    commands = [
        ("gen", ["partita", "gen", "gpt", "--rules", "rules.json"]),
        ("compile", ["partita", "compile", FX + "/gpt1.mlir", "--rules",
                     "rules.json"]),
        ("train", ["partita", "train", "--model", "gpt", "--layers", "1",
                   "--steps", "1", "--devices", "cpu:2", "--mesh",
                   "data=1,model=2", "--rules", "rules.json", "--output",
                   "out"]),
        ("show", ["partita", "show", FX + "/gpt1.mlir", "--value", "arg0",
                  "--rules", "rules.json"]),
    ]
    s.add("gen", "--rules valid", commands[0][1], OK,
          files={"rules.json": json_text(RULES)})
    docs = [(w, json_text(d), ERROR) for w, d in rules_bad] + \
        json_mutants(s.rng, RULES, 14)
    for i, (what, data, expect) in enumerate(docs):
        command, argv = commands[i % len(commands)]
        s.add(command, "--rules %s" % what, argv, expect,
              files={"rules.json": data})
    cluster_bad = [
        ("devices_per_node 0", json_set(CLUSTER, ("devices_per_node",), 0)),
        ("devices_per_node -2", json_set(CLUSTER, ("devices_per_node",), -2)),
        ("flops_per_second 0", json_set(CLUSTER, ("flops_per_second",), 0)),
        ("memory_bytes -1", json_set(CLUSTER, ("memory_bytes",), -1)),
        ("a link without a latency",
         json_set(CLUSTER, ("intra_node", "latency_us"), _DELETE)),
        ("an unknown field", json_set(CLUSTER, ("colour",), "blue")),
        ("a calibrated collective of group 0",
         json_set(CLUSTER, ("calibration", "collectives", 0, "group"), 0)),
        ("a calibrated collective of an unknown kind",
         json_set(CLUSTER, ("calibration", "collectives", 0, "kind"),
                  "all_party")),
        ("a calibrated einsum rate of -1",
         json_set(CLUSTER, ("calibration", "einsum_flops_per_second"), -1)),
        ("a calibrated bandwidth of 0",
         json_set(CLUSTER, ("calibration", "collectives", 1,
                            "bandwidth_GBps"), 0)),
    ]
    argv = ["partita", "plan", "--model", "gpt", "--layers", "1", "--devices",
            "4", "--finalists", "2", "--interconnect", "cluster.json"]
    docs = [(w, json_text(d), ERROR) for w, d in cluster_bad] + \
        json_mutants(s.rng, CLUSTER, 16)
    for what, data, expect in docs:
        s.add("plan", "cluster %s" % what, argv, expect,
              files={"cluster.json": data})


def _damaged_copy(src, dst, file_name, damage):
    def prepare(case_dir, fx):
        shutil.copytree(fx / src, case_dir / dst)
        damage(case_dir / dst / file_name)
    return prepare


def _json_damage(mutate):
    def damage(path):
        doc = json.loads(path.read_text())
        result = mutate(doc)
        path.write_bytes(result if isinstance(result, bytes)
                         else json_text(result))
    return damage


def _json_random_damage(seed):
    """A random member of a JSON file replaced or deleted, at prepare time
    (the file exists only then); the seed keeps it deterministic."""
    def mutate(doc):
        rng = random.Random(seed)
        paths = [p for p, _ in json_paths(doc) if p]
        path = rng.choice(paths)
        if rng.random() < 0.3:
            return json_set(doc, path, _DELETE)
        return json_set(doc, path, rng.choice(WEIRD_JSON_VALUES))
    return mutate


def _key(key, value):
    def mutate(doc):
        return json_set(doc, key if isinstance(key, tuple) else (key,), value)
    return mutate


INDEX_DAMAGE = [
    ("format 'npy'", _key("format", "npy"), ERROR),
    ("version 2", _key("version", 2), ERROR),
    ("dtype f64", _key("dtype", "f64"), ERROR),
    ("dtype bogus", _key("dtype", "q7"), ERROR),
    ("shape [5, 8]", _key("shape", [5, 8]), ERROR),
    ("shape [-5, 7]", _key("shape", [-5, 7]), ERROR),
    ("shape [99999999999999999999, 7]",
     _key("shape", [99999999999999999999, 7]), ERROR),
    ("a mesh axis of size 0", _key(("mesh", "axes", 0, "size"), 0), ERROR),
    ("a mesh axis of size 2^62",
     _key(("mesh", "axes", 0, "size"), 1 << 62), ERROR),
    ("device ids repeated", _key(("mesh", "device_ids"), [0, 0, 1, 1]),
     ERROR),
    ("device ids too few", _key(("mesh", "device_ids"), [0, 1]), ERROR),
    ("a device id -1", _key(("mesh", "device_ids"), [-1, 2, 1, 0]), ERROR),
    ("dim_axes naming an unknown axis",
     _key("dim_axes", [["nosuchaxis"], []]), ERROR),
    ("dim_axes for one dimension", _key("dim_axes", [["data"]]), ERROR),
    ("dim_axes using an axis twice",
     _key("dim_axes", [["data"], ["data"]]), ERROR),
    ("a shard's file '../x.npy'", _key(("shards", 0, "file"), "../x.npy"),
     ERROR),
    ("a shard's file '/dev/zero'", _key(("shards", 0, "file"), "/dev/zero"),
     ERROR),
    ("a shard's file missing", _key(("shards", 0, "file"), "nope.npy"),
     ERROR),
    ("a shard's ranges changed",
     _key(("shards", 1, "ranges"), [[2, 4], [0, 4]]), ERROR),
    ("a shard's crc32c changed", _key(("shards", 0, "crc32c"), 1), ERROR),
    ("a shard's crc32c -1", _key(("shards", 0, "crc32c"), -1), ERROR),
    ("a shard's crc32c removed", _key(("shards", 0, "crc32c"), _DELETE), OK),
    ("shards empty", _key("shards", []), ERROR),
    ("a shard listed twice",
     lambda d: dict(d, shards=d["shards"] + d["shards"][:1]), ERROR),
    ("the two shards' files swapped",
     lambda d: json_set(json_set(d, ("shards", 0, "file"),
                                 d["shards"][1]["file"]),
                        ("shards", 1, "file"), d["shards"][0]["file"]),
     ERROR),
    ("partition_spec changed (for people only)",
     _key("partition_spec", "P(None)"), EITHER),
    ("truncated", lambda d: json_text(d)[:200], ERROR),
    ("empty", lambda d: b"", ERROR),
]


def exec_cases(s):
    ex = "partita-exec"
    # layout
    base = [ex, "layout", "--mesh", "data=2,model=4", "--spec",
            'P("data", None)', "--shape", "8,6"]
    s.add("exec layout", "a valid layout", base, OK)
    for spec, expect in [("", ERROR), ("P(", ERROR), ('P("data", None',
                                                      ERROR),
                         ('P("nope", None)', ERROR),
                         ('P("data", "data")', ERROR),
                         ('P(("data", "model"), None)', OK),
                         ('Q("data", None)', ERROR),
                         ('P("data",)', EITHER), ("P()", OK),
                         ('P("data", None, None)', ERROR),
                         ("P(" * 5000 + ")" * 5000, ERROR),
                         ('P("d\u00e4ta", None)', ERROR),
                         ('P("data", None)' + "x", ERROR),
                         ("P(None, None)", OK), ('P("' + LONG_TEXT + '")',
                                                 ERROR)]:
        s.add("exec layout", "--spec %s" % _short(spec),
              base[:5] + [spec] + base[6:], expect)
    for shape, expect in [("", ERROR), ("-1", ERROR), ("8,,6", ERROR),
                          ("0,0", EITHER), ("99999999999999999999,6", ERROR),
                          ("1e309,6", ERROR), ("nan,6", ERROR),
                          ("3,6", EITHER), ("8", ERROR), ("8,6,", ERROR),
                          ("4611686018427387904,4", ERROR)]:
        s.add("exec layout", "--shape %s" % (shape or "''"),
              base[:7] + [shape], expect)
    for ids, expect in [("", ERROR), ("0,0,1,2,3,4,5,6", ERROR),
                        ("0,1", ERROR), ("-1,1,2,3,4,5,6,7", ERROR),
                        ("0,1,2,3,4,5,6,8", EITHER),
                        ("0,1,2,3,4,5,6,99999999999999999999", ERROR),
                        ("7,6,5,4,3,2,1,0", OK)]:
        s.add("exec layout", "--device-ids %s" % (ids or "''"),
              base + ["--device-ids", ids], expect)
    for mesh, expect in s.sample(BAD_MESHES, 5):
        s.add("exec layout", "--mesh %s" % _short(mesh),
              [ex, "layout", "--mesh", mesh, "--spec", "P(None, None)",
               "--shape", "8,6"], expect)
    s.add("exec layout", "no options", [ex, "layout"], ERROR)
    # shard
    a = FX + "/in/a.npy"
    shard = [ex, "shard", a, "--mesh", "data=2", "--spec", 'P("data", None)']
    s.add("exec shard", "a valid shard", shard + ["-o", "out"], OK)
    for target, expect in [("/dev/null", ERROR), ("afile", ERROR),
                           ("full", ERROR), ("", ERROR)]:
        s.add("exec shard", "-o %s" % (target or "''"),
              shard + ["-o", target], expect,
              files={"full/keep.txt": b"do not delete"})
    s.add("exec shard", "-o over another sharded array", shard + ["-o", "arr"],
          OK, prepare=_damaged_copy("sharded4", "arr", "index.json",
                                    lambda p: None))
    s.add("exec shard", "no -o", shard, ERROR)
    s.add("exec shard", "a spec for 3 dimensions",
          shard[:6] + ['P("data", None, None)', "-o", "out"], ERROR)
    s.add("exec shard", "a non-dividing mesh",
          shard[:4] + ["data=3"] + shard[5:] + ["-o", "out"], EITHER)
    s.add("exec shard", "an input that is a directory",
          [ex, "shard", FX, "--mesh", "data=2", "--spec", "P()", "-o", "out"],
          ERROR)
    # info, assemble and run --inputs on a damaged sharded array
    for i, (what, mutate, expect) in enumerate(INDEX_DAMAGE):
        runner = i % 3
        prepare = _damaged_copy("sharded4", "arr", "index.json",
                                _json_damage(mutate))
        if runner == 0:
            s.add("exec info", "index.json %s" % what,
                  [ex, "info", "arr"], expect, prepare=prepare)
        elif runner == 1:
            s.add("exec assemble", "index.json %s" % what,
                  [ex, "assemble", "arr", "-o", "out.npy"], expect,
                  prepare=prepare)
        else:
            prepare = _damaged_copy("sharded", "arr", "index.json",
                                    _json_damage(mutate))
            s.add("run", "sharded input, index.json %s" % what,
                  ["partita", "run", FX + "/add.mlir", "--devices", "cpu:2",
                   "--inputs", "arr," + FX + "/in/b.npy"], expect,
                  prepare=prepare)
    for i in range(6):
        command = ["exec info", "exec assemble"][i % 2]
        argv = [ex, "info", "arr"] if i % 2 == 0 else \
            [ex, "assemble", "arr", "-o", "out.npy"]
        s.add(command, "index.json random member damage #%d" % i, argv,
              EITHER, prepare=_damaged_copy(
                  "sharded4", "arr", "index.json",
                  _json_damage(_json_random_damage(SEED + 100 + i))))
    for what, damage in [
            ("a shard truncated",
             lambda p: p.write_bytes(p.read_bytes()[:-9])),
            ("a shard's byte flipped", lambda p: _flip_byte(p)),
            ("a shard replaced by another's",
             lambda p: p.write_bytes((p.parent / "shard_1_1.npy")
                                     .read_bytes())),
            ("a shard removed", lambda p: p.unlink())]:
        for command, argv in [("exec assemble", [ex, "assemble", "arr",
                                                 "-o", "out.npy"]),
                              ("exec info", [ex, "info", "arr"])]:
            s.add(command, what, argv, ERROR,
                  prepare=_damaged_copy("sharded4", "arr", "shard_0_0.npy",
                                        damage))
    assemble = [ex, "assemble", FX + "/sharded4"]
    for extra, expect in [(["-o", "/dev/full"], ERROR),
                          (["-o", "adir"], ERROR),
                          (["-o", "-"], OK), ([], ERROR),
                          (["-o", "nosuchdir/x.npy"], ERROR)]:
        s.add("exec assemble", " ".join(extra) or "no -o", assemble + extra,
              expect)
    for target, expect in [(FX + "/in", ERROR), ("/dev/null", ERROR),
                           ("missing", ERROR), (FX + "/fifo", ERROR),
                           (FX + "/sharded4", OK), ("", ERROR)]:
        s.add("exec info", "%s" % (target or "''"), [ex, "info", target],
              expect)
    # describe and run on damaged Executables
    exe_damage = [
        ("empty", lambda b, r: b"", ERROR),
        ("only the magic", lambda b, r: b[:8], ERROR),
        ("bad magic", lambda b, r: b"X" + b[1:], ERROR),
        ("version 99", lambda b, r: b[:8] + struct.pack("<I", 99) + b[12:],
         ERROR),
        ("a program as text", lambda b, r: ADD_PROGRAM.encode(), ERROR),
        ("a byte flipped, checksum stale",
         lambda b, r: _flip(b, r.randrange(12, len(b) - 8)), ERROR),
        ("the checksum flipped", lambda b, r: _flip(b, len(b) - 3), ERROR),
    ]
    for i in range(2):
        exe_damage.append(("truncated", lambda b, r: b[:r.randrange(
            12, len(b) - 1)], ERROR))
    for i in range(10):
        exe_damage.append(("a byte flipped and resealed",
                           lambda b, r: reseal(_flip(b, r.randrange(
                               12, len(b) - 8))), EITHER))
    for i in range(4):
        exe_damage.append(("a 32-bit field set to 0xffffffff, resealed",
                           lambda b, r: reseal(_poke(b, r, 0xFFFFFFFF)),
                           EITHER))
    exe_damage.append(("garbage appended, resealed",
                       lambda b, r: reseal(b[:-8] + b"\xab" * 64 + b[-8:]),
                       EITHER))
    for i, (what, damage, expect) in enumerate(exe_damage):
        rng = random.Random(SEED + 200 + i)
        src = ["mlp.exe", "add.exe"][i % 2]
        use_run = i % 3 == 2
        prepare = _damaged_exe(src, damage, rng.randrange(1 << 30))
        if use_run:
            s.add("exec run", "%s: %s" % (src, what),
                  [ex, "run", "prog.exe"], expect, prepare=prepare,
                  timeout=20)
        else:
            s.add("exec describe", "%s: %s" % (src, what),
                  [ex, "describe", "prog.exe"], expect, prepare=prepare)
    for target, expect in [(FX, ERROR), ("/dev/null", ERROR),
                           (FX + "/fifo", ERROR), ("missing.exe", ERROR),
                           (FX + "/mlp.exe", OK)]:
        s.add("exec describe", target, [ex, "describe", target], expect)
    exe = FX + "/add.exe"
    erun = [ex, "run", exe]
    s.add("exec run", "valid", erun + ["--outputs", "out"], OK)
    for extra, expect in [
            (["--devices", "cpu:3"], ERROR), (["--devices", "cuda:2"], ERROR),
            (["--devices", "cpu:0"], ERROR), (["--devices", ""], ERROR),
            (["--repeat", "0"], ERROR), (["--repeat", "-1"], ERROR),
            (["--repeat", "99999999999999999999"], ERROR),
            (["--repeat", "3"], OK), (["--seed", "-1"], ERROR),
            (["--seed", "nan"], ERROR),
            (["--inputs", FX + "/in/a.npy"], ERROR),
            (["--inputs", FX + "/in/a.npy," + FX + "/in/b.npy"], OK),
            (["--inputs", FX + "/sharded4," + FX + "/in/b.npy"], ERROR),
            (["--outputs", "/dev/full"], ERROR),
            (["--outputs", "afile"], ERROR),
            (["--trace", "/dev/full"], ERROR),
            (["--expect", "nosuchdir"], ERROR),
            (["--tf32"], EITHER), (["--staging"], EITHER),
            (["--timeout", "-1", "--distributed"], ERROR),
            (["--bogus"], ERROR)]:
        s.add("exec run", " ".join(_short(x) for x in extra), erun + extra,
              expect)
    # train on a pipelined step
    etrain = [ex, "train", "pp", "--steps", "2"]
    s.add("exec train", "valid", [ex, "train", FX + "/pp", "--steps", "2",
                                  "--losses", "l.csv"], OK)
    step_damage = [
        ("version 2", _key("version", 2), ERROR),
        ("ranks 0", _key("ranks", 0), ERROR),
        ("ranks 3", _key("ranks", 3), ERROR),
        ("ranks 99999999999999999999", _key("ranks", 99999999999999999999),
         ERROR),
        ("micro_batches 0", _key("micro_batches", 0), ERROR),
        ("micro_batches -1", _key("micro_batches", -1), ERROR),
        ("devices_per_rank 0", _key("devices_per_rank", 0), ERROR),
        ("stages []", _key("stages", []), ERROR),
        ("schedule 'bogus'", _key("schedule", "bogus"), ERROR),
        ("loss_output 99", _key("loss_output", 99), ERROR),
        ("a data shape [8, -16]", _key(("data", 0, "shape"), [8, -16]),
         ERROR),
        ("a stage file '../../etc/passwd'",
         _key(("stages", 0, "forward", "file"), "../../etc/passwd"), ERROR),
        ("a stage file missing",
         _key(("stages", 0, "forward", "file"), "nope.exe"), ERROR),
        ("a stage's param index 9999",
         _key(("stages", 0, "params", 0), 9999), ERROR),
        ("a stage input of kind 'bogus'",
         _key(("stages", 0, "forward", "inputs", 0, "kind"), "bogus"),
         ERROR),
        ("truncated", lambda d: json_text(d)[:400], ERROR),
        ("empty", lambda d: b"", ERROR),
    ]
    for what, mutate, expect in step_damage:
        s.add("exec train", "step.json %s" % what, etrain, expect,
              prepare=_damaged_copy("pp", "pp", "step.json",
                                    _json_damage(mutate)))
    for i in range(6):
        s.add("exec train", "step.json random member damage #%d" % i, etrain,
              EITHER, prepare=_damaged_copy(
                  "pp", "pp", "step.json",
                  _json_damage(_json_random_damage(SEED + 300 + i))))
    s.add("exec train", "a stage Executable truncated", etrain, ERROR,
          prepare=_damaged_copy("pp", "pp", "stage1.backward.exe",
                                lambda p: p.write_bytes(p.read_bytes()[:64])))
    s.add("exec train", "a stage Executable swapped for another", etrain,
          ERROR, prepare=_damaged_copy(
              "pp", "pp", "stage1.forward.exe",
              lambda p: p.write_bytes((p.parent / "stage0.forward.exe")
                                      .read_bytes())))
    s.add("exec train", "step.json removed", etrain, ERROR,
          prepare=_damaged_copy("pp", "pp", "step.json", lambda p: p.unlink()))
    pp = [ex, "train", FX + "/pp"]
    for extra, expect in [
            (["--devices", "cpu:3"], ERROR), (["--devices", "cpu:0"], ERROR),
            (["--devices", "gpu:2"], ERROR), (["--steps", "0"], EITHER),
            (["--steps", "-1"], ERROR),
            (["--steps", "99999999999999999999"], ERROR),
            (["--seed", "1e309"], ERROR),
            (["--losses", "/dev/full"], ERROR),
            (["--trace", "/dev/full"], ERROR),
            (["--expect", "missing.csv"], ERROR),
            (["--expect", "bad.csv"], ERROR),
            (["--expect", "empty.csv"], ERROR),
            (["--tolerance", "nan", "--expect", FX + "/pp-losses.csv"],
             ERROR),
            (["--tolerance", "-1", "--expect", FX + "/pp-losses.csv"],
             ERROR),
            (["--expect", FX + "/pp-losses.csv", "--steps", "2"], OK),
            (["--expect", FX + "/pp-losses.csv", "--steps", "2", "--seed",
              "5"], ERROR),
            ([FX + "/pp"], ERROR)]:
        s.add("exec train", " ".join(_short(x) for x in extra), pp + extra,
              expect, files={"bad.csv": b"step,loss\n1,abc\n2,\n",
                             "empty.csv": b""})
    s.add("exec train", "a directory that is not a step", [ex, "train", FX],
          ERROR)
    for argv, expect in [([ex], ERROR), ([ex, "bogus"], ERROR),
                         ([ex, ""], ERROR), ([ex, "--version"], OK),
                         ([ex, "info"], ERROR), ([ex, "run"], ERROR),
                         ([ex, "describe", "a", "b"], ERROR)]:
        s.add("partita-exec", " ".join(argv[1:]) or "no command", argv,
              expect)


def _flip(data, at):
    data = bytearray(data)
    data[at] ^= 0xFF
    return bytes(data)


def _poke(data, rng, value):
    data = bytearray(data)
    at = rng.randrange(12, len(data) - 12)
    data[at:at + 4] = struct.pack("<I", value)
    return bytes(data)


def _damaged_exe(src, damage, seed):
    def prepare(case_dir, fx):
        data = (fx / src).read_bytes()
        (case_dir / "prog.exe").write_bytes(damage(data, random.Random(seed)))
    return prepare


def opt_cases(s):
    mlp = FX + "/mlp.mlir"
    opt = "partita-opt"
    for extra, expect in [
            (["--partita-pipeline"], OK),
            (["--partita-pipeline=stage=bogus"], ERROR),
            (["--partita-pipeline=stage="], ERROR),
            (["--partita-pipeline=mesh=data=0"], ERROR),
            (["--partita-pipeline=mesh=nosuchaxis=8"], ERROR),
            (["--partita-pipeline=combine-bytes=abc"], ERROR),
            (["--partita-pipeline=combine-bytes=99999999999999999999"],
             ERROR),
            (["--partita-pipeline=rules=nosuchpreset"], ERROR),
            (["--partita-pipeline=train=adamw micro-batches=0"], ERROR),
            (["--partita-pipeline=train=adamw micro-batches=3"], ERROR),
            (["--partita-pipeline=train=adamw lr=nan"], ERROR),
            (["--partita-pipeline=max-padding=-1"], ERROR),
            (["--partita-pipeline=interconnect=/dev/null"], ERROR),
            (["--partita-pipeline=bogus=1"], ERROR),
            (["--partita-set-mesh=mesh=data=0"], ERROR),
            (["--partita-set-mesh=mesh="], ERROR),
            (["--partita-propagate=report-conflicts=maybe"], ERROR),
            (["--partita-partition"], EITHER),
            (["--partita-train-step"], OK),
            (["--partita-train-step", "--partita-train-step"], EITHER),
            (["--partita-grad", "--partita-grad"], EITHER),
            (["--partita-grad=wrt=99"], ERROR),
            (["--partita-combine-collectives"], EITHER),
            (["--partita-overlap-collectives", "--partita-partition"], EITHER),
            (["--partita-test-shuffle=seed=99999999999999999999"], ERROR),
            (["--partita-apply-rules=rules=/dev/null"], ERROR),
            (["--pass-pipeline=builtin.module(partita-bogus)"], ERROR),
            (["--pass-pipeline=" + "builtin.module(" * 200], ERROR),
            (["--bogus"], ERROR),
            (["-o", "/dev/full", "--partita-pipeline"], ERROR),
            (["-o", "adir", "--partita-pipeline"], ERROR)]:
        s.add("partita-opt", " ".join(_short(x) for x in extra),
              [opt, mlp] + extra, expect)
    for target, expect in [("missing.mlir", ERROR), (FX, ERROR),
                           ("/dev/null", EITHER), (FX + "/mlp.exe", ERROR)]:
        s.add("partita-opt", "input %s" % target,
              [opt, target, "--partita-pipeline"], expect)
    s.add("partita-opt", "the shard-map program, replicate-around-manual",
          [opt, FX + "/shard-map.mlir", "--partita-replicate-around-manual"],
          OK)
    s.add("partita-opt", "a StableHLO-looking program",
          [opt, "-", "--partita-pipeline"], ERROR,
          stdin=b'"stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>)'
                b' -> tensor<2xf32>\n')


PY_HARNESS = '''\
import os, sys, pathlib
import numpy as np
import partita
FX = pathlib.Path(os.environ["HOSTILE_FX"])
def src(name):
    return (FX / name).read_text()
try:
{body}
except (partita.PartitaError, TypeError, ValueError, OSError) as e:
    print("error: %s: %s" % (type(e).__name__, str(e)[-2000:]),
          file=sys.stderr)
    print("HOSTILE-DONE")
    sys.exit(1)
print("HOSTILE-DONE")
'''


def python_cases(s):
    def py(what, code, expect, **extra):
        s.add("python", what, ["python"], expect, code=code, **extra)

    mlp = "m = partita.compile(src('mlp.mlir'))\n"
    py("compile and run mlp", mlp + "print(m)\nprint(m.run()[0])", OK)
    py("compile run_tool help", "print(partita.run_tool('--help')[:50])", OK)
    for arg, expect in [
            ("None", ERROR), ("123", ERROR), ("b'bytes'", EITHER),
            ("''", EITHER), ("'\\x00'", ERROR),
            ("pathlib.Path('/nonexistent.mlir')", ERROR),
            ("FX", ERROR), ("pathlib.Path('/dev/null')", EITHER),
            ("src('mlp.mlir').encode()", EITHER),
            ("src('mlp.mlir') * 2", ERROR),
            ("'(' * 100000", ERROR), ("'\\ud800'", EITHER),
            ("[src('mlp.mlir')]", ERROR)]:
        py("compile(%s)" % arg, "m = partita.compile(%s)\nprint(m)" % arg,
           expect)
    for kwargs, expect in [
            ("mesh={'data': -1}", ERROR), ("mesh={'data': 'x'}", ERROR),
            ("mesh={'data': 2 ** 70}", ERROR), ("mesh={'': 8}", ERROR),
            ("mesh={'data': 2.0, 'model': 4}", EITHER),
            ("mesh={'data': True, 'model': 8}", EITHER), ("mesh={}", ERROR),
            ("mesh='data=0'", ERROR), ("mesh=123", ERROR),
            ("mesh=['data', 8]", ERROR), ("mesh={'data': float('nan')}",
                                          ERROR),
            ("mesh={'data': 2, 'model': 4, 'x\\x00': 1}", ERROR),
            ("stage='bogus'", ERROR), ("stage=None", ERROR),
            ("stage='executable'", ERROR), ("rules='bogus'", ERROR),
            ("rules=123", ERROR), ("rules=str(FX)", ERROR),
            ("interconnect='/nonexistent'", ERROR),
            ("interconnect=str(FX)", ERROR),
            ("interconnect=str(FX / 'interconnect.json')", OK),
            ("combine_bytes=-1", EITHER), ("combine_bytes=2 ** 64", ERROR),
            ("combine_bytes=float('nan')", ERROR),
            ("combine_bytes='abc'", ERROR), ("combine_bytes=1.5", EITHER),
            ("strict='yes'", EITHER), ("fusion=None", EITHER),
            ("overlap='no'", EITHER), ("unknown_option=1", ERROR)]:
        py("compile(mlp, %s)" % kwargs,
           "m = partita.compile(src('mlp.mlir'), %s)\nprint(m)" % kwargs,
           expect)
    for call, expect in [
            ("m.run(devices='cpu:0')", ERROR), ("m.run(devices=0)", ERROR),
            ("m.run(devices=-1)", ERROR), ("m.run(devices=2 ** 70)", ERROR),
            ("m.run(devices='gpu:8')", ERROR), ("m.run(devices=3.5)", ERROR),
            ("m.run(devices='cpu:3')", ERROR), ("m.run(devices=None)", OK),
            ("m.run(devices='cpu:8', check=True)", OK),
            ("m.run(inputs=[])", ERROR),
            ("m.run(inputs=[np.zeros((32, 64), np.float32)])", ERROR),
            ("m.run(inputs=[np.zeros((2, 2), np.float32)] * 6)", ERROR),
            ("m.run(inputs=[np.zeros(s, np.float64) for s in SHAPES])",
             EITHER),
            ("m.run(inputs=[np.zeros(s, np.int32) for s in SHAPES])", ERROR),
            ("m.run(inputs=[np.zeros(s, object) for s in SHAPES])", ERROR),
            ("m.run(inputs=[np.full(s, np.nan, np.float32) "
             "for s in SHAPES])", OK),
            ("m.run(inputs=[np.zeros(s, np.float32).T for s in SHAPES])",
             ERROR),
            ("m.run(inputs=[np.zeros(s, np.float32) for s in SHAPES][::-1])",
             ERROR),
            ("m.run(inputs='abc')", ERROR),
            ("m.run(inputs=[None] * 6)", ERROR),
            ("m.run(inputs=np.zeros(6))", ERROR),
            ("m.run(inputs=(np.zeros(s, np.float32) for s in SHAPES))",
             EITHER),
            ("m.run(inputs=[np.float32(1)] * 6)", ERROR),
            ("m.run(seed=-1)", ERROR), ("m.run(seed=2 ** 70)", ERROR),
            ("m.run(seed='x')", ERROR), ("m.run(seed=1.5)", EITHER),
            ("m.run(check='yes')", EITHER),
            ("m.run(trace='/dev/full')", ERROR),
            ("m.run(trace='adir')", ERROR), ("m.run(trace='')", ERROR),
            ("m.explain('nope')", ERROR), ("m.explain('')", EITHER),
            ("m.explain(123)", EITHER), ("m.explain('\\x00')", ERROR),
            ("m.explain('x' * 100000)", ERROR), ("m.show(None)", ERROR),
            ("m.show('nope')", ERROR), ("m.show('x')", OK),
            ("m.html('/dev/full')", ERROR), ("m.html('adir')", ERROR),
            ("m.html('r.html')", OK), ("m.save('/dev/full')", ERROR),
            ("m.save('')", ERROR), ("m.save('out.exe')", OK),
            ("m.save('adir')", ERROR)]:
        shapes = "SHAPES = [(32, 64), (32, 64), (4, 64, 256), (4, 256), " \
                 "(4, 256, 64), (4, 64)]\n"
        py(call, mlp + shapes + "r = %s\nprint(type(r))" % call, expect)
    py("run a module compiled to 'verified'",
       "m = partita.compile(src('mlp.mlir'), stage='verified')\n"
       "print(m.run()[0])", EITHER)
    py("a failed compile, then a good one",
       "try:\n    partita.compile('garbage')\nexcept partita.PartitaError:\n"
       "    pass\nprint(partita.compile(src('mlp.mlir')).run()[0])", OK)
    py("run_tool 50 failures, then a success",
       "for i in range(50):\n    try:\n        partita.run_tool('gen', "
       "'gpt', '--layers', '-1')\n    except partita.PartitaError:\n"
       "        pass\nprint(len(partita.run_tool('gen', 'mlp')))", OK)
    py("run_tool from two threads",
       "import threading\nout = []\ndef work():\n"
       "    out.append(partita.run_tool('gen', 'gpt', '--layers', '1'))\n"
       "ts = [threading.Thread(target=work) for _ in range(4)]\n"
       "[t.start() for t in ts]\n[t.join() for t in ts]\n"
       "assert len(set(out)) == 1, 'threads saw different output'", OK)
    for args, expect in [
            ("", ERROR), ("'bogus'", ERROR), ("123", ERROR),
            ("None", ERROR), ("'compile', '\\x00'", ERROR),
            ("'gen', 'gpt', '--layers'", ERROR),
            ("'compile', str(FX / 'mlp.mlir'), '-o', '/dev/full'", ERROR),
            ("'show', '--schedule', '1f1b', '--pp', '0', '--micro-batches', "
             "'4'", ERROR),
            ("'plan', '--model', 'gpt', '--devices', '0'", ERROR),
            ("'calibrate', '--devices', 'cpu:0'", ERROR),
            ("'checkpoint', 'info', '/nonexistent'", ERROR),
            ("'x' * 100000", ERROR),
            ("'run', str(FX / 'mlp.mlir'), '--devices', 'cpu:8', "
             "'--trace', '/dev/full'", ERROR),
            ("'train', '--model', 'gpt', '--steps', '99999999999999999999'",
             ERROR),
            ("'train', '--model', 'gpt', '--layers', '1', '--steps', '1', "
             "'--devices', 'cpu:2', '--output', 'out'", OK),
            ("'compile', '-'", EITHER),
            ("'gen', 'gpt', '--layers', '1', '-o', '/dev/full'", ERROR),
            ("*['gen', 'gpt'] * 1000", ERROR)]:
        py("run_tool(%s)" % _short(args),
           "print(partita.run_tool(%s)[:100])" % args, expect)


def path_cases(s):
    """Inputs that are directories, missing files and devices. (A FIFO is
    tried only where the documentation promises to refuse one: arrays,
    shards and Executables; a program or a JSON file may come through a
    pipe, and a pipe without a writer blocks, as it does for cat.)"""
    extra = {"show": ["--value", "x"], "run": ["--devices", "cpu:8"]}
    for command in ("compile", "explain", "show", "run", "import"):
        for target in (FX, "missing.mlir", "/dev/null", FX + "/mlp.exe",
                       FX + "/in/a.npy", ""):
            if target == "/dev/null" and command in ("compile", "import",
                                                     "explain"):
                expect = EITHER         # an empty module
            elif target.endswith(".exe") and command == "run":
                expect = EITHER         # run takes an Executable too
            else:
                expect = ERROR
            s.add(command, "input %s" % (target or "''"),
                  ["partita", command, target] + extra.get(command, []),
                  expect)
    for command, argv in [
            ("compile", ["partita", "compile", FX + "/mlp.mlir", "-o",
                         "/dev/full"]),
            ("import", ["partita", "import", FX + "/mlp.mlir", "-o",
                        "/dev/full"]),
            ("compile", ["partita", "compile", "/dev/zero"]),
            ("explain", ["partita", "explain", FX + "/mlp.mlir", "--value",
                         "x", "--rules", "/dev/zero"]),
            ("gen", ["partita", "gen", "gpt", "--rules", "/dev/zero"]),
            ("plan", ["partita", "plan", "--model", "gpt", "--devices", "4",
                      "--interconnect", "/dev/zero"]),
            ("run", ["partita", "run", FX + "/add.mlir", "--devices", "cpu:2",
                     "--inputs", "/dev/zero," + FX + "/in/b.npy"]),
            ("exec info", ["partita-exec", "info", "/dev/zero"]),
            ("train", ["partita", "train", "--model", "gpt", "--layers", "1",
                       "--steps", "1", "--devices", "cpu:2", "--output", "o",
                       "--data", "/dev/zero"])]:
        s.add(command, "an unusable file: %s" % " ".join(argv[-2:]), argv,
              ERROR)
    for argv, expect in [(["partita"], ERROR), (["partita", ""], ERROR),
                         (["partita", "--version"], OK),
                         (["partita", "--help", "bogus"], EITHER),
                         (["partita", "bogus"], ERROR),
                         (["partita", "-"], ERROR),
                         (["partita", "gen", "--help"], OK),
                         (["partita", LONG_TEXT], ERROR)]:
        s.add("partita", " ".join(_short(a) for a in argv[1:]) or
              "no command", argv, expect)


# --------------------------------------------------------------------------
# Fixtures


def build_fixtures(fx, tools):
    """Everything the cases read: the examples, inputs, an Executable, a
    pipelined step, a checkpoint, sharded arrays, valid JSON files."""
    fx.mkdir(parents=True)
    for name in PROGRAMS:
        shutil.copy(EXAMPLES / name, fx / name)
    (fx / "add.mlir").write_text(ADD_PROGRAM)
    (fx / "in").mkdir()
    (fx / "in" / "a.npy").write_bytes(npy_bytes())
    (fx / "in" / "b.npy").write_bytes(
        npy_bytes(data=struct.pack("<12f", *[1.0] * 12)))
    (fx / "in" / "m.npy").write_bytes(npy_bytes(shape=(5, 7)))
    (fx / "tokens.bin").write_bytes(
        int32_tokens([(3 * i + 1) % 128 for i in range(4000)]))
    (fx / "interconnect.json").write_bytes(json_text(INTERCONNECT))
    (fx / "rules.json").write_bytes(json_text(RULES))
    (fx / "cluster.json").write_bytes(json_text(CLUSTER))
    os.mkfifo(fx / "fifo")
    p, ex = tools["partita"], tools["partita-exec"]
    steps = [
        [p, "gen", "gpt", "--layers", "1", "-o", fx / "gpt1.mlir"],
        [p, "compile", fx / "mlp.mlir", "--stage", "executable", "-o",
         fx / "mlp.exe"],
        [p, "compile", fx / "add.mlir", "--stage", "executable", "-o",
         fx / "add.exe"],
        [p, "gen", "gpt", "--layers", "2", "--mesh", "pipe=2,data=1", "-o",
         fx / "gpt-pp.mlir"],
        [p, "compile", fx / "gpt-pp.mlir", "--train", "--pp", "2", "--rules",
         "dp", "-o", fx / "pp"],
        [ex, "train", fx / "pp", "--steps", "2", "--losses",
         fx / "pp-losses.csv"],
        [p, "train", "--model", "gpt", "--layers", "1", "--steps", "2",
         "--checkpoint-dir", fx / "ckpt", "--output", fx / "train-out"],
        [ex, "shard", fx / "in" / "a.npy", "--mesh", "data=2", "--spec",
         'P("data", None)', "-o", fx / "sharded"],
        [ex, "shard", fx / "in" / "m.npy", "--mesh", "data=2,model=2",
         "--spec", 'P("data", "model")', "--device-ids", "3,2,1,0", "-o",
         fx / "sharded4"],
    ]
    for argv in steps:
        argv = [str(a) for a in argv]
        for attempt in range(10):
            try:
                done = subprocess.run(argv, capture_output=True, text=True,
                                      timeout=120, stdin=subprocess.DEVNULL)
            except OSError as e:
                if e.errno in (errno.ETXTBSY, errno.ENOENT) and attempt < 9:
                    time.sleep(1)
                    continue
                raise
            if done.returncode != 0 and BUSY.search(done.stderr) and \
                    attempt < 9:
                time.sleep(1)
                continue
            break
        if done.returncode != 0:
            sys.exit("hostile.py: making a fixture failed: %s\n%s" %
                     (shlex.join(argv), done.stderr[-2000:]))


# --------------------------------------------------------------------------
# Running and judging


BUSY = re.compile(r"Text file busy|error while loading shared libraries|"
                  r"cannot open shared object file")
ABORT = re.compile(r"LLVM ERROR|terminate called|Assertion|Aborted|"
                   r"Segmentation fault|[Ss]tack dump|PLEASE submit a bug|"
                   r"AddressSanitizer|UndefinedBehaviorSanitizer|"
                   r"runtime error:|double free|corrupted size")
ERROR_LINE = re.compile(r"^(?:\S[^:\n]*:\d+:\d+: |[\w./-]+: )?error: ", re.M)
CATEGORIES = ["ok", "ok-error", "silent", "signal", "abort", "hang",
              "odd-error", "failed"]
BAD = ("signal", "abort", "hang", "silent")


def snapshot(directory):
    """Size and modification time of every file under directory."""
    return {str(p.relative_to(directory)): (p.stat().st_size,
                                            p.stat().st_mtime_ns)
            for p in directory.rglob("*") if p.is_file()}


def limit_resources():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def resolve(case, tools, fx):
    if case.code is not None:
        body = "\n".join("    " + line for line in case.code.splitlines())
        return [sys.executable, "-c", PY_HARNESS.format(body=body)]
    argv = [tools.get(case.argv[0], case.argv[0])] + case.argv[1:]
    return [a.replace(FX, str(fx)) for a in argv]


def shown(case, tools, fx):
    """The command line to print: a Python case shows its body."""
    if case.code is not None:
        return "python3 -c %s" % shlex.quote(case.code)
    return shlex.join(_clip(a) for a in resolve(case, tools, fx))


def _clip(arg):
    return arg if len(arg) <= 120 else arg[:60] + "...(%d chars)" % len(arg)


def run_case(case, tools, fx, work, env):
    where = work / "cases" / ("%04d" % case.number)
    where.mkdir(parents=True)
    # Every case may name a regular file and an empty directory of its own
    # where a path of the wrong kind is wanted (never a fixture: a command
    # that wrongly succeeded would overwrite it).
    (where / "afile").write_text("a regular file\n")
    (where / "adir").mkdir()
    for rel, content in case.files.items():
        path = where / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is DIRECTORY:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(content)
    if case.prepare:
        try:
            case.prepare(where, fx)
        except Exception as e:      # the fixture is not what the case thought
            return {"case": case, "category": "odd-error", "rc": None,
                    "out": "", "err": "the case's setup failed: %r" % e,
                    "seconds": 0.0, "dir": where}
    argv = resolve(case, tools, fx)
    started = time.monotonic()
    for attempt in range(8):
        try:
            proc = subprocess.Popen(
                argv, cwd=where, env=env, start_new_session=True,
                preexec_fn=limit_resources,
                stdin=subprocess.PIPE if case.stdin is not None
                else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            if e.errno in (errno.ETXTBSY, errno.ENOENT) and attempt < 7:
                time.sleep(1.5)
                continue
            return {"case": case, "category": "odd-error", "rc": None,
                    "out": "", "err": "could not start: %s" % e,
                    "seconds": 0.0, "dir": where}
        hung = False
        try:
            out, err = proc.communicate(case.stdin, timeout=case.timeout)
        except subprocess.TimeoutExpired:
            hung = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        out = out.decode("utf-8", "replace")
        err = err.decode("utf-8", "replace")
        if not hung and proc.returncode != 0 and BUSY.search(err) and \
                attempt < 7:
            time.sleep(1.5)
            continue
        break
    seconds = time.monotonic() - started
    category = judge(case, proc.returncode, out, err, hung)
    return {"case": case, "category": category, "rc": proc.returncode,
            "out": out, "err": err, "seconds": seconds, "dir": where}


def judge(case, rc, out, err, hung):
    if hung:
        return "hang"
    if rc < 0 or 128 < rc <= 128 + 64:
        return "signal"
    text = out + err
    if ABORT.search(text):
        return "abort"
    if case.code is not None:
        if "Traceback" in err:
            return "abort"
        if "HOSTILE-DONE" not in out:
            return "abort"          # the interpreter left inside a call
    if rc == 0:
        return "silent" if case.expect == ERROR else "ok"
    if case.expect == OK:
        return "failed"
    if rc == 1 and ERROR_LINE.search(err or out):
        return "ok-error"
    return "odd-error"


def tail(result, lines=6):
    text = (result["out"].rstrip() + "\n" + result["err"].rstrip()).strip()
    rows = text.splitlines()[-lines:]
    return [r if len(r) <= 300 else r[:300] + "..." for r in rows]


def quick_subset(cases, target=100):
    """About target cases, spread over the commands in proportion."""
    by_command = {}
    for case in cases:
        by_command.setdefault(case.command, []).append(case)
    step = max(1, len(cases) // target)
    chosen = []
    for group in by_command.values():
        picked = group[::step]
        if len(picked) < 2:
            picked = group[:2]
        chosen += picked
    return sorted(chosen, key=lambda c: c.number)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="a subset of about 100 cases")
    parser.add_argument("--list", action="store_true",
                        help="print the cases without running them")
    parser.add_argument("--bin", type=Path, default=REPO / "build" / "bin",
                        help="directory of partita, partita-exec, partita-opt")
    parser.add_argument("-j", type=int, default=2, help="parallel workers")
    parser.add_argument("--only", default=None,
                        help="only cases whose command or description "
                             "contains this text")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory")
    args = parser.parse_args()

    cases = generate()
    if args.quick:
        cases = quick_subset(cases)
    if args.only:
        cases = [c for c in cases
                 if args.only in c.command or args.only in c.what]
    bindir = args.bin.resolve()
    tools = {name: str(bindir / name)
             for name in ("partita", "partita-exec", "partita-opt")}
    if args.list:
        for case in cases:
            print("%4d  %-14s %-6s  %s" % (case.number, case.command,
                                           case.expect, case.what))
            print("      %s" % shown(case, tools, Path("$FX")))
        print("%d cases" % len(cases))
        return 0
    for name, path in tools.items():
        if not os.access(path, os.X_OK):
            sys.exit("hostile.py: %s is not an executable (see --bin)" % path)

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="partita-hostile-"))
    fx = work / "fixtures"
    build_fixtures(fx, tools)
    env = dict(os.environ, HOSTILE_FX=str(fx),
               PYTHONPATH=str(bindir.parent / "python"),
               LLVM_SYMBOLIZER_PATH="/nonexistent")
    env.pop("PARTITA_FUZZ_RUNS", None)
    print("hostile.py: %d cases, %d workers, fixtures in %.1f s (%s)" %
          (len(cases), args.j, time.monotonic() - started, work), flush=True)

    before = snapshot(fx)
    results = []

    def one(case):
        result = run_case(case, tools, fx, work, env)
        if result["category"] not in BAD and not args.keep:
            shutil.rmtree(result["dir"], ignore_errors=True)
        return result

    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for result in pool.map(one, cases):
            results.append(result)
            mark = result["category"]
            if mark in BAD:
                print("  #%d %s: %s -> %s" % (result["case"].number,
                                              result["case"].command,
                                              result["case"].what, mark),
                      flush=True)
    elapsed = time.monotonic() - started
    report(results, tools, fx, elapsed)
    changed = sorted(set(before.items()) ^ set(snapshot(fx).items()))
    if changed:
        print("\nwarning: the fixtures changed during the run (a case wrote "
              "into them; later cases may have judged wrongly): %s" %
              ", ".join(sorted(set(p for p, _ in changed))[:10]))
    bad = [r for r in results if r["category"] in BAD]
    if bad or args.keep:
        print("work directory kept: %s (each case runs in cases/NNNN, "
              "with $HOSTILE_FX=%s)" % (work, fx))
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


def report(results, tools, fx, elapsed):
    commands = sorted(set(r["case"].command for r in results))
    counts = {c: {k: 0 for k in CATEGORIES} for c in commands}
    for r in results:
        counts[r["case"].command][r["category"]] += 1
    width = max(len(c) for c in commands + ["command"])
    head = "%-*s %6s " % (width, "command", "cases") + \
        " ".join("%9s" % k for k in CATEGORIES)
    print()
    print(head)
    print("-" * len(head))
    total = {k: 0 for k in CATEGORIES}
    for c in commands:
        row = counts[c]
        for k in CATEGORIES:
            total[k] += row[k]
        print("%-*s %6d " % (width, c, sum(row.values())) +
              " ".join("%9s" % (row[k] or ".") for k in CATEGORIES))
    print("-" * len(head))
    print("%-*s %6d " % (width, "total", len(results)) +
          " ".join("%9d" % total[k] for k in CATEGORIES))
    slowest = max(results, key=lambda r: r["seconds"])
    print("\n%d cases in %.1f s (slowest: #%d, %.1f s)" % (
        len(results), elapsed, slowest["case"].number, slowest["seconds"]))

    def listing(title, chosen, lines):
        if not chosen:
            return
        print("\n%s (%d):" % (title, len(chosen)))
        for r in chosen:
            case = r["case"]
            print("\n#%d [%s] %s: %s (expected %s, exit %s, %.1f s)" % (
                case.number, r["category"], case.command, case.what,
                case.expect, r["rc"], r["seconds"]))
            print("  $ %s" % shown(case, tools, fx))
            for row in tail(r, lines):
                print("  | %s" % row)

    bad = [r for r in results if r["category"] in BAD]
    listing("not clean: signal, abort, hang or silent", bad, 6)
    listing("worth a look (not counted): odd-error or failed",
            [r for r in results if r["category"] in ("odd-error", "failed")],
            2)
    if not bad:
        print("\nevery case clean")


if __name__ == "__main__":
    sys.exit(main())
