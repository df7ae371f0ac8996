#!/usr/bin/env bash
# Installs what is missing, builds spmd and runs the main demo on 8 CPU devices.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh -DSPMD_BUILD_TESTS=OFF -DSPMD_BUILD_REWRITER=OFF
SPMD_CPU_DEVICES=8 build/examples/mesh_basics/mesh_basics
