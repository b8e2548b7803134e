"""Writes a NaN into element 3 of a checkpoint's param/0 and records its
block's new CRC-32C in checkpoint.json, so that every checksum still
matches: what a run that diverged before saving leaves behind.

    python3 poison-checkpoint.py CHECKPOINT_DIR
"""
import glob
import json
import os
import struct
import sys


def crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


step = sorted(glob.glob(sys.argv[1] + "/step-*"))[-1]
meta_path = step + "/checkpoint.json"
meta = json.load(open(meta_path))
tensor = next(t for t in meta["tensors"] if t["key"] == "param/0")
# The block holding the first row; element 3 of the value is its element 3.
block = next(b for b in tensor["blocks"] if all(s == 0 for s in b["start"]))
assert block["size"][-1] == tensor["shape"][-1], "a block of whole rows"
count = 1
for size in block["size"]:
    count *= size
path = os.path.join(step, block["file"])
data = bytearray(open(path, "rb").read())
start = block["offset"]
data[start + 3 * 4:start + 4 * 4] = struct.pack("<f", float("nan"))
open(path, "wb").write(bytes(data))
block["crc32c"] = crc32c(bytes(data[start:start + 4 * count]))
open(meta_path, "w").write(json.dumps(meta))
