#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CUDA backend on a machine with an NVIDIA GPU, in one run (under 8 minutes on one GPU): builds
# with SPMD_CUDA=ON in build-gpu/ (no rewriter: it needs no GPU), then
#   1. the CUDA kernels against the CPU kernels (tests/cuda);
#   2. every collective on 8 logical CUDA devices of one GPU (tests/runtime's Collectives suite,
#      its cuda instance) and the backend conformance suite: shard_map, both pmap paths, the fault
#      tests (tests/backends, cuda instance);
#   3. every example program on the cuda platform with 8 logical devices, whose output must equal
#      its output on the CPU (device names aside: "cuda:3" reads as "cpu:3");
#   4. bench/cuda_bench (collectives busbw at 1 and 8 devices, matmul vs cuBLAS, dispatch);
# and prints a summary table. Exits non-zero when a step fails; a test that reports itself skipped
# (no GPU) fails the check, since skipped is not passed.
# Usage: scripts/gpu-check.sh [--build-dir=DIR]   (SPMD_JOBS caps parallel compile jobs)
set -uo pipefail
cd "$(dirname "$0")/.."
build=build-gpu
for arg in "$@"; do
  case "$arg" in
    --build-dir=*) build="${arg#--build-dir=}" ;;
    *) echo "gpu-check.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
jobs=${SPMD_JOBS:-$(nproc)}
log=$build/gpu-check
mkdir -p "$log"
summary=()
failed=0

# step <name> <command...>: runs it, output to $log/<name>.txt, and records pass/fail and time.
step() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "=== gpu-check: $name"
  "$@" > "$log/$name.txt" 2>&1 || status=$?
  if grep -q "\[  SKIPPED \]" "$log/$name.txt"; then
    echo "    tests skipped: $(grep -m1 -A1 'Skipped' "$log/$name.txt" | tail -1)"
    [[ $status == 0 ]] && status=3
  fi
  local result=passed
  if [[ $status == 3 ]]; then
    result="FAILED (tests skipped: no usable GPU?)"
    failed=1
  elif [[ $status != 0 ]]; then
    result="FAILED (exit $status)"
    failed=1
    tail -n 30 "$log/$name.txt"
  fi
  summary+=("| $name | $result | $((SECONDS - start)) s |")
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$log/gpu.txt" 2>&1 ||
  echo "nvidia-smi failed: $(cat "$log/gpu.txt")"
step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPMD_CUDA=ON \
  -DSPMD_BUILD_REWRITER=OFF -DSPMD_BUILD_TESTS=ON -DSPMD_BUILD_BENCH=ON -DSPMD_BUILD_EXAMPLES=ON
step build cmake --build "$build" -j "$jobs"
step kernels "$build/tests/cuda/spmd_cuda_kernels_tests"
export SPMD_CUDA_DEVICES_PER_GPU=8
step collectives "$build/tests/runtime/spmd_runtime_tests" --gtest_filter='*Collectives*/cuda'
step conformance "$build/tests/backends/spmd_backend_tests" --gtest_filter='*/cuda'
examples() {
  local status=0 program name
  while read -r program; do
    name=$(basename "$program")
    [[ $name == multi_process ]] && continue  # needs spmd-run's processes, not a GPU
    SPMD_CPU_DEVICES=8 SPMD_PLATFORMS=cpu "$program" > "$log/$name.cpu.txt" 2>&1
    SPMD_PLATFORMS=cuda "$program" 2>&1 | sed 's/cuda:/cpu:/g' > "$log/$name.cuda.txt"
    if diff -q "$log/$name.cpu.txt" "$log/$name.cuda.txt" > /dev/null; then
      echo "same output on cuda and cpu: $name"
    else
      echo "DIFFERENT output on cuda: $name (diff $log/$name.cpu.txt $log/$name.cuda.txt)"
      status=1
    fi
  done < <(find "$build/examples" -type f -executable | sort)
  return $status
}
step examples examples
step bench "$build/bench/cuda_bench"

echo
echo "GPU: $(cat "$log/gpu.txt")"
echo "| step | result | time |"
echo "|---|---|---|"
printf '%s\n' "${summary[@]}"
echo
cat "$log/bench.txt"
exit $failed
