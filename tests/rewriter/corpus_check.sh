#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One corpus program (tests/rewriter/corpus/<name>.cc, or a folder of files), migrated by
# spmd-migrate at build time: checks the tool's warnings (the `// CHECK-MESSAGES:` lines of each
# file, none for a file without them) and its exit status (0 exactly when no warning is expected:
# "everything migrated" must be true), then runs the legacy and the migrated build on 8 CPU
# devices and requires byte-identical output. Prints the counts: snippets, sites migrated, sites
# left for a human.
# Usage: corpus_check.sh <source> <legacy binary> <migrated binary> <out> <llvm bin dir>
#   (<out>.diag, <out>.summary and <out>.status are corpus_migrate.sh's)
set -euo pipefail
source=$1 legacy=$2 migrated=$3 out=$4 llvm_bin=$5
name=$(basename "$source")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -d "$source" ]; then
  files=("$source"/*.cc "$source"/*.h)
else
  files=("$source")
fi
# Warnings as file:line:col with the file's name only.
grep "warning:" "$out.diag" | sed -E 's|^[^:]*/([^/:]+):([0-9]+:[0-9]+: warning)|\1:\2|' \
  > "$work/warnings.txt" || true
expected=0
names=()
for file in "${files[@]}"; do
  base=$(basename "$file")
  names+=("$base")
  grep "^$base:" "$work/warnings.txt" > "$work/$base.txt" || true
  if grep -q "CHECK-MESSAGES" "$file"; then
    expected=1
    "$llvm_bin/FileCheck" --check-prefix=CHECK-MESSAGES --implicit-check-not='warning:' \
        --input-file="$work/$base.txt" "$file"
  elif [ -s "$work/$base.txt" ]; then
    cat "$work/$base.txt" >&2
    echo "FAIL: $name: unexpected warnings in $base (every site of it must migrate)" >&2
    exit 1
  fi
done
others=$(grep -v -F -f <(printf '%s:\n' "${names[@]}") "$work/warnings.txt" || true)
if [ -n "$others" ]; then
  echo "$others" >&2
  echo "FAIL: $name: warnings in files outside the program" >&2
  exit 1
fi
status=$(cat "$out.status")
if [ "$status" -ne "$expected" ]; then
  echo "FAIL: $name: spmd-migrate exited $status, want $expected ($([ "$expected" -eq 0 ] &&
    echo "every site migrates" || echo "sites are left for a human"))" >&2
  exit 1
fi

SPMD_CPU_DEVICES=8 "$legacy" > "$work/legacy.out"
SPMD_CPU_DEVICES=8 "$migrated" > "$work/migrated.out"
if ! cmp -s "$work/legacy.out" "$work/migrated.out"; then
  diff -u "$work/legacy.out" "$work/migrated.out" >&2 || true
  echo "FAIL: $name: the migrated program's output differs from the legacy one" >&2
  exit 1
fi
snippets=$(grep -c "^== " "$work/legacy.out")
counts=$(grep -o "[0-9]* sites migrated, [0-9]* left for a human" "$out.summary")
echo "PASS: $name: $snippets snippets, $counts, exit $status, identical output" \
     "($(wc -l < "$work/legacy.out") lines)"
