#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One golden test of spmd-migrate (tests/rewriter/cases/<case>/):
#   input.cc     legacy code; `// CHECK-MESSAGES:` lines give the expected diagnostics (FileCheck)
#   expected.cc  the file after `spmd-migrate -i`
# Checks: the diagnostics; the rewritten file; that a second run changes nothing (idempotency);
# that applying --export-fixes with clang-apply-replacements gives the same bytes as -i; and that
# the result compiles, with no deprecation warning when every site was migrated.
# Usage: run_case.sh <spmd-migrate> <case dir> <spmd include dir> <llvm bin dir>
set -euo pipefail
tool=$1 case_dir=$2 include=$3 llvm_bin=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c++20 -I"$include")

cp "$case_dir/input.cc" "$work/input.cc"
cp "$(dirname "$0")/../../.clang-format" "$work/.clang-format"
status=0
"$tool" "$work/input.cc" -- "${flags[@]}" > "$work/report.txt" 2> "$work/diag.txt" || status=$?
if [ "$status" -ge 2 ]; then
  cat "$work/diag.txt" >&2
  echo "FAIL: spmd-migrate exited $status" >&2
  exit 1
fi
sed -i "s|$work/||g" "$work/diag.txt"
if grep -q "CHECK-MESSAGES" "$case_dir/input.cc"; then
  "$llvm_bin/FileCheck" --check-prefix=CHECK-MESSAGES --implicit-check-not='warning:' \
      --input-file="$work/diag.txt" "$case_dir/input.cc"
elif grep -q "warning:" "$work/diag.txt"; then
  cat "$work/diag.txt" >&2
  echo "FAIL: unexpected diagnostics" >&2
  exit 1
fi

"$tool" -i --export-fixes="$work/fixes.yaml" "$work/input.cc" -- "${flags[@]}" > /dev/null 2>&1 || true
if ! diff -u "$case_dir/expected.cc" "$work/input.cc"; then
  echo "FAIL: the migrated file differs from expected.cc" >&2
  exit 1
fi

again=$("$tool" --diff "$work/input.cc" -- "${flags[@]}" 2> /dev/null || true)
if [ -n "$again" ]; then
  echo "$again" >&2
  echo "FAIL: a second run changed the file again" >&2
  exit 1
fi

mkdir "$work/yaml"
cp "$case_dir/input.cc" "$work/yaml/input.cc"
sed "s|$work/input.cc|$work/yaml/input.cc|g" "$work/fixes.yaml" > "$work/yaml/fixes.yaml"
"$llvm_bin/clang-apply-replacements" "$work/yaml"
if ! cmp -s "$work/yaml/input.cc" "$work/input.cc"; then
  diff -u "$work/input.cc" "$work/yaml/input.cc" >&2 || true
  echo "FAIL: --export-fixes applied by clang-apply-replacements differs from -i" >&2
  exit 1
fi

deprecation=-Wno-deprecated-declarations
[ "$status" -eq 0 ] && deprecation=-Werror=deprecated-declarations
g++ "${flags[@]}" "$deprecation" -fsyntax-only "$work/input.cc"
echo "PASS: $(basename "$case_dir")"
