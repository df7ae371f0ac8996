#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# psum over 2 processes x 4 devices (spmd) against plain Gloo allreduce with 8 ranks and
# MPI_Allreduce with 8 ranks (OpenMPI), float32, one run, as ratios (docs/benchmarks.md).
# Usage: bench/distributed_bench.sh [BUILD_DIR] [SIZES]   (default build, 4K,64K,1M,16M)
set -euo pipefail
build="${1:-build}"
sizes="${2:-4K,64K,1M,16M}"
run="$build/bin/spmd-run"
bench="$build/bench/distributed_bench"
spmd=$("$run" -n 2 --devices-per-process 4 "$bench" --impl=spmd --sizes="$sizes" | sed 's/^\[0\] //')
gloo=$("$run" -n 8 "$bench" --impl=gloo --sizes="$sizes" | sed 's/^\[0\] //')
mpi=$(mpirun --oversubscribe --allow-run-as-root -np 8 "$build/bench/mpi_collectives" --op=psum \
      --sizes="$sizes" --reps=5)
printf '%10s %12s %12s %12s %10s %10s\n' bytes spmd_us gloo_us mpi_us gloo/spmd mpi/spmd
join <(echo "$spmd" | sort -k1,1) <(echo "$gloo" | sort -k1,1) |
  join - <(echo "$mpi" | sort -k1,1) | sort -n |
  awk '{printf "%10d %12.1f %12.1f %12.1f %10.2f %10.2f\n", $1, $2, $4, $6, $4/$2, $6/$2}'
