#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs two builds of one example (legacy pmap, compat pmap, or migrated to shard_map) and fails
# unless both succeed and their standard outputs are byte-identical.
#
#   examples/legacy/compare_outputs.sh build/.../foo_legacy build/.../foo_compat
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 LEGACY_BINARY COMPAT_BINARY" >&2
  exit 2
fi
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
"$1" >"$dir/legacy.out" || { echo "FAIL: $1 exited with status $?" >&2; exit 1; }
"$2" >"$dir/other.out" || { echo "FAIL: $2 exited with status $?" >&2; exit 1; }
if cmp -s "$dir/legacy.out" "$dir/other.out"; then
  echo "OK: identical output ($(wc -l <"$dir/legacy.out") lines)"
  exit 0
fi
echo "FAIL: outputs differ" >&2
diff -u "$dir/legacy.out" "$dir/other.out" >&2
exit 1
