"""Checkpoints: their size, the background write, and how long training
pauses, against writing the same bytes straight to disk.

Trains a GPT (default: 4 layers, D = 256, AdamW, dp+tp on data=2,model=4,
cpu:8) for --steps steps without checkpoints and with one every 2 steps, and
reads from the runs: each checkpoint's bytes, its write time in the
background, the time training paused to hand it over, and the median step
time of both runs (on 2 cores the background write competes with the
devices' threads); and the write time of one checkpoint with the machine
otherwise idle. The peer, in the same run: the same number of bytes written
as one file and fsynced by Python.

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


PATTERN = re.compile(r"checkpoint: .*step-(\d+) written \((\d+) bytes\) "
                     r"in ([0-9.]+) ms in the background; training "
                     r"paused ([0-9.]+) ms")


def train(args, scratch, name, extra):
    out = os.path.join(scratch, name)
    command = [args.partita, "train", "--model", "gpt", "--layers",
               str(args.layers), "--d-model", str(args.d_model),
               "--devices", "cpu:8", "--mesh", "data=2,model=4",
               "--rules", "dp+tp", "--output", out, *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    rows = [tuple(map(float, m.groups())) for m in PATTERN.finditer(done.stdout)]
    with open(os.path.join(out, "loss.csv")) as f:
        seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    return rows, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partita", default="build/bin/partita")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=256)
    args = parser.parse_args()
    steps = str(args.steps)
    with tempfile.TemporaryDirectory(dir=".") as scratch:
        # Training without checkpoints, and with one every 2 steps.
        _, plain = train(args, scratch, "plain", ["--steps", steps])
        rows, checkpointed = train(
            args, scratch, "every2",
            ["--steps", steps, "--checkpoint-dir",
             os.path.join(scratch, "ck"), "--checkpoint-every", "2",
             "--keep", "2"])
        # One checkpoint after the last step, the machine otherwise idle.
        alone = []
        for r in range(3):
            last, _ = train(args, scratch, f"alone{r}",
                            ["--steps", "1", "--checkpoint-dir",
                             os.path.join(scratch, f"alone{r}.ck")])
            alone.append(last[-1][2])
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
        alone_ms = statistics.median(alone)
        during_ms = statistics.median(r[2] for r in rows)
        pause_ms = statistics.median(r[3] for r in rows)
        peer_ms = statistics.median(peer) * 1e3
        base = statistics.median(plain[1:])
        with_ckpt = statistics.median(checkpointed[1:])
        print(f"GPT {args.layers} layers, D {args.d_model}, dp+tp on "
              f"data=2,model=4 (cpu:8), {args.steps} steps")
        print(f"checkpoint size: {size:,} bytes")
        print(f"write, the machine otherwise idle: median {alone_ms:.1f} ms "
              f"({size / alone_ms / 1e3:.0f} MB/s); the same bytes as one "
              f"fsynced file: {peer_ms:.1f} ms ({size / peer_ms / 1e3:.0f} "
              f"MB/s); checkpoint / file = {alone_ms / peer_ms:.2f}")
        print(f"write in the background while training: median "
              f"{during_ms:.1f} ms")
        print(f"training paused to hand a checkpoint over: median "
              f"{pause_ms:.2f} ms")
        print(f"step time: {base * 1e3:.1f} ms without checkpoints, "
              f"{with_ckpt * 1e3:.1f} ms with one every 2 steps (median; "
              f"{with_ckpt / base:.2f}x)")


if __name__ == "__main__":
    main()
