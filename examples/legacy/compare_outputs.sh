#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs builds of one example (legacy pmap, compat pmap, migrated to shard_map), each once, and
# fails unless every one succeeds and prints the same bytes as the first.
#
#   examples/legacy/compare_outputs.sh build/.../foo_legacy build/.../foo_compat [more...]
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 REFERENCE_BINARY OTHER_BINARY [OTHER_BINARY...]" >&2
  exit 2
fi
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
reference=$1
"$reference" >"$dir/reference.out" || { echo "FAIL: $reference exited with status $?" >&2; exit 1; }
shift
for other in "$@"; do
  "$other" >"$dir/other.out" || { echo "FAIL: $other exited with status $?" >&2; exit 1; }
  if ! cmp -s "$dir/reference.out" "$dir/other.out"; then
    echo "FAIL: $other prints other bytes than $reference" >&2
    diff -u "$dir/reference.out" "$dir/other.out" >&2
    exit 1
  fi
  echo "OK: $(basename "$other") prints what $(basename "$reference") prints ($(wc -l <"$dir/reference.out") lines)"
done
