#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wall time of spmd-migrate (report mode: it parses, matches, analyses and plans and formats every
# edit, but writes nothing) as a ratio to `clang++ -fsyntax-only` over the same files with the same
# flags, measured in the same run (docs/benchmarks.md):
#   examples: examples/legacy/*/main.cc, with one job (vs clang++ on one file at a time) and two
#     jobs (vs clang++ on two files at a time, xargs -P 2);
#   large files: generated legacy files of about N lines each (a block of 28 lines with 6 pmap
#     sites - called at once, stored and called twice, options, out_axes=nullopt, a nest, a
#     negative in_axes left for a human - repeated), formatted with the repository's
#     .clang-format, so that the time per line shows whether the tool's own work stays linear.
# Each round times every case in turn; the tables give every round and the median ratio (target
# <= 1.5: the tool adds matching, analysis and edit planning to the parse, which dominates).
# Usage: bench/migrate_bench.sh <spmd-migrate> <clang++> <repository root> [rounds, default 5]
#                               [large-file lines, default "12500 50000"]
set -euo pipefail
tool=$1 clang=$2 root=$(cd "$3" && pwd) rounds=${4:-5} sizes=${5:-12500 50000}
files=("$root"/examples/legacy/*/main.cc)
flags=(-std=c++20 -I"$root/runtime/include")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() {  # wall seconds of a command, its output discarded
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {print b - a}'
}
syntax_only() {  # clang++ -fsyntax-only over the examples, $1 at a time
  printf '%s\n' "${files[@]}" | xargs -P "$1" -I{} "$clang" -fsyntax-only -w "${flags[@]}" {}
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print a / b}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# generate <blocks>: a legacy source of that many blocks.
generate() {
  printf '%s\n' '#include <spmd/pmap.h>' '#include <spmd/spmd.h>' '' '#include <optional>' '' \
    'using spmd::Array;' ''
  for ((k = 0; k < $1; k++)); do
    cat <<BLOCK
// Block $k: a centring, a weighted sum, a replicated total, a nest and a left site.
Array center_$k(const Array& v) { return v - spmd::pmean(v, "i"); }

Array scale_$k(const Array& v, float s) {
  Array y = v * s;
  return y + 1.0f;
}

Array block_$k(const Array& x, const Array& w) {
  Array a = spmd::pmap(center_$k, "i")(x);
  auto g = spmd::pmap([](const Array& u, const Array& s) { return u * s + spmd::psum(u, "i"); },
                      "i", {.in_axes = {0, std::nullopt}});
  Array b = g(a, w) + g(x, w);
  Array c = spmd::pmap([](const Array& u) { return spmd::psum(u, "i"); }, "i",
                       {.out_axes = {std::nullopt}})(b);
  auto h = spmd::pmap(spmd::pmap([](const Array& u) { return u * 2; }, "j"), "i");
  Array d = spmd::pmap(scale_$k, "i")(x, 2.0f);
  Array e = spmd::pmap(center_$k, "i", {.in_axes = {-1}})(x);
  Array sum = a + b;
  sum = sum + c;
  sum = sum + d;
  sum = sum + e;
  // Mix in the nest over a 2 x 2 grid.
  Array grid = x.reshape({2, 2, -1});
  sum = sum + h(grid).reshape(x.shape());
  return sum;
}

BLOCK
  done
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
  ratios1+=("$(ratio "$t1" "$c1")") ratios2+=("$(ratio "$t2" "$c2")")
  printf '| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n' "$r" "$c1" "$t1" "${ratios1[-1]}" \
    "$c2" "$t2" "${ratios2[-1]}"
done
printf 'median ratio: %.2f (-j 1), %.2f (-j 2); target <= 1.5\n\n' "$(median "${ratios1[@]}")" \
  "$(median "${ratios2[@]}")"

cp "$root/.clang-format" "$work/"
summary=()
for lines in $sizes; do
  file="$work/large_$lines.cc"
  generate $(((lines + 27) / 28)) > "$file"
  sites=$(grep -o "spmd::pmap(" "$file" | wc -l)
  echo "large file: $(wc -l < "$file") lines, $sites pmap calls, $rounds rounds"
  printf '| round | clang s | tool s | ratio | tool us/line |\n|---|---|---|---|---|\n'
  ratios=()
  for ((r = 1; r <= rounds; r++)); do
    c=$(seconds "$clang" -fsyntax-only -w "${flags[@]}" "$file")
    t=$(seconds "$tool" --quiet --allow-remaining "$file" -- "${flags[@]}")
    ratios+=("$(ratio "$t" "$c")")
    printf '| %d | %.2f | %.2f | %.2f | %.1f |\n' "$r" "$c" "$t" "${ratios[-1]}" \
      "$(awk -v t="$t" -v n="$(wc -l < "$file")" 'BEGIN {print t / n * 1e6}')"
  done
  summary+=("$lines lines: $(printf '%.2f' "$(median "${ratios[@]}")")")
  echo
done
echo "large files, median ratio: $(IFS=';'; echo "${summary[*]}" | sed 's/;/, /g'); target <= 1.5"
