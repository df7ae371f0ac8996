#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Downloads, without installing, the Debian packages that scripts/gpu-check.sh's build needs beyond
# what a CUDA machine image brings (the CUDA toolkit, CMake, a C++ compiler, Python 3): fmt,
# GoogleTest, BLIS's serial build and nlohmann-json, as .deb files in DIR. For a GPU machine with
# no package registry: copy DIR there and run `scripts/gpu-check.sh --deps=DIR`, which unpacks them
# into its build folder. The packages are Debian 12's (x86-64); their libraries need glibc 2.34 or
# newer (Debian 12, Ubuntu 22.04 and later). Gloo is left out: gpu-check builds without
# multi-process runs.
# Usage: scripts/gpu-deps.sh DIR   (on Debian 12, where apt-get can reach its package lists)
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
packages=(libfmt-dev libfmt9 libgtest-dev libgmock-dev libblis-serial-dev libblis4-serial
          nlohmann-json3-dev)
mkdir -p "$1"
cd "$1"
rm -f ./*.deb
apt-get download "${packages[@]}"
echo "gpu-deps: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1), in $(pwd)"
