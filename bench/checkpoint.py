"""Checkpoints: their size, the background write, and how long training
pauses, against writing the same bytes straight to disk.

Trains a GPT (default: 4 layers, D = 256, AdamW, dp+tp on data=2,model=4,
cpu:8) for --steps steps without checkpoints and with one every 2 steps, and
reads from the runs: each checkpoint's bytes, its write time in the
background, the time training paused to hand it over, and the median step
time of both runs (on 2 cores the background write competes with the
devices' threads); and the write time of one checkpoint after one step,
written by one process and by 2 and 4 processes under mpirun (each its
devices' blocks). The peer, in the same run, interleaved with those
(this machine's disk stalls now and then for ~0.1 s, so single runs
mislead): the same number of bytes written as one file and fsynced by
Python. Throughput ratios are the peer's time over the checkpoint's.

    python3 bench/checkpoint.py [--partita build/bin/partita] [--steps 12]
                                [--repeats 7] [--no-mpi]
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


PATTERN = re.compile(r"checkpoint: .*step-(\d+) written \((\d+) bytes\) "
                     r"in ([0-9.]+) ms in the background; training "
                     r"paused ([0-9.]+) ms")


def train(args, scratch, name, extra, processes=1):
    out = os.path.join(scratch, name)
    command = [args.partita, "train", "--model", "gpt", "--layers",
               str(args.layers), "--d-model", str(args.d_model),
               "--devices", "cpu:8", "--mesh", "data=2,model=4",
               "--rules", "dp+tp", "--output", out, *extra]
    if processes > 1:
        command = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np",
                   str(processes), *command, "--distributed"]
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
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-mpi", action="store_true",
                        help="one process only (no mpirun)")
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
        size = int(rows[-1][1])
        payload = os.urandom(size)

        def peer_write():
            # The peer: the same bytes as one file, written and fsynced.
            path = os.path.join(scratch, "peer.bin")
            start = time.perf_counter()
            with open(path, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.remove(path)
            return time.perf_counter() - start

        # One checkpoint after one step, by 1, 2 and 4 processes, each run
        # beside a peer write.
        counts = [1] if args.no_mpi else [1, 2, 4]
        alone = {p: [] for p in counts}
        peer = []
        for r in range(args.repeats):
            for p in counts:
                last, _ = train(args, scratch, f"alone{p}.{r}",
                                ["--steps", "1", "--checkpoint-dir",
                                 os.path.join(scratch, f"alone{p}.{r}.ck")],
                                processes=p)
                alone[p].append(last[-1][2])
                shutil.rmtree(os.path.join(scratch, f"alone{p}.{r}.ck"))
                peer.append(peer_write())
        alone_ms = statistics.median(alone[1])
        during_ms = statistics.median(r[2] for r in rows)
        pause_ms = statistics.median(r[3] for r in rows)
        peer_ms = statistics.median(peer) * 1e3
        base = statistics.median(plain[1:])
        with_ckpt = statistics.median(checkpointed[1:])
        print(f"GPT {args.layers} layers, D {args.d_model}, dp+tp on "
              f"data=2,model=4 (cpu:8), {args.steps} steps")
        print(f"checkpoint size: {size:,} bytes")
        print(f"the same bytes as one fsynced file: median {peer_ms:.1f} ms "
              f"({size / peer_ms / 1e3:.0f} MB/s) over {len(peer)} writes")
        for p in counts:
            ms = statistics.median(alone[p])
            print(f"written by {p} process{'es' if p > 1 else ''} after one "
                  f"step: median {ms:.1f} ms ({size / ms / 1e3:.0f} MB/s), "
                  f"throughput {peer_ms / ms:.2f}x the file's "
                  f"(min {min(alone[p]):.1f} ms)")
        print(f"write in the background while training: median "
              f"{during_ms:.1f} ms")
        print(f"training paused to hand a checkpoint over: median "
              f"{pause_ms:.2f} ms")
        print(f"step time: {base * 1e3:.1f} ms without checkpoints, "
              f"{with_ckpt * 1e3:.1f} ms with one every 2 steps (median; "
              f"{with_ckpt / base:.2f}x)")


if __name__ == "__main__":
    main()
