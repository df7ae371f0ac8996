#!/usr/bin/env bash
# Installs what is missing, builds spmd and runs the whole test suite.
# Usage: scripts/test.sh [--sanitize=thread|address]
#   --sanitize=thread   ThreadSanitizer build in build-thread/
#   --sanitize=address  AddressSanitizer + UndefinedBehaviorSanitizer build in build-address/
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
sanitize=""
for arg in "$@"; do
  case "$arg" in --sanitize=*) sanitize="${arg#--sanitize=}" ;; esac
done
# Sanitizer builds skip the benchmarks (their timings would mean nothing there) and spmd-migrate
# (Clang's libraries are not instrumented; its tests run in the plain build).
if [ -n "$sanitize" ]; then
  scripts/build.sh "$@" -DSPMD_BUILD_BENCH=OFF -DSPMD_BUILD_REWRITER=OFF
else
  scripts/build.sh "$@"
fi
build_dir="build${sanitize:+-$sanitize}"

export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
