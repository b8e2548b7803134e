"""Checks `partita generate`'s output against its prompts.

Each output line must be 'prompt tokens | new tokens', the prompt the
file's line (up to its '|'), every token in [0, vocab). Options:
  --rule F      at least F of the new tokens follow the synthetic rule
                (next = 3 * previous + 1 mod vocab)
  --eos T       no new token after T
  --most N      at most N new tokens per line
  --exactly N   exactly N new tokens per line
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("prompts")
    parser.add_argument("--vocab", type=int, required=True)
    parser.add_argument("--rule", type=float)
    parser.add_argument("--eos", type=int)
    parser.add_argument("--most", type=int)
    parser.add_argument("--exactly", type=int)
    args = parser.parse_args()
    prompts = [line.split("|")[0].split() for line in open(args.prompts)
               if line.strip()]
    lines = open(args.output).read().splitlines()
    if len(lines) != len(prompts):
        sys.exit(f"{len(lines)} lines for {len(prompts)} prompts")
    followed = total = 0
    for number, (line, prompt) in enumerate(zip(lines, prompts), 1):
        head, _, tail = line.partition("|")
        if head.split() != prompt:
            sys.exit(f"line {number}: prompt {head.split()} != {prompt}")
        new = [int(t) for t in tail.split()]
        if any(not 0 <= t < args.vocab for t in new):
            sys.exit(f"line {number}: a token outside [0, {args.vocab})")
        if args.eos is not None and args.eos in new[:-1]:
            sys.exit(f"line {number}: tokens after --eos {args.eos}")
        if args.most is not None and len(new) > args.most:
            sys.exit(f"line {number}: {len(new)} new tokens > {args.most}")
        if args.exactly is not None and len(new) != args.exactly:
            sys.exit(f"line {number}: {len(new)} new tokens != {args.exactly}")
        previous = int(prompt[-1])
        for token in new:
            followed += token == (3 * previous + 1) % args.vocab
            total += 1
            previous = token
    if args.rule is not None and followed < args.rule * total:
        sys.exit(f"{followed}/{total} new tokens follow the rule, "
                 f"fewer than {args.rule:.0%}")
    print(f"{len(lines)} lines, {total} new tokens, {followed} follow the rule")


if __name__ == "__main__":
    main()
