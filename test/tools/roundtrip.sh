#!/bin/sh
# Shards a .npy file into a directory, assembles it back, and checks that the
# result is byte-identical to the input and that `info` reads the directory.
#
#   roundtrip.sh PARTITA_EXEC IN.npy WORKDIR SHARD_OPTION...
set -eu
exec_tool=$1 input=$2 work=$3
shift 3
rm -rf "$work"
mkdir -p "$work"
"$exec_tool" shard "$input" "$@" -o "$work/sharded"
test -f "$work/sharded/index.json"
"$exec_tool" info "$work/sharded" | grep -q 'sharded array'
"$exec_tool" assemble "$work/sharded" -o "$work/out.npy"
cmp "$input" "$work/out.npy"
# Sharding again into the same directory replaces it.
"$exec_tool" shard "$input" "$@" -o "$work/sharded"
"$exec_tool" assemble "$work/sharded" -o - > "$work/stdout.npy"
cmp "$input" "$work/stdout.npy"
rm -rf "$work"
echo "round trip ok: $input $*"
