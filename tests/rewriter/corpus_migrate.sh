#!/usr/bin/env bash
# Build step of the corpus: copies one legacy program to <out>.cc and migrates it in place with
# spmd-migrate, keeping the tool's summary (<out>.summary) and warnings (<out>.diag) for
# corpus_check.sh. Fails only when the tool fails (exit 2): sites left for a human are expected.
# Usage: corpus_migrate.sh <spmd-migrate> <source> <out> <flags...>
set -euo pipefail
tool=$1 source=$2 out=$3
shift 3
cp "$source" "$out.cc"
"$tool" -i --allow-remaining "$out.cc" -- "$@" > "$out.summary" 2> "$out.diag" || {
  cat "$out.diag" >&2
  exit 1
}
