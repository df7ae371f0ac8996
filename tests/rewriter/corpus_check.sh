#!/usr/bin/env bash
# One corpus program (tests/rewriter/corpus/<name>.cc), migrated by spmd-migrate at build time:
# checks the tool's warnings (the `// CHECK-MESSAGES:` lines of the source, none when it has
# none), then runs the legacy and the migrated build on 8 CPU devices and requires byte-identical
# output. Prints the counts: snippets, sites migrated, sites left for a human.
# Usage: corpus_check.sh <source> <legacy binary> <migrated binary> <tool stderr> <tool stdout>
#                        <llvm bin dir>
set -euo pipefail
source=$1 legacy=$2 migrated=$3 diagnostics=$4 summary=$5 llvm_bin=$6
name=$(basename "$source")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sed "s|^.*/$name:|$name:|" "$diagnostics" > "$work/diag.txt"
if grep -q "CHECK-MESSAGES" "$source"; then
  "$llvm_bin/FileCheck" --check-prefix=CHECK-MESSAGES --implicit-check-not='warning:' \
      --input-file="$work/diag.txt" "$source"
elif grep -q "warning:" "$work/diag.txt"; then
  cat "$work/diag.txt" >&2
  echo "FAIL: $name: unexpected warnings (every site of this file must migrate)" >&2
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
counts=$(grep -o "[0-9]* sites migrated, [0-9]* left for a human" "$summary")
echo "PASS: $name: $snippets snippets, $counts, identical output ($(wc -l < "$work/legacy.out") lines)"
