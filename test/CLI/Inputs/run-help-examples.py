"""Runs every example the help pages of partita and partita-exec show (the
lines after "Examples:" in `TOOL --help` and `TOOL <command> --help`), each
in a scratch directory that sees the repository's docs/ and test/, and
fails on the first that does not exit 0. Also checks that every command's
page has examples.

    python3 run-help-examples.py BIN_DIR SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

COMMANDS = {
    "partita": ["gen", "import", "compile", "explain", "show", "run", "train",
                "plan", "calibrate", "checkpoint", "generate"],
    "partita-exec": ["layout", "shard", "assemble", "info", "describe",
                     "train", "run"],
}


def examples(tool, command):
    args = [tool] + ([command] if command else []) + ["--help"]
    name = os.path.basename(tool) + (" " + command if command else "")
    page = subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout
    if "\nExamples:\n" not in page:
        sys.exit(f"error: '{name} --help' has no examples")
    lines = page.split("\nExamples:\n", 1)[1].splitlines()
    found = [l.strip() for l in lines
             if l.startswith("  partita ") or l.startswith("  partita-exec ")]
    if not found:
        sys.exit(f"error: '{name} --help' lists no runnable example")
    return found


def main():
    bin_dir, source = (os.path.abspath(a) for a in sys.argv[1:3])
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    count = 0
    with tempfile.TemporaryDirectory(prefix="help-examples-") as work:
        for name in ("docs", "test"):
            os.symlink(os.path.join(source, name), os.path.join(work, name))
        for tool, commands in COMMANDS.items():
            for command in [""] + commands:
                for example in examples(os.path.join(bin_dir, tool), command):
                    done = subprocess.run(example, shell=True, cwd=work,
                                          env=env, capture_output=True,
                                          text=True)
                    if done.returncode != 0:
                        sys.exit(f"error: example of '{tool} {command} "
                                 f"--help' failed (exit {done.returncode}): "
                                 f"{example}\n{done.stderr[-800:]}")
                    count += 1
    print(f"{count} examples ran")


if __name__ == "__main__":
    main()
