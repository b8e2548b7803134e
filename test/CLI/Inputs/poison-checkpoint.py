"""Writes a NaN into element 3 of a checkpoint's param/0 and records the
shard's new CRC-32C in the array's index and checkpoint.json, so that every
checksum still matches: what a run that diverged before saving leaves behind.

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
shard = sorted(glob.glob(step + "/param.0/shard_*.npy"))[0]
data = bytearray(open(shard, "rb").read())
assert data[:6] == b"\x93NUMPY" and data[6] == 1, "an .npy file of version 1"
header = struct.unpack("<H", data[8:10])[0]
offset = 10 + header + 3 * 4
data[offset:offset + 4] = struct.pack("<f", float("nan"))
open(shard, "wb").write(bytes(data))

# The array's index records the shard's CRC-32C; checkpoint.json records
# every file's (the index's too).
index_path = os.path.join(os.path.dirname(shard), "index.json")
index = json.load(open(index_path))
for entry in index["shards"]:
    if entry["file"] == os.path.basename(shard):
        entry["crc32c"] = crc32c(data)
index_text = json.dumps(index).encode()
open(index_path, "wb").write(index_text)

meta_path = step + "/checkpoint.json"
meta = json.load(open(meta_path))
for path, content in ((shard, bytes(data)), (index_path, index_text)):
    relative = os.path.relpath(path, step)
    for entry in meta["files"]:
        if entry["path"] == relative:
            entry["crc32c"] = "%08x" % crc32c(content)
            entry["bytes"] = len(content)
open(meta_path, "w").write(json.dumps(meta))
