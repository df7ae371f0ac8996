#!/usr/bin/env bash
# spmd-migrate as a whole, on the small project in tests/rewriter/project: a compilation database
# (-p) and two jobs (-j 2); a header reached by two translation units in different directories,
# through two spellings of its path (a symlink), is edited once; a template instantiated twice gives one edit;
# --export-fixes applied by clang-apply-replacements equals -i; the exit codes of the README.
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
expect_exit 0 "$work/a.cc"
expect_exit 1 "$work/left.cc"
expect_exit 0 --allow-remaining "$work/left.cc"
expect_exit 2 "$work/broken.cc"
echo "PASS: compilation database, -j 2, shared header and template edited once, exit codes"
