#!/usr/bin/env bash
# Wall time of spmd-migrate over the examples corpus (examples/legacy/*/main.cc, report mode: it
# parses, matches and plans every edit but writes nothing), as a ratio to `clang++ -fsyntax-only`
# over the same files with the same flags, measured in the same run (docs/benchmarks.md):
#   -j 1: the tool with one job vs clang++ on one file at a time;
#   -j 2: the tool with two jobs vs clang++ on two files at a time (xargs -P 2).
# Each round times all four in turn; the table gives every round and the median ratio (target
# <= 1.5: the tool adds matching and edit planning to the parse, which dominates).
# Usage: bench/migrate_bench.sh <spmd-migrate> <clang++> <repository root> [rounds, default 5]
set -euo pipefail
tool=$1 clang=$2 root=$3 rounds=${4:-5}
files=("$root"/examples/legacy/*/main.cc)
flags=(-std=c++20 -I"$root/runtime/include")

seconds() {  # wall seconds of a command, its output discarded
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {print b - a}'
}
syntax_only() {  # clang++ -fsyntax-only over the files, $1 at a time
  printf '%s\n' "${files[@]}" | xargs -P "$1" -I{} "$clang" -fsyntax-only -w "${flags[@]}" {}
}

echo "spmd-migrate vs clang++ -fsyntax-only over ${#files[@]} files (examples/legacy), $rounds rounds"
printf '| round | clang -j1 s | tool -j1 s | ratio -j1 | clang -j2 s | tool -j2 s | ratio -j2 |\n'
printf '|---|---|---|---|---|---|---|\n'
ratios1=() ratios2=()
for ((r = 1; r <= rounds; r++)); do
  c1=$(seconds syntax_only 1)
  t1=$(seconds "$tool" -j 1 --quiet --allow-remaining "${files[@]}" -- "${flags[@]}")
  c2=$(seconds syntax_only 2)
  t2=$(seconds "$tool" -j 2 --quiet --allow-remaining "${files[@]}" -- "${flags[@]}")
  ratio1=$(awk -v a="$t1" -v b="$c1" 'BEGIN {print a / b}')
  ratio2=$(awk -v a="$t2" -v b="$c2" 'BEGIN {print a / b}')
  ratios1+=("$ratio1") ratios2+=("$ratio2")
  printf '| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n' "$r" "$c1" "$t1" "$ratio1" "$c2" \
    "$t2" "$ratio2"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf 'median ratio: %.2f (-j 1), %.2f (-j 2); target <= 1.5\n' "$(median "${ratios1[@]}")" \
  "$(median "${ratios2[@]}")"
