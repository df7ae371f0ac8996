#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs spmd-migrate over examples/legacy in a scratch folder and checks that every program
# migrates with no warning and that the result is byte-identical to examples/migrated.
# With --update, writes the result into examples/migrated instead (after changing the tool or a
# legacy example).
# Usage: regenerate_examples.sh <spmd-migrate> <repository root> [--update]
set -euo pipefail
tool=$1 root=$2 update=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/.clang-format" "$work/"
sources=()
for dir in "$root"/examples/legacy/*/; do
  name=$(basename "$dir")
  mkdir "$work/$name"
  cp "$dir/main.cc" "$work/$name/main.cc"
  sources+=("$work/$name/main.cc")
done
# Exit status 0: every site migrated, none left for a human.
"$tool" -i "${sources[@]}" -- -std=c++20 -I"$root/runtime/include"
status=0
for dir in "$root"/examples/legacy/*/; do
  name=$(basename "$dir")
  if [ "$update" = "--update" ]; then
    mkdir -p "$root/examples/migrated/$name"
    cp "$work/$name/main.cc" "$root/examples/migrated/$name/main.cc"
  elif ! diff -u "$root/examples/migrated/$name/main.cc" "$work/$name/main.cc"; then
    echo "FAIL: examples/migrated/$name/main.cc is not the tool's output; run" \
         "tests/rewriter/regenerate_examples.sh <spmd-migrate> . --update" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "PASS: examples/migrated is the tool's output for examples/legacy"
exit "$status"
