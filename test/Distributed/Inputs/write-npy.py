# Writes a float32 .npy of the given shape with deterministic values, using
# only the standard library (CI has no numpy).
#   python3 write-npy.py OUT.npy SEED DIM...
import array
import random
import struct
import sys

path, seed, dims = sys.argv[1], int(sys.argv[2]), [int(d) for d in sys.argv[3:]]
count = 1
for d in dims:
    count *= d
rng = random.Random(seed)
values = array.array("f", (rng.uniform(-1, 1) for _ in range(count)))
shape = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
# Magic, version 1.0, then the header padded so the data starts at a
# multiple of 64 bytes, ending in a newline.
padding = 64 - (10 + len(header) + 1) % 64
header = header + " " * padding + "\n"
with open(path, "wb") as out:
    out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    out.write(values.tobytes())
