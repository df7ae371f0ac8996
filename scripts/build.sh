#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures spmd with a preset of CMakePresets.json and builds it.
# Usage: scripts/build.sh [--preset=release|debug|asan|tsan] [--sanitize=thread|address]
#                         [--build-dir=DIR] [extra cmake arguments...]
#   --preset=NAME       default release (build/); debug, asan and tsan build in build-NAME/
#   --sanitize=thread   the same as --preset=tsan; --sanitize=address is --preset=asan
#   --build-dir=DIR     build in DIR instead of the preset's folder
# Every run sets all of the preset's options again (tests, examples, sanitizer, ...), so what
# configured the folder before does not matter; extra -D arguments win over the preset.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=release
build_dir=""
extra=()
for arg in "$@"; do
  case "$arg" in
    --preset=*) preset="${arg#--preset=}" ;;
    --sanitize=thread) preset=tsan ;;
    --sanitize=address) preset=asan ;;
    --sanitize=*) echo "build.sh: --sanitize must be thread or address, got '${arg#--sanitize=}'" >&2
                  exit 2 ;;
    --build-dir=*) build_dir="${arg#--build-dir=}" ;;
    *) extra+=("$arg") ;;
  esac
done
case "$preset" in
  release) default_dir=build ;;
  debug | asan | tsan) default_dir="build-$preset" ;;
  *) echo "build.sh: unknown preset '$preset' (release, debug, asan, tsan)" >&2; exit 2 ;;
esac
build_dir="${build_dir:-$default_dir}"

jobs="${SPMD_JOBS:-$(nproc)}"
cmake --preset "$preset" -B "$build_dir" "${extra[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"
