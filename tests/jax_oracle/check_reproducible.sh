#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that the JAX oracle corpus regenerates byte for byte: generates it twice into scratch
# folders and compares both runs with each other and with the committed corpus/. Not a CTest: it
# needs the oracle's venvs (created from PyPI on first use) and takes about 5 minutes on 2 cores.
# Usage: tests/jax_oracle/check_reproducible.sh [--only NAME ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for run in first second; do
  echo "== generating ($run run)"
  "$here/generate.py" --out "$scratch/$run" "$@"
done
status=0
for file in "$scratch"/first/*.json; do
  name=$(basename "$file")
  for other in "$scratch/second/$name" "$here/corpus/$name"; do
    if cmp -s "$file" "$other"; then
      echo "$name: identical to $other"
    else
      echo "$name: DIFFERS from $other" >&2
      diff "$file" "$other" | head -20 >&2 || true
      status=1
    fi
  done
done
exit $status
