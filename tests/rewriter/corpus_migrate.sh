#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build step of the corpus: copies one legacy program (a .cc file, or a folder of .cc and .h files
# migrated in one run, so that the tool sees every file of the program) to <out>.cc or <out>/ and
# migrates it in place with spmd-migrate, keeping the tool's summary (<out>.summary), warnings
# (<out>.diag) and exit status (<out>.status) for corpus_check.sh. Fails only when the tool fails
# (exit 2): sites left for a human (exit 1) are expected in some programs.
# Usage: corpus_migrate.sh <spmd-migrate> <source> <out> <flags...>
set -euo pipefail
tool=$1 source=$2 out=$3
shift 3
if [ -d "$source" ]; then
  rm -rf "$out"
  cp -r "$source" "$out"
  files=("$out"/*.cc)
else
  cp "$source" "$out.cc"
  files=("$out.cc")
fi
status=0
"$tool" -i "${files[@]}" -- "$@" > "$out.summary" 2> "$out.diag" || status=$?
echo "$status" > "$out.status"
if [ "$status" -ge 2 ]; then
  cat "$out.diag" >&2
  exit 1
fi
