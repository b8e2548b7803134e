#!/usr/bin/env bash
# Fails when a library includes a header of a layer it may not depend on, or
# links a Partita library of such a layer. The table below is the one in
# docs/Overview.md ("Layers"); keep both the same.
#
# Each row: a layer, the source folders that make it (headers and sources),
# and the layers it may use besides itself. A file's `#include "partita/..."`
# lines and its library's LINK_LIBS (Partita* names) are checked against the
# row. System and MLIR/LLVM headers are not this script's business; the
# runtime-only build (tools/check-runtime-only.sh) proves the runtime and the
# algebra build without LLVM.
#
# Usage: tools/check-layers.sh [ROOT]   (ROOT: the tree to check, default the
# repository this script is in; the layer-check test points it elsewhere).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# layer | folders (space separated) | allowed layers (space separated)
LAYERS=(
  "sharding|include/partita/Sharding lib/Sharding|"
  "runtime|include/partita/Runtime lib/Runtime|sharding"
  "dialect|include/partita/Dialect/Partita/IR lib/Dialect/Partita/IR|sharding"
  "dialect-utils|include/partita/Dialect/Partita/Utils lib/Dialect/Partita/Utils|dialect sharding"
  "transforms|include/partita/Transforms lib/Transforms|dialect-utils dialect sharding"
  "analysis|include/partita/Analysis lib/Analysis|dialect-utils dialect sharding"
  "codegen|include/partita/Codegen lib/Codegen|analysis runtime dialect-utils dialect sharding"
  "models|include/partita/Models lib/Models|dialect sharding"
  "conversion|include/partita/Conversion lib/Conversion|dialect-utils dialect sharding"
  "pipelining|include/partita/Pipelining lib/Pipelining|codegen models transforms analysis runtime dialect-utils dialect sharding"
  "registration|include/partita/Partita.h include/partita/Registration.h lib/Registration|transforms analysis dialect-utils dialect sharding"
  "driver|include/partita/Driver lib/Driver|registration codegen analysis transforms models conversion runtime dialect-utils dialect sharding"
)

# Which layer an included header ("partita/X/...") or a library belongs to.
layer_of_header() {
  case "$1" in
    partita/Sharding/*) echo sharding ;;
    partita/Runtime/*) echo runtime ;;
    partita/Dialect/Partita/IR/*) echo dialect ;;
    partita/Dialect/Partita/Utils/*) echo dialect-utils ;;
    partita/Transforms/*) echo transforms ;;
    partita/Analysis/*) echo analysis ;;
    partita/Codegen/*) echo codegen ;;
    partita/Models/*) echo models ;;
    partita/Conversion/*) echo conversion ;;
    partita/Pipelining/*) echo pipelining ;;
    partita/Partita.h | partita/Registration.h) echo registration ;;
    partita/Driver/*) echo driver ;;
    *) echo unknown ;;
  esac
}
layer_of_library() {
  case "$1" in
    PartitaSharding) echo sharding ;;
    PartitaRuntime | PartitaRuntimeMPI | PartitaRuntimeCUDA) echo runtime ;;
    PartitaDialect) echo dialect ;;
    PartitaDialectUtils) echo dialect-utils ;;
    PartitaTransforms) echo transforms ;;
    PartitaAnalysis) echo analysis ;;
    PartitaCodegen) echo codegen ;;
    PartitaModels) echo models ;;
    PartitaStableHLOToPartita) echo conversion ;;
    PartitaPipelining) echo pipelining ;;
    PartitaRegistration) echo registration ;;
    PartitaDriver) echo driver ;;
    *) echo unknown ;;
  esac
}

errors=0
checked=0
for row in "${LAYERS[@]}"; do
  IFS='|' read -r layer folders allowed <<<"$row"
  allowed=" $layer $allowed "
  for folder in $folders; do
    [ -e "$folder" ] || { echo "error: $folder (layer $layer) does not exist" >&2; errors=$((errors + 1)); continue; }
    while IFS= read -r file; do
      checked=$((checked + 1))
      while IFS=: read -r line header; do
        target=$(layer_of_header "$header")
        if [ "$target" = unknown ]; then
          echo "$file:$line: error: \"$header\" belongs to no layer in tools/check-layers.sh" >&2
          errors=$((errors + 1))
        elif [[ "$allowed" != *" $target "* ]]; then
          echo "$file:$line: error: layer '$layer' includes \"$header\" of layer '$target' (allowed:$allowed)" >&2
          errors=$((errors + 1))
        fi
      done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"partita/' "$file" |
               sed -E 's/^([0-9]+):.*"(partita\/[^"]+)".*/\1:\2/')
    done < <(find "$folder" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.td' \))
    # The libraries a CMakeLists.txt in this layer links.
    while IFS= read -r cmake; do
      while IFS=: read -r line library; do
        target=$(layer_of_library "$library")
        if [ "$target" = unknown ]; then
          continue # generated targets (PartitaIncGen, ...) and other names
        elif [[ "$allowed" != *" $target "* ]]; then
          echo "$cmake:$line: error: layer '$layer' links $library of layer '$target' (allowed:$allowed)" >&2
          errors=$((errors + 1))
        fi
      done < <(grep -noE '\bPartita[A-Za-z]+\b' "$cmake" | grep -v 'IncGen$')
    done < <(find "$folder" -name CMakeLists.txt)
  done
done

if [ "$errors" -ne 0 ]; then
  echo "check-layers: $errors violation(s); the allowed dependencies are in docs/Overview.md" >&2
  exit 1
fi
echo "check-layers: OK ($checked files, ${#LAYERS[@]} layers)"
