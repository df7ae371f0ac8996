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
shift
run() {
  "$1" >"$2" || { echo "FAIL: $1 exited with status $?" >&2; exit 1; }
}
run "$reference" "$dir/reference.out"
lines=$(wc -l <"$dir/reference.out")
for other in "$@"; do
  run "$other" "$dir/other.out"
  if ! cmp -s "$dir/reference.out" "$dir/other.out"; then
    echo "FAIL: $other prints other bytes than $reference" >&2
    diff -u "$dir/reference.out" "$dir/other.out" >&2
    exit 1
  fi
  echo "OK: $(basename "$other") prints what $(basename "$reference") prints ($lines lines)"
done
