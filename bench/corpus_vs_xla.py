#!/usr/bin/env python3
"""Partita's plans against XLA's on every program of the JAX corpus.

For each directory of test/Conversion/StableHLOToPartita/corpus (written by
bench/jax_corpus.py, which compiled the same program with XLA and stored
its collectives in xla.json), runs `partita compile module.mlir --report`
and prints, per program, both compilers' collective counts and bytes per
device (bus-traffic convention, docs/Partitioning.md) and the ratio of
bytes. With --run it also runs each program on cpu:8 against JAX's outputs
and the unpartitioned program (tools/run-jax-fixture.sh). With --write-doc
the table goes into docs/benchmarks.md between the "corpus_vs_xla"
markers. Exits 1 when a program fails to import, run or match, or when its
plan moves more bytes or uses more collectives than XLA's.

Needs no JAX: XLA's figures are those stored at export.
    python3 bench/corpus_vs_xla.py [--partita build/bin/partita] [--run]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "test", "Conversion", "StableHLOToPartita",
                      "corpus")
BEGIN = "<!-- corpus_vs_xla: begin -->"
END = "<!-- corpus_vs_xla: end -->"


def compile_report(partita, module, workdir):
    report = os.path.join(workdir, "report.json")
    done = subprocess.run([partita, "compile", module, "--report", report,
                           "-o", os.devnull], capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip().splitlines()[-1:] or ["failed"]
    with open(report) as f:
        return json.load(f)["totals"], None


def run_program(partita, directory):
    env = dict(os.environ, PARTITA=partita)
    done = subprocess.run(
        ["bash", os.path.join(ROOT, "tools", "run-jax-fixture.sh"),
         directory], capture_output=True, text=True, env=env)
    out = done.stdout + done.stderr
    ok = (done.returncode == 0 and "check passed: cpu:8 matches" in out
          and "MISMATCH" not in out)
    return ok, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita",
                        default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--run", action="store_true",
                        help="also run each program against JAX's outputs")
    parser.add_argument("--only", action="append", metavar="NAME")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--doc",
                        default=os.path.join(ROOT, "docs", "benchmarks.md"))
    options = parser.parse_args()
    names = sorted(d for d in os.listdir(options.corpus)
                   if os.path.isfile(os.path.join(options.corpus, d,
                                                  "module.mlir")))
    if options.only:
        names = [n for n in names if n in options.only]
    rows, problems = [], []
    with tempfile.TemporaryDirectory() as workdir:
        for name in names:
            directory = os.path.join(options.corpus, name)
            with open(os.path.join(directory, "xla.json")) as f:
                xla = json.load(f)
            ours, error = compile_report(options.partita,
                                         os.path.join(directory,
                                                      "module.mlir"), workdir)
            if ours is None:
                problems.append(f"{name}: does not compile: {error[0]}")
                rows.append((name, None, xla, "compile error"))
                print(f"{name}: compile error: {error[0]}", flush=True)
                continue
            status = ""
            if options.run:
                ok, out = run_program(options.partita, directory)
                status = "matches JAX" if ok else "MISMATCH or error"
                if not ok:
                    tail = [line for line in out.splitlines()
                            if "error" in line or "MISMATCH" in line]
                    problems.append(f"{name}: run: {(tail or ['?'])[0]}")
            if ours["bytes_per_device"] > xla["total_bytes_per_device"] + 0.5:
                problems.append(f"{name}: more bytes than XLA")
            if ours["collectives"] > xla["collective_count"]:
                problems.append(f"{name}: more collectives than XLA")
            rows.append((name, ours, xla, status))
            print(f"{name}: {ours['collectives']} collectives, "
                  f"{ours['bytes_per_device']:.0f} B (XLA "
                  f"{xla['collective_count']}, "
                  f"{xla['total_bytes_per_device']:.0f} B) {status}",
                  flush=True)
    table = render(rows)
    print()
    print(table)
    if options.write_doc:
        write_doc(options.doc, summary(rows, problems, options.run) + "\n" +
                  table)
    if problems:
        print("\n".join(["", f"{len(problems)} problems:"] + problems))
        sys.exit(1)
    print(f"\nall {len(rows)} programs at or below XLA's bytes and "
          f"collectives" + (", matching JAX" if options.run else ""))


def summary(rows, problems, ran):
    """The line above the table: when, what ran, how many meet XLA."""
    versions = sorted({xla.get("jax_version", "?") for _, _, xla, _ in rows})
    above = {p.split(":")[0] for p in problems if "than XLA" in p}
    bytes_above = {p.split(":")[0] for p in problems if "more bytes" in p}
    failed = {p.split(":")[0] for p in problems if "than XLA" not in p}
    n = len(rows)
    line = (f"Measured {datetime.date.today().isoformat()} on this machine "
            f"({os.cpu_count()} cores), 8 emulated CPU devices, XLA's "
            f"figures from the export (JAX {', '.join(versions)}); "
            f"`python3 bench/corpus_vs_xla.py{' --run' if ran else ''} "
            f"--write-doc`. ")
    if ran:
        line += (f"{n - len(failed)} of {n} programs import, run on cpu:8 "
                 f"and match JAX; ")
    line += (f"{n - len(above | failed)} of {n} are at or below XLA in both "
             f"bytes and collectives, {n - len(bytes_above | failed)} in "
             f"bytes.")
    return line


def render(rows):
    lines = ["| Program | Partita collectives | XLA collectives | "
             "Partita bytes/device | XLA bytes/device | bytes ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, ours, xla, status in rows:
        if ours is None:
            lines.append(f"| `{name}` | {status} | {xla['collective_count']}"
                         f" | | {xla['total_bytes_per_device']:.0f} | |")
            continue
        xb = xla["total_bytes_per_device"]
        ratio = ours["bytes_per_device"] / xb if xb else (
            0.0 if ours["bytes_per_device"] == 0 else float("inf"))
        lines.append(f"| `{name}` | {ours['collectives']} | "
                     f"{xla['collective_count']} | "
                     f"{ours['bytes_per_device']:.0f} | {xb:.0f} | "
                     f"{ratio:.2f}x |")
    return "\n".join(lines)


def write_doc(path, table):
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{path} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + table + "\n" + END + tail)


if __name__ == "__main__":
    main()
