"""Cases of the hostile-input sweep (bench/hostile.py) for what lives in
files: checkpoints, plan and calibrate's cluster files, every JSON input,
and partita-exec's sharded arrays, Executables and pipelined steps."""

import json
import random
import shutil
import struct

from hostile_common import (ADD_PROGRAM, BAD_MESHES, CHECKPOINT_DAMAGE,
    CLUSTER, DIRECTORY, EITHER, ERROR, FX, INTERCONNECT, LONG_TEXT, OK, RULES,
    SEED, WEIRD_JSON_VALUES, _DELETE, _damaged_checkpoint, _flip_byte, _short,
    json_mutants, json_paths, json_set, json_text, reseal)


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
