"""The data of test/Distributed/train.test: a token file, fine-tuning
examples, preference pairs and held-out pairs, from fixed seeds."""
import random
import struct

r = random.Random(1)
with open("tokens.bin", "wb") as f:
    f.write(struct.pack("<20000i", *[r.randrange(256) for _ in range(20000)]))


def tokens(low, high, count):
    return " ".join(str(r.randrange(low, high)) for _ in range(count))


with open("sft.txt", "w") as f:
    for _ in range(64):
        f.write(tokens(1, 200, r.randrange(3, 9)) + " | " +
                tokens(1, 200, r.randrange(3, 20)) + "\n")
with open("prefs.txt", "w") as f:
    for _ in range(32):
        f.write(tokens(1, 120, 4) + " | " + tokens(1, 120, 6) + " | " +
                tokens(1, 120, 5) + "\n")
with open("prefs-heldout.txt", "w") as f:
    for _ in range(16):
        f.write(tokens(1, 120, 4) + " | " + tokens(1, 120, 6) + " | " +
                tokens(1, 120, 5) + "\n")
