#!/usr/bin/env bash
# Installs every Debian package Partita's build and tests need. Idempotent:
# when everything is present it changes nothing. Uses sudo when not root.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache lld g++ python3
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  nlohmann-json3-dev catch2 libopenblas-dev libopenmpi-dev openmpi-bin
  libjemalloc-dev
  python3-dev python3-venv python3-numpy python3-pytest pybind11-dev
  chromium clang libclang-rt-14-dev clang-22 libclang-rt-22-dev
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
