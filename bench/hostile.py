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
import os
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
from pathlib import Path

# The case modules sit beside this script.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hostile_common import (ADD_PROGRAM, CLUSTER, DIRECTORY, ERROR, EXAMPLES,
    FX, INTERCONNECT, MEMORY_LIMIT, OK, PROGRAMS, REPO, RULES, Sweep,
    int32_tokens, json_text, npy_bytes)
from hostile_programs import (compile_cases, data_cases, explain_show_cases,
    gen_cases, npy_cases, program_cases, run_cases, train_cases)
from hostile_files import (calibrate_cases, checkpoint_cases, exec_cases,
    json_file_cases, plan_cases)
from hostile_tools import (PY_HARNESS, opt_cases, path_cases, python_cases)


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
