"""Checkpoints: their size, the background write, and how long training
pauses, against writing the same bytes straight to disk.

Trains a GPT (default: 4 layers, D = 256, AdamW, dp+tp on data=2,model=4,
cpu:8) for --steps steps with a checkpoint every 2 steps, and reads from the
run: each checkpoint's bytes, its write time in the background, and the
time training paused to hand it over; and, from loss.csv, the median step
time of steps that end with a checkpoint (their devices copy the state to
host memory) against the others. The peer, in the same run: the same
number of bytes written as one file and fsynced by Python.

    python3 bench/checkpoint.py [--partita build/bin/partita] [--steps 12]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as scratch:
        ckpt = os.path.join(scratch, "ckpt")
        out = os.path.join(scratch, "out")
        command = [args.partita, "train", "--model", "gpt", "--layers",
                   str(args.layers), "--d-model", str(args.d_model),
                   "--devices", "cpu:8", "--mesh", "data=2,model=4",
                   "--rules", "dp+tp", "--steps", str(args.steps),
                   "--checkpoint-dir", ckpt, "--checkpoint-every", "2",
                   "--keep", "2", "--output", out]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        pattern = re.compile(r"checkpoint: .*step-(\d+) written \((\d+) bytes\) "
                             r"in ([0-9.]+) ms in the background; training "
                             r"paused ([0-9.]+) ms")
        rows = [tuple(map(float, m.groups()))
                for m in pattern.finditer(done.stdout)]
        if not rows:
            sys.exit("no checkpoint lines in the output:\n" + done.stdout)
        with open(os.path.join(out, "loss.csv")) as f:
            seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
        with_copy = [s for i, s in enumerate(seconds[1:], 2) if i % 2 == 0]
        without = [s for i, s in enumerate(seconds[1:], 2) if i % 2 == 1]
        size = int(rows[-1][1])
        # The peer: the same bytes as one file, written and fsynced.
        payload = os.urandom(size)
        peer = []
        for _ in range(5):
            path = os.path.join(scratch, "peer.bin")
            start = time.perf_counter()
            with open(path, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            peer.append(time.perf_counter() - start)
            os.remove(path)
        write_ms = statistics.median(r[2] for r in rows)
        pause_ms = statistics.median(r[3] for r in rows)
        peer_ms = statistics.median(peer) * 1e3
        print(f"GPT {args.layers} layers, D {args.d_model}, dp+tp on "
              f"data=2,model=4 (cpu:8), {args.steps} steps, a checkpoint "
              f"every 2 ({len(rows)} written)")
        print(f"checkpoint size: {size:,} bytes")
        print(f"background write: median {write_ms:.1f} ms "
              f"({size / write_ms / 1e3:.1f} MB/s); the same bytes as one "
              f"fsynced file: {peer_ms:.1f} ms ({size / peer_ms / 1e3:.1f} "
              f"MB/s); checkpoint / file = {write_ms / peer_ms:.2f}")
        print(f"training paused to hand a checkpoint over: median "
              f"{pause_ms:.2f} ms")
        if with_copy and without:
            a, b = statistics.median(with_copy), statistics.median(without)
            print(f"step time: {a * 1e3:.1f} ms with the copy to host memory, "
                  f"{b * 1e3:.1f} ms without (median; the copy adds "
                  f"{(a - b) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
