"""SFT, DPO, a reward model, PPO and GRPO on one task, in one run.

The post-training demo's task (docs/examples/sft: reverse five tokens, then
EOS), every method starting from the same briefly pre-trained GPT (250
steps; docs/Training.md, "RLHF"), on cpu:8 with the default layout (or
--layout). For each: the train step's planned bytes per device, the
process's peak resident memory, seconds per step (the train step's median;
for PPO and GRPO plus each iteration's generation and scoring), and the
result on held-out prompts: the task score (the fraction of the expected
tokens in place) of greedy and of sampled (temperature 1) responses
generated from the run's last checkpoint; DPO's held-out preference and the
reward model's accuracy as they print them.

    python3 bench/post_training.py [--partita build/bin/partita] [--layout ""]
"""
import argparse
import csv
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "docs", "examples", "sft")
START = ("--data pretrain.bin --batch 32 --steps 250 --lr 3e-3 "
         "--lr-schedule cosine --warmup 50 --min-lr 3e-4 --checkpoint-dir start")
RL = ("--data train.txt --init-from start --reward-rule reverse --eos 3 "
      "--max-new-tokens 8 --batch 32 --steps 100 --lr 3e-3")
METHODS = [
    ("SFT", "sft", "--objective sft --data train.txt --init-from start "
     "--steps 60 --lr 3e-3 --checkpoint-dir sft"),
    ("DPO", "dpo", "--objective dpo --data prefs.txt --reference start "
     "--steps 40 --lr 3e-3 --eval-every 40 --eval-data prefs-heldout.txt "
     "--checkpoint-dir dpo"),
    ("reward model", "rm", "--objective reward --data prefs.txt --init-from "
     "start --steps 200 --batch 16 --lr 1e-3 --eval-every 200 --eval-data "
     "prefs-heldout.txt --checkpoint-dir rm"),
    ("PPO", "ppo", "--objective ppo " + RL + " --checkpoint-dir ppo"),
    ("GRPO", "grpo", "--objective grpo " + RL + " --checkpoint-dir grpo"),
]


def run_measured(command, cwd):
    with tempfile.TemporaryFile(mode="w+") as out:
        child = subprocess.Popen(command, cwd=cwd, stdout=out,
                                 stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        out.seek(0)
        text = out.read()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"error: {' '.join(command)}:\n{text[-800:]}")
        return text, usage.ru_maxrss * 1024


def task_score(path, prompts):
    total = 0.0
    lines = open(path).read().splitlines()
    for line, prompt in zip(lines, prompts):
        response = [int(t) for t in line.split("|")[1].split()]
        expected = list(reversed(prompt[1:-1])) + [3]
        total += sum(1 for i in range(min(len(response), len(expected)))
                     if response[i] == expected[i]) / len(expected)
    return total / len(lines)


def held_out(partita, work, checkpoint):
    prompts = [[int(t) for t in line.split("|")[0].split()]
               for line in open(os.path.join(work, "heldout.txt"))]
    scores = []
    for sampling in ([], ["--temperature", "1", "--seed", "0"]):
        out = os.path.join(work, "generated.txt")
        subprocess.run([partita, "generate", "--checkpoint", checkpoint,
                        "--prompts", "heldout.txt", "--eos", "3",
                        "--max-new-tokens", "8", "-o", out] + sampling,
                       cwd=work, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        scores.append(task_score(out, prompts))
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partita",
                        default=os.path.join(ROOT, "build", "bin", "partita"))
    parser.add_argument("--layout", default="")
    options = parser.parse_args()
    partita = options.partita
    with tempfile.TemporaryDirectory(prefix="post-training-") as work:
        for name in ("pretrain.bin", "train.txt", "heldout.txt", "prefs.txt",
                     "prefs-heldout.txt"):
            shutil.copy(os.path.join(DATA, name), work)
        common = ["--model", "gpt"] + shlex.split(options.layout)
        run_measured([partita, "train"] + common + shlex.split(START) +
                     ["--output", "start.out"], work)
        greedy, sampled = held_out(partita, work, "start")
        print(f"# layout: {options.layout or 'defaults (cpu:8, dp)'}; the "
              f"start (250 pre-training steps): held-out task {greedy:.3f} "
              f"greedy, {sampled:.3f} sampled")
        print("| method | steps | planned bytes per device (train step) | "
              "peak resident MiB | s per step | held-out task, greedy | "
              "held-out task, sampled | held-out preference |")
        print("|---|---|---|---|---|---|---|---|")
        for label, name, flags in METHODS:
            text, rss = run_measured([partita, "train"] + common +
                                     shlex.split(flags) +
                                     ["--output", name + ".out"], work)
            planned = re.search(r"(\d+) bytes per device planned", text)
            with open(os.path.join(work, name + ".out", "loss.csv")) as f:
                seconds = [float(r["seconds"]) for r in csv.DictReader(f)]
            step = statistics.median(seconds)
            rl = os.path.join(work, name + ".out", "rl.csv")
            if os.path.exists(rl):
                with open(rl) as f:
                    rows = list(csv.DictReader(f))
                step += statistics.median(float(r["generate_s"]) +
                                          float(r["score_s"]) for r in rows)
            preference = ""
            found = re.findall(r"chosen preferred in (\d+/\d+)", text) or \
                re.findall(r"held-out accuracy ([0-9.]+)", text)
            if found:
                preference = found[-1]
            if name == "rm":
                scores = ("", "")
            else:
                scores = tuple(f"{s:.3f}" for s in held_out(partita, work,
                                                            name))
            steps = len(seconds)
            print(f"| {label} | {steps} | {planned.group(1) if planned else ''}"
                  f" | {rss / 2**20:.0f} | {step * 1e3:.1f} ms | {scores[0]} | "
                  f"{scores[1]} | {preference} |", flush=True)


if __name__ == "__main__":
    main()
