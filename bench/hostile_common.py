"""Shared pieces of the hostile-input sweep (bench/hostile.py): the case
record and the sweep that collects cases, the fixtures' programs and JSON,
byte-level helpers for .npy files, token files and Executables, the
mutators of JSON and program text, and the ways a checkpoint is damaged."""

import json
import random
import re
import shutil
import struct
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
