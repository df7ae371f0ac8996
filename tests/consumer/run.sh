#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs tests/consumer/project, a project that depends on spmd, in WORK, one way:
#   run.sh find_package BUILD_DIR WORK     find_package(spmd) from the build tree BUILD_DIR
#   run.sh install PREFIX WORK             find_package(spmd) from an install prefix
#   run.sh pkg_config PREFIX WORK          c++ $(pkg-config --cflags --libs spmd), from PREFIX
#   run.sh add_subdirectory SOURCE_DIR WORK  add_subdirectory(spmd) (a Release build of the
#                                          libraries, CUDA and Gloo off; asserts nothing else
#                                          is built)
# and checks the program's output. Exit 77 (a CTest skip) when pkg-config is not installed.
set -euo pipefail
mode=$1
where=$(realpath "$2")
work=$3
here=$(cd "$(dirname "$0")" && pwd)
jobs="${SPMD_JOBS:-2}"
rm -rf "$work"
mkdir -p "$work"

configure_and_build() {
  cmake -S "$here/project" -B "$work/build" -DCMAKE_BUILD_TYPE=Release "$@" >"$work/configure.log" \
    || { cat "$work/configure.log"; exit 1; }
  cmake --build "$work/build" --target consumer -j "$jobs" >"$work/build.log" \
    || { cat "$work/build.log"; exit 1; }
  program="$work/build/consumer"
}

case "$mode" in
  find_package) configure_and_build -Dspmd_DIR="$where" ;;
  install) configure_and_build -DCMAKE_PREFIX_PATH="$where" ;;
  # With the optional backends off, as a parent project may set them (the release build compiles
  # them already): the CPU-only runtime in about 150 s with -j2 instead of 200.
  add_subdirectory)
    configure_and_build -DSPMD_SOURCE_DIR="$where" -DSPMD_CUDA=OFF -DSPMD_DISTRIBUTED=OFF ;;
  pkg_config)
    if ! command -v pkg-config >/dev/null; then
      echo "pkg-config is not installed (scripts/setup.sh installs pkgconf)"
      exit 77
    fi
    pc_dir=$(dirname "$(find "$where" -name spmd.pc | head -1)")
    flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs spmd)
    echo "pkg-config --cflags --libs spmd: $flags"
    # shellcheck disable=SC2086
    c++ -std=c++20 -o "$work/consumer" "$here/project/main.cc" $flags
    program="$work/consumer"
    ;;
  *) echo "run.sh: unknown mode $mode" >&2; exit 2 ;;
esac

expected="Mesh('i': 4) P('i',) float32
[12, 16]"
actual=$("$program")
if [ "$actual" != "$expected" ]; then
  printf 'consumer printed:\n%s\nexpected:\n%s\n' "$actual" "$expected" >&2
  exit 1
fi
echo "consumer ($mode) built and printed the expected output"
