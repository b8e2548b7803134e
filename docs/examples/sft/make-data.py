"""Writes the fine-tuning demo's data (docs/Training.md, "Fine-tuning").

The task: a prompt of BOS, five tokens in [10, 60) and SEP asks for the five
tokens reversed, then EOS (BOS = 1, SEP = 2, EOS = 3). Three files, from a
fixed seed:

  pretrain.bin  int32 little-endian tokens: 2,000 whole examples (prompt and
                response), each padded with 0 to 17 tokens, so that each
                window `partita train --data` reads (seq + 1 = 17 tokens
                with the default GPT) holds one example
  train.txt     512 examples as 'prompt tokens | response tokens' lines,
                for `--objective sft --data`
  heldout.txt   64 other examples, for `--eval-data`
  prefs.txt     256 preference pairs 'prompt | chosen | rejected': chosen
                the reversal, rejected the tokens in prompt order, for
                `--objective dpo --data`
  prefs-heldout.txt  32 more pairs, for DPO's `--eval-data`

    python3 docs/examples/sft/make-data.py [DIR]
"""
import os
import random
import struct
import sys

BOS, SEP, EOS = 1, 2, 3
WINDOW = 17


def example(rng):
    body = [rng.randrange(10, 60) for _ in range(5)]
    return [BOS, *body, SEP], [*reversed(body), EOS]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
    rng = random.Random(20261204)
    stream = []
    for _ in range(2000):
        prompt, response = example(rng)
        whole = prompt + response
        stream += whole + [0] * (WINDOW - len(whole))
    with open(os.path.join(out, "pretrain.bin"), "wb") as f:
        f.write(struct.pack(f"<{len(stream)}i", *stream))
    for name, count in (("train.txt", 512), ("heldout.txt", 64)):
        with open(os.path.join(out, name), "w") as f:
            for _ in range(count):
                prompt, response = example(rng)
                f.write(" ".join(map(str, prompt)) + " | " +
                        " ".join(map(str, response)) + "\n")
    for name, count in (("prefs.txt", 256), ("prefs-heldout.txt", 32)):
        with open(os.path.join(out, name), "w") as f:
            for _ in range(count):
                prompt, chosen = example(rng)
                rejected = prompt[1:-1] + [EOS]
                f.write(" | ".join(" ".join(map(str, part))
                                   for part in (prompt, chosen, rejected))
                        + "\n")


if __name__ == "__main__":
    main()
