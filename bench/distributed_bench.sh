#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# psum over 2 processes x 4 devices (spmd) against plain Gloo allreduce with 8 ranks and
# MPI_Allreduce with 8 ranks (OpenMPI), float32. spmd and MPI run alternately for ROUNDS rounds,
# the order reversed every other round (docs/benchmarks.md, "Method": external references run
# alternately, because this machine's speed drifts by 2x within minutes); plain Gloo, hundreds of
# times slower at small sizes and minutes per run, runs in the first round only. Each time is the
# median over rounds of a run's median; each ratio is the median of the per-round ratios (above 1:
# spmd faster), followed by every round's MPI / spmd ratio.
# Usage: bench/distributed_bench.sh [BUILD_DIR] [SIZES] [ROUNDS]   (default build, 4K,64K,1M,16M, 3)
set -euo pipefail
build="${1:-build}"
sizes="${2:-4K,64K,1M,16M}"
rounds="${3:-3}"
run="$build/bin/spmd-run"
bench="$build/bench/distributed_bench"

# Each prints "<bytes> <median µs>" per size.
time_spmd() {
  "$run" -n 2 --devices-per-process 4 "$bench" --impl=spmd --sizes="$sizes" |
    sed 's/^\[0\] //' | cut -d' ' -f1,2
}
time_gloo() {
  "$run" -n 8 "$bench" --impl=gloo --sizes="$sizes" | sed 's/^\[0\] //' | cut -d' ' -f1,2
}
time_mpi() {
  mpirun --oversubscribe --allow-run-as-root -np 8 "$build/bench/mpi_collectives" --op=psum \
    --sizes="$sizes" --reps=5 | cut -d' ' -f1,2
}

times=$(mktemp)
trap 'rm -f "$times"' EXIT
for ((r = 0; r < rounds; ++r)); do
  order="spmd mpi"
  if ((r == 0)); then order="spmd gloo mpi"; fi
  if ((r % 2 == 1)); then order="mpi spmd"; fi
  for impl in $order; do
    "time_$impl" | awk -v r="$r" -v impl="$impl" '{ print r, impl, $1, $2 }' >>"$times"
  done
done

printf '%10s %12s %12s %12s %10s %10s  %s\n' bytes spmd_us gloo_us mpi_us gloo/spmd mpi/spmd \
  'mpi/spmd by round'
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; ++i) {
      t = a[i] + 0
      for (j = i - 1; j >= 1 && a[j] + 0 > t; --j) a[j + 1] = a[j]
      a[j + 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { us[$1, $2, $3] = $4; sizes[$3] = 1; if ($1 + 1 > rounds) rounds = $1 + 1 }
  END {
    for (s in sizes) {
      spmd = gloo = mpi = by_gloo = by_mpi = ""
      for (r = 0; r < rounds; ++r) {
        spmd = spmd " " us[r, "spmd", s]
        mpi = mpi " " us[r, "mpi", s]
        if ((r, "gloo", s) in us) {
          gloo = gloo " " us[r, "gloo", s]
          by_gloo = by_gloo " " us[r, "gloo", s] / us[r, "spmd", s]
        }
        by_mpi = by_mpi sprintf(" %.2f", us[r, "mpi", s] / us[r, "spmd", s])
      }
      printf "%10d %12.1f %12.1f %12.1f %10.2f %10.2f %s\n", s, median(spmd), median(gloo),
             median(mpi), median(by_gloo), median(by_mpi), by_mpi
    }
  }' "$times" | sort -n
