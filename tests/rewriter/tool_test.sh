#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spmd-migrate as a whole, on the small project in tests/rewriter/project: a compilation database
# (-p) and two jobs (-j 2); a header reached by two translation units in different directories,
# through two spellings of its path (a symlink), is edited once; a template instantiated twice gives
# one edit; --export-fixes applied by clang-apply-replacements equals -i; a nest across two
# translation units; --version and --help; the exit codes of the README.
# Usage: tool_test.sh <spmd-migrate> <spmd include dir> <llvm bin dir>
set -euo pipefail
tool=$1 include=$(cd "$2" && pwd) llvm_bin=$3
project=$(cd "$(dirname "$0")/project" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work" "$work.yaml"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp -r "$project"/* "$work/"
ln -s "$work" "$work/link"
entry() { printf '{"directory": "%s", "file": "%s", "command": "c++ -std=c++20 -I%s -c %s"}' \
  "$work" "$1" "$include" "$1"; }
echo "[$(entry "$work/a.cc"), $(entry "$work/link/sub/b.cc")]" > "$work/compile_commands.json"
mkdir "$work.yaml"  # a plain copy: clang-apply-replacements would follow the symlink
cp -r "$project"/* "$work.yaml/"

status=0
"$tool" -p "$work" -j 2 -i --export-fixes="$work/fixes.yaml" "$work/a.cc" "$work/link/sub/b.cc" \
  > "$work/summary.txt" 2>&1 || status=$?
[ "$status" -eq 0 ] || { cat "$work/summary.txt" >&2; fail "exit $status, want 0 (all migrated)"; }
grep -q "2 files scanned, 1 changed, 2 sites migrated, 0 left" "$work/summary.txt" ||
  { cat "$work/summary.txt" >&2; fail "summary: want one changed header and two sites"; }
[ "$(grep -c "spmd::shard_map(" "$work/shared.h")" -eq 1 ] || fail "the pmap was edited twice"
[ "$(grep -c "pcast(" "$work/shared.h")" -eq 1 ] || fail "the template was edited twice"
! grep -q "spmd::pmap(\|pvary(" "$work/shared.h" || fail "legacy calls left in shared.h"
for tu in a sub/b; do
  g++ -std=c++20 -I"$include" -Werror=deprecated-declarations -fsyntax-only "$work/$tu.cc"
done

sed "s|$work/|$work.yaml/|g" "$work/fixes.yaml" > "$work.yaml/fixes.yaml"
"$llvm_bin/clang-apply-replacements" "$work.yaml"
cmp -s "$work/shared.h" "$work.yaml/shared.h" || fail "--export-fixes differs from -i"

again=$("$tool" -p "$work" --diff "$work/a.cc" "$work/link/sub/b.cc" 2> /dev/null)
[ -z "$again" ] || fail "a second run changed something: $again"

expect_exit() {  # expect_exit <status> <args...>
  local want=$1 got=0
  shift
  "$tool" --quiet "$@" -- -std=c++20 -I"$include" > /dev/null 2>&1 || got=$?
  [ "$got" -eq "$want" ] || fail "spmd-migrate $* exited $got, want $want"
}
# A nest across two translation units: with both files, both pmaps migrate as levels of one nest
# (spmd::PmapNest); with the outer one alone, its helper's body is unseen, so it is not migrated.
both=$("$tool" --diff "$work/nest_outer.cc" "$work/nest_helper.cc" -- -std=c++20 -I"$include" \
  2>&1 || true)
grep -q "2 sites migrated, 0 left" <<< "$both" ||
  { echo "$both" >&2; fail "cross-TU nest: want both pmaps migrated"; }
[ "$(grep -c "^+.*nest = spmd::PmapNest()" <<< "$both")" -eq 2 ] ||
  { echo "$both" >&2; fail "cross-TU nest: want both pmaps migrated as levels of a nest"; }
alone=$("$tool" "$work/nest_outer.cc" -- -std=c++20 -I"$include" 2>&1 || true)
grep -q "nest_outer.cc:8:10: warning: .*'nest_helper' (declared at line 5, defined in no file of this run).*\[spmd-migrate-pmap-unseen-callee\]" <<< "$alone" ||
  { echo "$alone" >&2; fail "cross-TU nest, helper not given: want pmap-unseen-callee"; }

# --version gives the project's version; --help says what the tool does, its modes and exit codes.
version=$(sed -n 's/^project(spmd VERSION \([0-9.]*\).*/\1/p' "$project/../../../CMakeLists.txt")
"$tool" --version | grep -q "spmd-migrate (spmd) $version, built with Clang" || fail "--version"
help=$("$tool" --help)
for phrase in "rewrites legacy spmd::pmap code" "--diff" "-i " "--export-fixes" "Exit codes:" \
    "2  a file did not compile" "Examples:"; do
  grep -qF -- "$phrase" <<< "$help" || fail "--help does not say '$phrase'"
done

expect_exit 0 "$work/a.cc"
expect_exit 1 "$work/left.cc"
expect_exit 0 --allow-remaining "$work/left.cc"
expect_exit 2 "$work/broken.cc"
echo "PASS: compilation database, -j 2, shared header and template edited once, exit codes"
