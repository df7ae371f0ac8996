#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing spmd needs on Debian 12, skipping packages already present.
# Usage: scripts/setup.sh   (toolchain, GoogleTest, fmt, BLIS's serial build for the CPU
#                            backend's matmul; Gloo for multi-process runs; OpenMPI for the
#                            benchmarks and mpirun; Clang 14 LibTooling for spmd-migrate; pkgconf
#                            for the pkg-config consumer test; NumPy, which the .npy test checks
#                            files against and kernels_bench times matmul against; libFuzzer's
#                            runtime for scripts/fuzz.sh)
set -euo pipefail

packages=(cmake make g++ libgtest-dev libgmock-dev libfmt-dev libblis-serial-dev
          nlohmann-json3-dev libgloo-dev
          libopenmpi-dev openmpi-bin
          clang-14 llvm-14-dev libclang-14-dev libclang-cpp14-dev clang-tools-14 pkgconf
          python3-numpy libclang-rt-14-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
