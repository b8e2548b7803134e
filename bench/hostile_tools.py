"""Cases of the hostile-input sweep (bench/hostile.py) for partita-opt, the
Python API (each case in its own interpreter) and paths that are not
plain files."""


from hostile_common import (EITHER, ERROR, FX, LONG_TEXT, OK, _short)


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
