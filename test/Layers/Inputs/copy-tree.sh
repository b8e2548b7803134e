#!/usr/bin/env bash
# Copies the C/C++ sources and CMakeLists.txt files of every folder the layer
# table names (include, lib, tools, test, bench) from SRC to DST, for the
# layer test to break on purpose. Usage: copy-tree.sh SRC DST
set -euo pipefail
src=$1
dst=$2
rm -rf "$dst"
mkdir -p "$dst"
cd "$src"
find include lib tools test bench -type f \( -name '*.h' -o -name '*.cpp' \
  -o -name '*.cu' -o -name '*.cuh' -o -name '*.td' -o -name CMakeLists.txt \) |
  while IFS= read -r f; do
    mkdir -p "$dst/$(dirname "$f")"
    cp "$f" "$dst/$f"
  done
