"""Cases of the hostile-input sweep (bench/hostile.py) for the compiler's
commands: gen, programs through compile, explain, show and run, .npy
inputs, train and its data files."""

import random
import struct

from hostile_common import (BAD_MESHES, DIRECTORY, EITHER, ERROR, EXAMPLES, FX,
    LONG_TEXT, OK, PROGRAMS, SEED, _damaged_checkpoint, _short, int32_tokens,
    npy_bytes, program_mutants)


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
            (["--check"], OK),                 # the same steps on one device
            (["--check", "--distributed"], ERROR),          # needs --pp
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
