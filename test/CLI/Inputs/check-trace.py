"""Checks a pipelined step's trace (Chrome/Perfetto trace event format).

  check-trace.py TRACE RANKS MICRO_BATCHES KINDS

Every event is well formed; each rank has a named track; for each kind in
KINDS (F, B, W) every micro-batch appears on every rank that runs that kind
of work, at most once per stage; a rank's events do not overlap.
"""
import json
import sys


def main():
    path, ranks, micro, kinds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names) == list(range(ranks)), names
    spans = [e for e in events if e["ph"] == "X"]
    by_rank = {r: [] for r in range(ranks)}
    seen = set()
    for e in spans:
        for key in ("name", "cat", "pid", "tid", "ts", "dur", "args"):
            assert key in e, (key, e)
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        assert e["cat"] in kinds, e
        assert e["name"] == e["cat"] + str(e["args"]["micro_batch"]), e
        key = (e["cat"], e["args"]["stage"], e["args"]["micro_batch"])
        assert key not in seen, key
        seen.add(key)
        by_rank[e["tid"]].append(e)
    for rank, rank_spans in by_rank.items():
        rank_spans.sort(key=lambda e: e["ts"])
        for a, b in zip(rank_spans, rank_spans[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (a, b)
        for kind in kinds:
            batches = {e["args"]["micro_batch"] for e in rank_spans if e["cat"] == kind}
            if kind != "B" or batches:
                assert batches == set(range(micro)), (rank, kind, batches)
    print(f"{len(spans)} spans on {ranks} tracks")


main()
