"""Runs every example the help pages of partita show (the lines after
"Examples:" in `partita --help` and `partita <command> --help`), each in a
scratch directory that sees the repository's docs/ and test/, and fails on
the first that does not exit 0. Also checks that every command's page has
examples.

    python3 run-help-examples.py BIN_DIR SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

COMMANDS = ["gen", "import", "compile", "explain", "show", "run", "train",
            "plan", "calibrate", "checkpoint"]


def examples(partita, command):
    args = [partita] + ([command] if command else []) + ["--help"]
    page = subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout
    if "\nExamples:\n" not in page:
        sys.exit(f"error: 'partita {command} --help' has no examples")
    lines = page.split("\nExamples:\n", 1)[1].splitlines()
    found = [l.strip() for l in lines if l.startswith("  partita ")]
    if not found:
        sys.exit(f"error: 'partita {command} --help' lists no runnable "
                 "example")
    return found


def main():
    bin_dir, source = (os.path.abspath(a) for a in sys.argv[1:3])
    partita = os.path.join(bin_dir, "partita")
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    count = 0
    with tempfile.TemporaryDirectory(prefix="help-examples-") as work:
        for name in ("docs", "test"):
            os.symlink(os.path.join(source, name), os.path.join(work, name))
        for command in [""] + COMMANDS:
            for example in examples(partita, command):
                done = subprocess.run(example, shell=True, cwd=work, env=env,
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"error: example of 'partita {command} --help' "
                             f"failed (exit {done.returncode}): {example}\n"
                             f"{done.stderr[-800:]}")
                count += 1
    print(f"{count} examples ran")


if __name__ == "__main__":
    main()
