"""Runs the RLHF demo and checks what it must show.

On the post-training demo's task (docs/examples/sft: reverse five tokens,
then EOS), from a briefly pre-trained GPT (250 steps: it reverses some
prompts when sampled at temperature 1): GRPO and PPO with the task's rule
as the reward, whose sampled reward must rise; then GRPO with a
length-biased reward (--length-bonus), without a KL penalty and with one,
which must show the policy learning to exploit length (reward hacking:
longer responses, a falling task score) and the KL leash limiting it.
docs/Training.md, "RLHF". Run once per CPU GEMM kernel, as
tools/training-chain.py does: the properties hold with margins on every
kernel, not on one trajectory.

    python3 tools/rlhf-demo.py [--bin build/bin] [--kernels all]
        [--layout "--mesh data=2,model=4 --rules dp+tp"] [--seed S]

Exit status 0 when every run holds every property, 1 otherwise.
"""
import argparse
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "docs", "examples", "sft")
_spec = importlib.util.spec_from_file_location(
    "training_chain", os.path.join(HERE, "training-chain.py"))
chain = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chain)

# The demo's flags, as docs/Training.md writes them.
START = ("--data pretrain.bin --batch 32 --steps 250 --lr 3e-3 "
         "--lr-schedule cosine --warmup 50 --min-lr 3e-4 --checkpoint-dir start")
RL = ("--data train.txt --init-from start --reward-rule reverse --eos 3 "
      "--max-new-tokens 8 --batch 32 --steps 100 --lr 3e-3")
RUNS = (
    ("start", START),
    ("grpo", "--objective grpo " + RL),
    ("ppo", "--objective ppo " + RL),
    ("hack", "--objective grpo " + RL.replace("--max-new-tokens 8",
                                              "--max-new-tokens 9") +
     " --length-bonus 0.1 --kl-beta 0"),
    ("leash", "--objective grpo " + RL.replace("--max-new-tokens 8",
                                               "--max-new-tokens 9") +
     " --length-bonus 0.1 --kl-beta 0.3"),
)


def mean(values):
    return sum(values) / len(values)


def run_demo(partita, layout, seed, env, work):
    """Runs the demo in `work`; returns each RL run's rl.csv columns."""
    for name in ("pretrain.bin", "train.txt", "heldout.txt"):
        shutil.copy(os.path.join(DATA, name), work)
    common = ["--model", "gpt", "--seed", str(seed)] + shlex.split(layout)
    figures = {}
    for stage, flags in RUNS:
        command = [partita, "train"] + common + shlex.split(flags) + [
            "--output", stage + ".out"]
        done = subprocess.run(command, cwd=work, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise RuntimeError(f"{stage}: exit {done.returncode}: "
                               f"{done.stderr.strip()[-400:]}")
        if stage == "start":
            continue
        path = os.path.join(work, stage + ".out", "rl.csv")
        figures[stage] = {key: chain.column(path, key)
                          for key in ("reward", "task", "kl", "length")}
    return figures


def ends(column):
    """(mean of the first ten rollouts, mean of the last ten)."""
    return mean(column[:10]), mean(column[-10:])


def violations(f):
    """What `f` breaks of the demo's properties (docs/Training.md)."""
    broken = []

    def need(ok, what):
        if not ok:
            broken.append(what)

    for run in ("grpo", "ppo"):
        first, last = ends(f[run]["reward"])
        need(last > first + 0.15,
             f"{run}'s reward goes {first:.3f} -> {last:.3f}: it does not "
             "rise by 0.15")
    hack, leash = f["hack"], f["leash"]
    # The length-biased run: judged against its first rollout (the policy
    # it starts from), and against the plain GRPO run's task score.
    length = hack["length"][0], ends(hack["length"])[1]
    need(ends(hack["reward"])[1] > hack["reward"][0],
         f"the length-biased reward goes {hack['reward'][0]:.3f} -> "
         f"{ends(hack['reward'])[1]:.3f}: it does not rise")
    need(length[1] > 8.5 and length[1] > length[0] + 2,
         f"without a KL penalty the length goes {length[0]:.2f} -> "
         f"{length[1]:.2f}: not to the limit (9)")
    hacked, plain = ends(hack["task"])[1], ends(f["grpo"]["task"])[1]
    need(hacked < plain - 0.1,
         f"the length-biased run ends at a task score of {hacked:.3f}, not "
         f"0.1 below the plain run's {plain:.3f} (no hacking)")
    leashed = ends(leash["length"])[1]
    need(leashed < length[1] - 0.5,
         f"with the KL penalty the length ends at {leashed:.2f}, not 0.5 "
         f"below the unpenalised {length[1]:.2f}")
    need(ends(leash["kl"])[1] < ends(hack["kl"])[1],
         "the KL penalty does not keep the policy closer to its start")
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "build",
                                                      "bin"))
    parser.add_argument("--kernels", default="all")
    parser.add_argument("--layout", default="")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    partita = os.path.join(args.bin, "partita")
    if not os.access(partita, os.X_OK):
        sys.exit(f"error: no partita at {partita} (build first, or give "
                 "--bin)")
    print(f"layout: {args.layout or 'defaults'}, seed {args.seed}; sampled "
          "reward, first ten rollouts -> last ten")
    print(f"{'kernel':12s} {'GRPO reward':>15s} {'PPO reward':>15s} "
          f"{'GRPO task':>10s} {'hack length':>14s} {'hack task':>9s} "
          f"{'leash length':>12s} {'hack KL':>8s} {'leash KL':>8s}")
    return chain.run_on_kernels(
        args.kernels, "rlhf-",
        lambda env, work: run_demo(partita, args.layout, args.seed, env,
                                   work),
        row, violations)


def row(f):
    """The table's row of one kernel's figures (after its name)."""
    def pair(run, key, digits=3):
        a, b = ends(f[run][key])
        return f"{a:.{digits}f} -> {b:.{digits}f}"

    def last(run, key, digits=3):
        return f"{ends(f[run][key])[1]:.{digits}f}"
    return (f"{pair('grpo', 'reward'):>15s} {pair('ppo', 'reward'):>15s} "
            f"{last('grpo', 'task'):>10s} "
            f"{f['hack']['length'][0]:5.2f} -> {last('hack', 'length', 2)} "
            f"{last('hack', 'task'):>9s} {last('leash', 'length', 2):>12s} "
            f"{last('hack', 'kl'):>8s} {last('leash', 'kl'):>8s}")


if __name__ == "__main__":
    sys.exit(main())
