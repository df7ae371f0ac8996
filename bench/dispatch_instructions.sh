#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per dispatch on the calling thread, counted by callgrind: a figure that load does
# not move, for judging a few percent between two builds on a shared machine (docs/benchmarks.md,
# "Method"). One device, where the calling thread runs the body itself, so the count covers the
# whole call: validation, launch, the body's blocks and the assembly. Each figure is the
# difference of a 2,000-call and a 12,000-call run over 10,000 (start-up cancels out).
#
#   bench/dispatch_instructions.sh BUILD [BUILD...]   e.g. build-before build
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 BUILD [BUILD...] (folders with bench/dispatch_bench)" >&2
  exit 2
fi
if ! command -v valgrind >/dev/null; then
  echo "$0: needs valgrind (apt-get install valgrind)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions of the calling thread for `calls` calls of column $2 of build $1.
instructions() {
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/out" \
    "$1/bench/dispatch_bench" --calls="$3" --column="$2" --devices=1 >/dev/null 2>&1
  awk '/^(summary|totals):/ {print $2; exit}' "$tmp/out-01"
}

echo "| build | identity body | empty body | psum of 64 B | psum of 64 B, new mesh |"
echo "|---|---|---|---|---|"
for build in "$@"; do
  row="| $build |"
  for column in 0 1 2 3; do
    small=$(instructions "$build" $column 2000)
    large=$(instructions "$build" $column 12000)
    row="$row $(( (large - small) / 10000 )) |"
  done
  echo "$row"
done
