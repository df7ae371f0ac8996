#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Small collectives on a machine that other processes keep busy (docs/benchmarks.md, "Beside busy
# processes"). Times examples/legacy/heat_stencil (8 devices, 10,000 ppermutes of 4 bytes) alone
# and beside one busy loop per core, each with spmd's waits as they are and with yielding off
# (SPMD_WAIT_YIELDS=0: spin, then sleep on the futex at once), in alternating order, R rounds.
# Prints the median wall seconds of each and, per round, the ratios' median:
#   busy / alone             what the other processes cost (the loops take half the cores' time)
#   yields on / off, alone   what yielding gains on a quiet machine (below 1)
#   yields on / off, busy    what it costs beside busy processes (1 when the pause works)
# Usage: bench/contention_bench.sh [BUILD_DIR] [ROUNDS]   (default build, 3)
set -euo pipefail
build="${1:-build}"
rounds="${2:-3}"
program="$build/examples/legacy/heat_stencil/heat_stencil_legacy"
if [[ ! -x "$program" ]]; then
  echo "error: $program not built (cmake --build $build --target heat_stencil_legacy)" >&2
  exit 1
fi

loops=()
start_loops() {
  for ((i = 0; i < $(nproc); ++i)); do
    sh -c 'while :; do :; done' &
    loops+=($!)
  done
}
stop_loops() {
  if ((${#loops[@]} > 0)); then kill "${loops[@]}" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  loops=()
}
trap stop_loops EXIT

# Wall microseconds of one run with SPMD_WAIT_YIELDS=$1 (empty: the default).
run() {
  local begin=${EPOCHREALTIME/./}
  if [[ -n "$1" ]]; then
    SPMD_WAIT_YIELDS=$1 SPMD_CPU_DEVICES=8 "$program" >/dev/null
  else
    SPMD_CPU_DEVICES=8 "$program" >/dev/null
  fi
  echo $((${EPOCHREALTIME/./} - begin))
}

results=()
for ((round = 1; round <= rounds; ++round)); do
  echo "round $round/$rounds" >&2
  alone_on=$(run "") alone_off=$(run 0)
  start_loops
  sleep 0.2
  if ((round % 2 == 0)); then
    busy_off=$(run 0) busy_on=$(run "")
  else
    busy_on=$(run "") busy_off=$(run 0)
  fi
  stop_loops
  results+=("$alone_on $alone_off $busy_on $busy_off")
done

printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [[float(x) / 1e6 for x in line.split()] for line in sys.stdin]
med = lambda xs: statistics.median(xs)
print(f"{len(rows)} rounds, 8 devices; median wall seconds")
print("| yields | alone | beside busy loops | busy / alone |")
print("|---|---|---|---|")
for name, a, b in (("on (default)", 0, 2), ("off", 1, 3)):
    print(f"| {name} | {med([r[a] for r in rows]):.2f} | {med([r[b] for r in rows]):.2f} |"
          f" {med([r[b] / r[a] for r in rows]):.2f} |")
print(f"yields on / off: alone {med([r[0] / r[1] for r in rows]):.2f},"
      f" beside busy loops {med([r[2] / r[3] for r in rows]):.2f}")
'
