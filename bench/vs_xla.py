#!/usr/bin/env python3
"""Partita against XLA on the same JAX programs, in the same run.

For every program of tools/export_jax.py (the fixtures of
test/Conversion/StableHLOToPartita), on 8 emulated CPU devices with the same
shardings:
  * XLA: jax.jit(...).lower() + .compile() (which includes code
    generation), median of 3, and the collectives of the compiled SPMD
    module with their bytes per device (bus-traffic convention, docs/Partitioning.md);
  * Partita: `partita compile module.mlir --stage executable` — import of
    the StableHLO, propagation, partitioning and lowering to a runnable
    Executable, process start included — median of 3, and the collectives
    and bytes of its report (all_reduces combined into 25 MiB buckets, the
    default); and the collectives with combining off (`--combine-bytes 0`).
Prints the table; with --write-doc also writes it into docs/benchmarks.md
(between the markers of its "Partita vs XLA" section; --doc FILE to write
another file).

With --xla-outputs, every program is first compiled by XLA without
out_shardings, and then exported with out_shardings pinned to the output
shardings XLA chose: both compilers then produce the same output layouts,
and neither is judged on a layout the other was not asked for. That table
goes between the "vs_xla_outputs" markers.

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax==0.10.2 numpy
    /tmp/jaxenv/bin/python bench/vs_xla.py [--partita build/bin/partita]
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_jax  # noqa: E402  (sets XLA_FLAGS before importing jax)

BEGIN = "<!-- vs_xla: begin -->"
END = "<!-- vs_xla: end -->"
OUTPUTS_BEGIN = "<!-- vs_xla_outputs: begin -->"
OUTPUTS_END = "<!-- vs_xla_outputs: end -->"


def xla_chosen_outputs(fn, args, ins):
    """The output shardings XLA picks when jit is given none."""
    abstract = [export_jax.jax.ShapeDtypeStruct(a.shape, a.dtype)
                for a in args]
    compiled = export_jax.jax.jit(fn, in_shardings=tuple(ins)).lower(
        *abstract).compile()
    return compiled.output_shardings


def partita_compile(partita, module, workdir):
    """Median seconds of import + compile to an Executable, and the report."""
    exe = os.path.join(workdir, "program.exe")
    report = os.path.join(workdir, "report.json")
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([partita, "compile", module, "--stage", "executable",
                        "-o", exe, "--report", report], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    with open(report) as f:
        return statistics.median(times), json.load(f)


def partita_separate(partita, module, workdir):
    """The report with every all_reduce on its own (no combining)."""
    report = os.path.join(workdir, "separate.json")
    subprocess.run([partita, "compile", module, "--combine-bytes", "0",
                    "-o", os.devnull, "--report", report],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def kinds(collectives, key, count_key=None):
    """'2 all-reduce, 1 all-gather' from a list of collectives."""
    counts = {}
    for c in collectives:
        kind = c[key].replace("_", "-")
        counts[kind] = counts.get(kind, 0) + (c[count_key] if count_key else 1)
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita",
                        default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--write-doc", action="store_true",
                        help="write the table into --doc (a run on another "
                             "machine no longer rewrites the docs)")
    parser.add_argument("--doc",
                        default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--xla-outputs", action="store_true",
                        help="pin out_shardings to what XLA chooses "
                             "without them")
    options = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, (fn, args, ins, outs) in export_jax.fixtures().items():
            if options.xla_outputs:
                outs = xla_chosen_outputs(fn, args, ins)
            export_jax.export(workdir, name, fn, args, tuple(ins), outs)
            directory = os.path.join(workdir, name)
            with open(os.path.join(directory, "xla.json")) as f:
                xla = json.load(f)
            seconds, report = partita_compile(
                options.partita, os.path.join(directory, "module.mlir"),
                workdir)
            ours = report["collectives"]
            separate = partita_separate(
                options.partita, os.path.join(directory, "module.mlir"),
                workdir)
            rows.append({
                "name": name,
                "xla_count": xla["collective_count"],
                "xla_kinds": kinds(xla["collectives"], "kind", "count"),
                "xla_bytes": xla["total_bytes_per_device"],
                "xla_seconds": xla["lower_seconds"] + xla["compile_seconds"],
                "our_count": report["totals"]["collectives"],
                "our_kinds": kinds(ours, "kind", "count"),
                "our_bytes": report["totals"]["bytes_per_device"],
                "separate_count": separate["totals"]["collectives"],
                "separate_bytes": separate["totals"]["bytes_per_device"],
                "our_seconds": seconds,
            })

    command = ("`python bench/vs_xla.py --xla-outputs` (out_shardings "
               "pinned to XLA's own choice)" if options.xla_outputs
               else "`python bench/vs_xla.py`")
    lines = [
        f"Measured {datetime.date.today()} on this machine (2 cores), JAX "
        f"{export_jax.jax.__version__}, 8 emulated CPU devices, mesh "
        f"data=2,model=4; {command}.",
        "",
        "| program | XLA collectives | XLA bytes/device | Partita "
        "collectives | Partita bytes/device | bytes Partita/XLA | Partita "
        "collectives, uncombined | XLA lower+compile (ms) | Partita "
        "import+compile (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = (f"{r['our_bytes'] / r['xla_bytes']:.2f}x"
                 if r["xla_bytes"] else ("=" if not r["our_bytes"] else "-"))
        lines.append(
            f"| {r['name']} | {r['xla_count']} ({r['xla_kinds']}) | "
            f"{r['xla_bytes']:,.0f} | {r['our_count']} ({r['our_kinds']}) | "
            f"{r['our_bytes']:,.0f} | {ratio} | {r['separate_count']}"
            f"{'' if r['separate_bytes'] == r['our_bytes'] else ' (bytes differ!)'} | "
            f"{r['xla_seconds'] * 1e3:.0f} | "
            f"{r['our_seconds'] * 1e3:.0f} |")
    table = "\n".join(lines)
    print(table)
    if not options.write_doc:
        return

    begin, end = ((OUTPUTS_BEGIN, OUTPUTS_END) if options.xla_outputs
                  else (BEGIN, END))
    text = open(options.doc).read() if os.path.exists(options.doc) else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + begin + "\n" + table + "\n" + end + rest.split(end, 1)[1]
    else:
        text += ("\n## Partita vs XLA on JAX programs\n\n" + begin + "\n" +
                 table + "\n" + end + "\n")
    with open(options.doc, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
