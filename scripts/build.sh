#!/usr/bin/env bash
# Configures and builds spmd into a build folder.
# Usage: scripts/build.sh [--sanitize=thread|address] [--build-dir=DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
build_dir=""
extra=()
for arg in "$@"; do
  case "$arg" in
    --sanitize=*) sanitize="${arg#--sanitize=}" ;;
    --build-dir=*) build_dir="${arg#--build-dir=}" ;;
    *) extra+=("$arg") ;;
  esac
done
if [ -z "$build_dir" ]; then
  build_dir="build${sanitize:+-$sanitize}"
fi

jobs="${SPMD_JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -DSPMD_SANITIZE="$sanitize" "${extra[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"
