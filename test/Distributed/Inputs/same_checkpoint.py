"""Compares two checkpoint directories (step-N) written by different
process counts of one layout: the same tensors, each tiled by the same
blocks holding the same bytes (which process's file holds a block may
differ), and the same checksums. Prints one line, or exits non-zero naming
the first difference."""
import json
import sys


def blocks(directory):
    meta = json.load(open(directory + "/checkpoint.json"))
    tensors = {}
    for tensor in meta["tensors"]:
        items = {}
        element = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i32": 4,
                   "i64": 8}[tensor["dtype"]]
        for block in tensor["blocks"]:
            count = 1
            for size in block["size"]:
                count *= size
            with open(directory + "/" + block["file"], "rb") as f:
                f.seek(block["offset"])
                data = f.read(count * element)
            items[(tuple(block["start"]), tuple(block["size"]))] = (
                data, block["crc32c"])
        tensors[tensor["key"]] = items
    return tensors


a, b = blocks(sys.argv[1]), blocks(sys.argv[2])
if a.keys() != b.keys():
    sys.exit(f"different tensors: {sorted(a.keys() ^ b.keys())}")
for key in a:
    if a[key].keys() != b[key].keys():
        sys.exit(f"{key}: different blocks")
    for box in a[key]:
        if a[key][box] != b[key][box]:
            sys.exit(f"{key}: block {box} differs")
print(f"{len(a)} tensors, the same blocks and bytes")
