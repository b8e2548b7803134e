"""Checks a run's device timeline (Chrome/Perfetto trace event format).

  check-device-trace.py TRACE [--min-collectives N] [--loops]

The file is the trace event format's JSON object form; every event is well
formed; every device of the mesh (otherData) has a named track; a device's
spans nest or are disjoint (as trace viewers require); every instruction
that is not a loop ran the same number of times on every device; every
execution of a collective appears on every device of each of its groups
(the groups formed by the mesh axes it names); every wait lies inside a
collective of the same instruction on the same device; the wait of an
asynchronous collective ("wait ...", args.collective = the started
instruction) comes after that collective's start on the same device and
trip. Prints a summary.
"""
import itertools
import json
import sys


def groups(axes_sizes, ids, names):
    """Device-id groups of a collective over the axes `names`."""
    sizes = [size for _, size in axes_sizes]
    index = {name: i for i, (name, _) in enumerate(axes_sizes)}
    over = [index[n] for n in names]
    result = {}
    for linear, coords in enumerate(itertools.product(*[range(s) for s in sizes])):
        key = tuple(c for i, c in enumerate(coords) if i not in over)
        result.setdefault(key, []).append(ids[linear])
    return list(result.values())


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    min_collectives = 0
    want_loops = False
    while args:
        flag = args.pop(0)
        if flag == "--min-collectives":
            min_collectives = int(args.pop(0))
        elif flag == "--loops":
            want_loops = True
        else:
            raise SystemExit("unknown flag " + flag)
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    other = trace["otherData"]
    ids = other["device_ids"]
    axes = other["mesh_axes"]
    events = trace["traceEvents"]
    tracks = {}
    spans = []
    for e in events:
        assert e["ph"] in ("M", "X"), e
        assert isinstance(e["name"], str) and e["pid"] == 0, e
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                tracks[e["tid"]] = e["args"]["name"]
            continue
        for key in ("cat", "tid", "ts", "dur", "args"):
            assert key in e, (key, e)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert e["cat"] in ("compute", "collective", "loop", "wait"), e
        spans.append(e)
    assert sorted(tracks) == sorted(ids), (tracks, ids)
    for tid, name in tracks.items():
        assert name == "device %d" % tid, name
    eps = 1e-3  # microseconds, the printed precision
    by_device = {d: sorted((e for e in spans if e["tid"] == d),
                           key=lambda e: (e["ts"], -e["dur"]))
                 for d in ids}
    for d, ds in by_device.items():
        stack = []
        for e in ds:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + eps:
                stack.pop()
            if stack:
                outer = stack[-1]
                assert e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + eps, \
                    ("overlapping spans", outer, e)
                if e["cat"] == "wait":
                    assert outer["cat"] == "collective" and \
                        outer["args"]["instruction"] == e["args"]["instruction"], (outer, e)
                else:
                    assert outer["cat"] == "loop", ("nested in a non-loop", outer, e)
            else:
                assert e["cat"] != "wait", ("a wait outside its collective", e)
            stack.append(e)
    counts = {}
    for e in spans:
        if e["cat"] in ("compute", "collective"):
            key = e["args"]["instruction"]
            counts.setdefault(key, {}).setdefault(e["tid"], 0)
            counts[key][e["tid"]] += 1
    for key, per in counts.items():
        assert sorted(per) == sorted(ids) and len(set(per.values())) == 1, (key, per)
    executions = {}
    for e in spans:
        if e["cat"] == "collective":
            key = (e["args"]["instruction"], e["args"].get("trip", -1))
            executions.setdefault(key, []).append(e)
    for key, es in executions.items():
        names = [a for a in es[0]["args"]["axes"].split(",") if a]
        devices = [e["tid"] for e in es]
        for group in groups(axes, ids, names):
            for member in group:
                assert devices.count(member) >= 1, ("missing", key, member, group)
    starts = {(e["tid"], e["args"]["instruction"], e["args"].get("trip", -1)): e
              for e in spans if e["cat"] == "collective"}
    async_waits = 0
    for e in spans:
        if e["cat"] == "collective" and "collective" in e["args"]:
            assert e["name"].startswith("wait "), e
            key = (e["tid"], e["args"]["collective"], e["args"].get("trip", -1))
            assert key in starts, ("a wait without its start", e)
            start = starts[key]
            assert start["ts"] + start["dur"] <= e["ts"] + eps, (start, e)
            async_waits += 1
    collectives = len({k[0] for k in executions}) - len(
        {e["args"]["instruction"] for e in spans
         if e["cat"] == "collective" and "collective" in e["args"]})
    loops = sum(1 for e in spans if e["cat"] == "loop")
    waits = sum(1 for e in spans if e["cat"] == "wait")
    assert collectives >= min_collectives, (collectives, min_collectives)
    if want_loops:
        assert loops > 0 and any("trip" in e["args"] for e in spans), "no loop spans"
    print("%d devices, %d spans, %d collective instructions on every device "
          "of their groups, %d loop spans, %d waits, %d asynchronous" %
          (len(ids), len(spans), collectives, loops, waits, async_waits))


main()
