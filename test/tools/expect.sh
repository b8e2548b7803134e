#!/bin/sh
# Runs a command and checks its exit code and one of its output streams.
#
#   expect.sh CODE STREAM PATTERN COMMAND [ARG...]
#
# CODE is the exit code the command must return; STREAM is stdout or stderr;
# PATTERN is an extended regular expression some line of that stream must
# match. The captured streams are printed when a check fails.
set -u
if [ $# -lt 4 ]; then
  echo "usage: expect.sh CODE stdout|stderr PATTERN COMMAND [ARG...]" >&2
  exit 2
fi
code=$1 stream=$2 pattern=$3
shift 3
command_text="$*"
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT
"$@" >"$scratch/stdout" 2>"$scratch/stderr"
actual=$?
fail() {
  echo "FAILED: $*" >&2
  echo "--- command: $command_text" >&2
  echo "--- stdout:" >&2; cat "$scratch/stdout" >&2
  echo "--- stderr:" >&2; cat "$scratch/stderr" >&2
  exit 1
}
[ "$actual" -eq "$code" ] || fail "exit code $actual, expected $code"
grep -Eq -- "$pattern" "$scratch/$stream" ||
  fail "no line of $stream matches '$pattern'"
# An error must be reported on stderr, never only as an exit code.
if [ "$code" -ne 0 ]; then
  grep -q '^error: ' "$scratch/stderr" || fail "no 'error:' line on stderr"
fi
exit 0
