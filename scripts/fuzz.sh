#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets of tests/fuzz in build-asan/ (the asan preset: clang-14, ASan +
# UBSan, the runtime with coverage; the folder that scripts/test.sh --sanitize=address tests, so
# after it only the targets are left to build), then runs the three at once, each for a bounded
# time, from its seed corpus in tests/fuzz/corpus/<target>/ (new inputs go to a scratch folder;
# the corpus is not changed).
# Fails when a target finds a crash, a leak, a timeout or a non-spmd exception; the input that
# did it is kept as build-asan/artifacts/<target>-crash-... and each run's log beside it.
# Usage: scripts/fuzz.sh [--time=SECONDS (default 60)] [--build-dir=DIR] [--merge]
#   --merge: afterwards, merge what the run found into the seed corpora (minimised: an input is
#            kept when it reaches a code edge no other input does).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
build_dir=build-asan
merge=0
for arg in "$@"; do
  case "$arg" in
    --time=*) seconds="${arg#--time=}" ;;
    --build-dir=*) build_dir="${arg#--build-dir=}" ;;
    --merge) merge=1 ;;
    *) echo "usage: scripts/fuzz.sh [--time=SECONDS] [--build-dir=DIR] [--merge]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
targets=(shapes sharding collectives)
# Only the targets and what they link (the runtime), not the rest of the preset's tree.
cmake --preset asan -B "$build_dir" >/dev/null
cmake --build "$build_dir" -j "${SPMD_JOBS:-$(nproc)}" --target "${targets[@]/#/spmd_fuzz_}"

mkdir -p "$build_dir/artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
pids=()
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  "$build_dir/tests/fuzz/spmd_fuzz_$t" "$scratch/$t" "tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$build_dir/artifacts/$t-" >"$build_dir/artifacts/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then result=ok; else result=FAILED; status=1; fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build_dir/artifacts/$t.log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$build_dir/artifacts/$t.log" | tail -1 || true)
  echo "fuzz $t: $result, ${execs:-?} executions in ${seconds} s, ${cov:-no coverage line}"
  if [ "$result" = FAILED ]; then tail -40 "$build_dir/artifacts/$t.log"; fi
done
if [ "$merge" = 1 ] && [ "$status" = 0 ]; then
  for t in "${targets[@]}"; do
    "$build_dir/tests/fuzz/spmd_fuzz_$t" -merge=1 -use_counters=0 "tests/fuzz/corpus/$t" "$scratch/$t" \
      >>"$build_dir/artifacts/$t.log" 2>&1
  done
fi
exit "$status"
