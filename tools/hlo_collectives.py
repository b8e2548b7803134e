#!/usr/bin/env python3
"""The collectives of a compiled XLA HLO module and their bus traffic.

Reads the text of `jax.jit(...).lower(...).compile().as_text()`: every
all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute
(synchronous or async start), its result shapes (arrays or tuples, with XLA's
`/*index=N*/` comments), its group size from the replica groups (explicit
lists, iota tile assignments, or a named mesh with the grouped axes), and how
many times it runs per step (while-loop trip counts). Bytes per device follow
the nccl-tests bus-traffic convention of docs/Partitioning.md. No JAX needed:
tools/export_jax.py and bench/vs_xla.py call it, test/tools/hlo-collectives.test
tests it.
"""

import math
import re
import sys

DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
               "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8,
               "f64": 8, "c64": 8, "c128": 16}

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
               "collective-permute")

# "%name = <shape> <opcode>(" where the shape is an array or a tuple.
INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%[\w.\-]+\s*=\s*(?P<shape>\(.*?\)|[\w]+\[[\d,]*\](?:\{[^}]*\})?)"
    r"\s+(?P<op>[a-z\-]+)\(")
ARRAY_SHAPE = re.compile(r"([a-z]+\d*)\[([\d,]*)\]")
EXPLICIT_GROUPS = re.compile(r"replica_groups=\{(\{[\d,]*\}(?:,\{[\d,]*\})*)?\}")
IOTA_GROUPS = re.compile(r"replica_groups=\[([\d,]+)\]<=")
# XLA 0.10 prints groups over a named mesh: mesh['axis_0'=2,'axis_1'=4]
# {'axis_1'} is the groups along axis_1 (size 4); a sub-axis is written
# 'axis_0':(1)2 (pre-size in parentheses, then its size).
MESH_GROUPS = re.compile(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}")
MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")
GROUP_AXIS = re.compile(r"'([^']+)'(?::\(\d+\)(\d+))?")
NUM_PARTITIONS = re.compile(r"num_partitions=(\d+)")


def array_shapes(text):
    """The (dtype, dims) of every array in a printed shape, layouts dropped."""
    return [(dtype, tuple(int(d) for d in dims.split(",") if d))
            for dtype, dims in ARRAY_SHAPE.findall(text)]


def shape_bytes(shapes):
    return sum(DTYPE_BYTES[dtype] * math.prod(dims) for dtype, dims in shapes)


def shape_string(shapes):
    parts = [f"{dtype}[{','.join(map(str, dims))}]" for dtype, dims in shapes]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def group_size(line, num_devices):
    mesh = MESH_GROUPS.search(line)
    if mesh:
        sizes = {name: int(size) for name, size in MESH_AXIS.findall(mesh.group(1))}
        n = 1
        for name, sub_size in GROUP_AXIS.findall(mesh.group(2)):
            if name not in sizes:
                raise RuntimeError(f"replica group names unknown axis '{name}': {line}")
            n *= int(sub_size) if sub_size else sizes[name]
        return n
    iota = IOTA_GROUPS.search(line)
    if iota:  # [groups, size]<=[...] with or without a T(...) transpose
        return int(iota.group(1).split(",")[-1])
    explicit = EXPLICIT_GROUPS.search(line)
    if explicit and explicit.group(1):
        return len(explicit.group(1).split("}")[0].strip("{").split(","))
    return num_devices  # replica_groups={} or absent: every device


COMPUTATION = re.compile(r"^(?:ENTRY )?(%[\w.\-]+) ")
WHILE_BODY = re.compile(r"\swhile\(.*\bbody=(%[\w.\-]+)")
TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def executions_per_step(hlo_text):
    """How many times each computation runs per step: 1 for the entry, the
    trip count (known_trip_count) times its caller's for a while body."""
    calls = {}  # body -> (caller, trips)
    entry, current = None, None
    for line in hlo_text.splitlines():
        match = COMPUTATION.match(line)
        if match:
            current = match.group(1)
            if line.startswith("ENTRY"):
                entry = current
            continue
        body = WHILE_BODY.search(line)
        if body:
            trips = TRIP_COUNT.search(line)
            calls[body.group(1)] = (current, int(trips.group(1)) if trips else 1)

    def runs(name, depth=0):
        if name == entry or name not in calls or depth > 32:
            return 1
        caller, trips = calls[name]
        return trips * runs(caller, depth + 1)

    return runs


def collectives(hlo_text):
    """The collectives of a compiled HLO module with their bus traffic; a
    collective in a loop body counts once per iteration ("count")."""
    num_devices = int(NUM_PARTITIONS.search(hlo_text).group(1))
    runs = executions_per_step(hlo_text)
    found = []
    current = None
    for line in hlo_text.splitlines():
        computation = COMPUTATION.match(line)
        if computation:
            current = computation.group(1)
            continue
        match = INSTRUCTION.match(line)
        if not match:
            continue
        op = match.group("op")
        kind = op[:-len("-start")] if op.endswith("-start") else op
        if kind not in COLLECTIVES:
            continue
        shapes = array_shapes(match.group("shape"))
        # Async starts of these return (operands, results[, contexts]); keep
        # the results. An all-reduce-start returns its results alone.
        if op == "all-gather-start":
            shapes = shapes[len(shapes) // 2:]
        elif op == "collective-permute-start":
            shapes = shapes[1:2]
        n = group_size(line, num_devices)
        size = shape_bytes(shapes)
        if kind == "all-reduce":
            traffic = 2 * (n - 1) / n * size
        elif kind == "reduce-scatter":
            traffic = (n - 1) * size  # (n-1)/n of the operand, n results
        elif kind == "collective-permute":
            traffic = size
        else:  # all-gather (size is the gathered result), all-to-all
            traffic = (n - 1) / n * size
        count = runs(current)
        found.append({"kind": kind, "shape": shape_string(shapes),
                      "group_size": n, "count": count,
                      "bytes_per_device": traffic * count})
    return found


def check_collectives_found(hlo_text, found):
    """Guards the parser: every collective opcode in the text was counted."""
    ops = re.findall(r"\s(" + "|".join(COLLECTIVES) + r")(-start)?\(", hlo_text)
    if len(ops) != len(found):
        raise RuntimeError(f"parsed {len(found)} collectives, text has {len(ops)}")


if __name__ == "__main__":
    # hlo_collectives.py FILE: one line per collective, then the totals.
    text = open(sys.argv[1]).read()
    found = collectives(text)
    check_collectives_found(text, found)
    for c in found:
        print(f"{c['kind']} {c['shape']} group {c['group_size']} "
              f"count {c['count']} bytes {c['bytes_per_device']:.0f}")
    print(f"total {sum(c['count'] for c in found)} collectives, "
          f"{sum(c['bytes_per_device'] for c in found):.0f} bytes per device")
