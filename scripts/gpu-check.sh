#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CUDA backend on a machine with an NVIDIA GPU, in one run (under 8 minutes on one GPU): builds
# with SPMD_CUDA=ON in build-gpu/ (no rewriter: it needs no GPU), then
#   1. the CUDA kernels against the CPU kernels (tests/cuda), through CTest (a process a test);
#   2. every collective on 8 logical CUDA devices of one GPU (tests/runtime's Collectives suite,
#      its cuda instance), the backend conformance suite: shard_map, both pmap paths, the fault
#      tests (tests/backends, cuda instance), and the fault matrix (tests/runtime, cuda cells);
#   3. every example program on the cuda platform with 8 logical devices, whose output must equal
#      its output on the CPU (scripts/compare_device_output.py: device names and column widths
#      aside, and float results that cuBLAS or CUDA's libm round differently within 1e-5);
#   4. bench/cuda_bench (collectives busbw at 1 and 8 devices, matmul vs cuBLAS, dispatch);
# and prints a summary table. Exits non-zero when a step fails; a test that reports itself skipped
# (no GPU) fails the check, since skipped is not passed. Every step has a time limit.
#
# The machine needs the CUDA toolkit (nvcc, cuBLAS), NCCL (beside the toolkit, in the system's
# folders, or the Python package nvidia-nccl-cu13 that PyTorch installs), CMake, a C++20 compiler,
# and Python 3. A GPU machine without Debian's -dev packages (fmt, GoogleTest, BLIS, nlohmann-json)
# or a way to install them takes them as .deb files downloaded elsewhere by scripts/gpu-deps.sh:
# --deps=DIR unpacks them into the build folder (nothing is installed) and builds against them.
# Usage: scripts/gpu-check.sh [--build-dir=DIR] [--deps=DIR]   (SPMD_JOBS caps parallel jobs)
set -uo pipefail
cd "$(dirname "$0")/.."
build=build-gpu
deps=""
for arg in "$@"; do
  case "$arg" in
    --build-dir=*) build="${arg#--build-dir=}" ;;
    --deps=*) deps="${arg#--deps=}" ;;
    *) echo "gpu-check.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
jobs=${SPMD_JOBS:-$(nproc)}
log=$build/gpu-check
mkdir -p "$log"
summary=()
failed=0

# step <name> <seconds> <command...>: runs it under a time limit (a shell function runs without
# one: it limits its own commands), output to $log/<name>.txt; records pass/fail and time.
# Skipped tests fail the step.
step() {
  local name=$1 limit=$2 start=$SECONDS status=0 ok=1 detail=""
  shift 2
  echo "=== gpu-check: $name"
  if declare -F "$1" > /dev/null; then
    "$@" > "$log/$name.txt" 2>&1 || status=$?
  else
    timeout -k 10 "$limit" "$@" > "$log/$name.txt" 2>&1 || status=$?
  fi
  if [[ $status == 124 || $status == 137 ]]; then
    ok=0 detail="over its $limit s limit"
  elif [[ $status != 0 ]]; then
    ok=0 detail="exit $status"
  elif grep -qE "\[  SKIPPED \]|[*]Skipped|[(]Skipped[)]" "$log/$name.txt"; then
    ok=0 detail="tests skipped, $log/$name.txt: no usable GPU?"
  elif grep -q "tests passed" "$log/$name.txt"; then
    detail=$(grep -m1 -o "[0-9]* tests failed out of [0-9]*" "$log/$name.txt")
  fi
  if [[ $ok == 1 ]]; then
    summary+=("| $name | passed${detail:+ ($detail)} | $((SECONDS - start)) s |")
  else
    summary+=("| $name | FAILED ($detail) | $((SECONDS - start)) s |")
    failed=1
    tail -n 30 "$log/$name.txt"
  fi
}

# The CMake arguments: Ninja where it is installed, the unpacked --deps packages first in the
# search path, and NCCL from PyTorch's Python package where the toolkit has none. Multi-process
# runs (Gloo) are left out: the check is the same build on every GPU machine.
configure_args=(-S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPMD_CUDA=ON -DSPMD_BUILD_REWRITER=OFF
                -DSPMD_DISTRIBUTED=OFF -DSPMD_BUILD_TESTS=ON -DSPMD_BUILD_BENCH=ON
                -DSPMD_BUILD_EXAMPLES=ON)
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja > /dev/null; then
  configure_args+=(-G Ninja)
fi
unpack_deps() {  # with dpkg-deb, or ar and tar where the machine is not a Debian relative
  local root=$build/deps deb tmp
  rm -rf "$root" && mkdir -p "$root"
  for deb in "$deps"/*.deb; do
    echo "unpacking $deb"
    if command -v dpkg-deb > /dev/null; then
      dpkg-deb -x "$deb" "$root" || return 1
    else
      deb=$(realpath "$deb") && tmp=$(mktemp -d) && (cd "$tmp" && ar x "$deb") &&
        tar -xf "$tmp"/data.tar.* -C "$root" && rm -rf "$tmp" || return 1
    fi
  done
}
if [[ -n $deps ]]; then
  step deps 60 unpack_deps
  # The packages keep Debian's multiarch folders (lib/x86_64-linux-gnu), which CMake searches
  # under a prefix only with this set (it is, on Debian and Ubuntu).
  configure_args+=(-DCMAKE_PREFIX_PATH="$(realpath "$build/deps/usr")"
                   -DCMAKE_LIBRARY_ARCHITECTURE=x86_64-linux-gnu)
fi
toolkit=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
if [[ ! -e $toolkit/include/nccl.h && ! -e /usr/include/nccl.h ]]; then
  nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2> /dev/null)
  [[ -n $nccl ]] && configure_args+=(-DSpmdNCCL_ROOT="$nccl")
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$log/gpu.txt" 2>&1 ||
  echo "nvidia-smi failed: $(cat "$log/gpu.txt")"
step configure 120 cmake "${configure_args[@]}"
step build 420 cmake --build "$build" -j "$jobs"
# The tests through CTest, one process a test: a kernel fault that poisons its CUDA context fails
# that test alone, and the rest still run and report.
tests=(ctest --test-dir "$build" --no-tests=error --output-on-failure --timeout 150 -j 4)
step kernels 300 "${tests[@]}" -R '^CudaKernelsTest[.]'
export SPMD_CUDA_DEVICES_PER_GPU=8
step collectives 300 "${tests[@]}" -R '^Backends/Collectives[.].*/cuda( |$)'
step conformance 300 "${tests[@]}" -R '/cuda([ _]|$)' -E '^Backends/Collectives[.]'
# Each example on 8 CPU devices and on 8 logical CUDA devices: both must exit 0 within 60 s and
# print the same (compare_device_output.py).
run_example() {  # <platform> <program> <output file>
  local status=0
  env SPMD_CPU_DEVICES=8 SPMD_PLATFORMS="$1" timeout -k 5 60 "$2" > "$3" 2>&1 || status=$?
  [[ $status == 0 ]] || echo "FAILED on $1: $(basename "$2") exited $status ($3)"
  return $status
}
examples() {
  local status=0 program name verdict
  while read -r program; do
    name=$(basename "$program")
    [[ $name == multi_process ]] && continue  # needs spmd-run's processes, not a GPU
    run_example cpu "$program" "$log/$name.cpu.txt" || { status=1; continue; }
    run_example cuda "$program" "$log/$name.cuda.txt" || { status=1; continue; }
    verdict=$(scripts/compare_device_output.py "$log/$name.cpu.txt" "$log/$name.cuda.txt") || status=1
    echo "$name: $verdict"
  done < <(find "$build/examples" -type f -executable | sort)
  return $status
}
step examples 0 examples
step bench 180 "$build/bench/cuda_bench"

echo
echo "GPU: $(cat "$log/gpu.txt")"
echo "| step | result | time |"
echo "|---|---|---|"
printf '%s\n' "${summary[@]}"
echo
cat "$log/bench.txt"
exit $failed
