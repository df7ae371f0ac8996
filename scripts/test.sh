#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds spmd with its tests and runs the whole suite. It fails when a
# test fails and when no test ran.
# Usage: scripts/test.sh [--preset=release|debug|asan|tsan] [--sanitize=thread|address]
#   (no option)         the release preset, in build/
#   --sanitize=thread   ThreadSanitizer build in build-tsan/ (the tsan preset)
#   --sanitize=address  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/ (asan)
# The preset switches the tests on whatever configured the folder before (scripts/demo.sh
# configures build/ without them).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
preset=release
for arg in "$@"; do
  case "$arg" in
    --preset=*) preset="${arg#--preset=}" ;;
    --sanitize=thread) preset=tsan ;;
    --sanitize=address) preset=asan ;;
    *) echo "test.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
scripts/build.sh --preset="$preset"
# The preset sets the sanitizers' options (halt on the first report) and --no-tests=error.
ctest --preset "$preset" --no-tests=error -j "$(nproc)"
