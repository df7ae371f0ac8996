#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spmd-migrate never loses a file: -i on a full disk (ENOSPC, EIO, partial writes, a failing
# fsync; simulated by the LD_PRELOAD shim fail_writes.c) leaves the original byte for byte, says
# why and exits 2, and the summary counts no file it could not write; a symlink planted where a
# temporary file might go is never followed; modes 0755/0600, the owner and hard links are kept;
# a read-only (0444) file is refused; a file name with shell metacharacters runs no command
# (--diff is made in-process, and the diff applies with patch); --export-fixes to an unwritable
# path says why and exits 2.
# Usage: files_test.sh <spmd-migrate> <spmd include dir> <fail_writes.so>
set -euo pipefail
tool=$1 include=$(cd "$2" && pwd) shim=$3
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
flags=(-- -std=c++20 -I"$include")

cat > "$work/legacy.cc" <<'EOF'
#include <spmd/pmap.h>
#include <spmd/spmd.h>

spmd::Array centered(const spmd::Array& x) {
  return spmd::pmap([](const spmd::Array& v) { return v - spmd::pmean(v, "i"); }, "i")(x);
}
EOF
# The migrated file, made once without faults.
mkdir "$work/ref"
cp "$work/legacy.cc" "$work/ref/a.cc"
"$tool" -i "$work/ref/a.cc" "${flags[@]}" > /dev/null
cmp -s "$work/legacy.cc" "$work/ref/a.cc" && fail "the reference run changed nothing"

# run <dir> <file> <env...>: spmd-migrate -i on a fresh copy of the legacy source; sets $status.
case_dir=""
run() {
  case_dir="$work/$1"
  mkdir -p "$case_dir"
  cp "$work/legacy.cc" "$case_dir/$2"
  local file="$case_dir/$2"
  shift 2
  status=0
  env "$@" "$tool" -i "$file" "${flags[@]}" > "$case_dir/out.txt" 2> "$case_dir/err.txt" || status=$?
}
expect_untouched() {  # expect_untouched <file> <what>
  [ "$status" -eq 2 ] || fail "$2: exit $status, want 2"
  cmp -s "$work/legacy.cc" "$1" || fail "$2: the original was changed"
  grep -q "0 changed, 0 sites migrated" "$case_dir/out.txt" ||
    { cat "$case_dir/out.txt" >&2; fail "$2: the summary counts the unwritten file"; }
  [ -z "$(find "$case_dir" -name '.*spmd-migrate*')" ] || fail "$2: a temporary file was left"
}

# A full disk, at each step of the write.
run enospc a.cc LD_PRELOAD="$shim" SPMD_FAIL_PATH=/.a.cc.spmd-migrate-
expect_untouched "$case_dir/a.cc" "ENOSPC on the first write"
grep -q "No space left on device" "$case_dir/err.txt" || fail "ENOSPC: the error is not printed"
run partial a.cc LD_PRELOAD="$shim" SPMD_FAIL_PATH=/.a.cc.spmd-migrate- SPMD_FAIL_AFTER=100
expect_untouched "$case_dir/a.cc" "ENOSPC after 100 bytes"
run eio a.cc LD_PRELOAD="$shim" SPMD_FAIL_PATH=/.a.cc.spmd-migrate- SPMD_FAIL_ERRNO=EIO
expect_untouched "$case_dir/a.cc" "EIO"
grep -q "Input/output error" "$case_dir/err.txt" || fail "EIO: the error is not printed"
run fsync a.cc LD_PRELOAD="$shim" SPMD_FAIL_PATH=/.a.cc.spmd-migrate- SPMD_FAIL_FSYNC=1 \
  SPMD_FAIL_ERRNO=EIO
expect_untouched "$case_dir/a.cc" "a failing fsync"

# A symlink planted at the old predictable temporary name (and at a few guesses) is not followed.
mkdir "$work/symlink"
echo "precious" > "$work/victim.txt"
cp "$work/legacy.cc" "$work/symlink/a.cc"
for name in a.cc.spmd-migrate.tmp .a.cc.spmd-migrate-XXXXXX .a.cc.spmd-migrate-000000; do
  ln -s "$work/victim.txt" "$work/symlink/$name"
done
"$tool" -i "$work/symlink/a.cc" "${flags[@]}" > /dev/null
[ "$(cat "$work/victim.txt")" = "precious" ] || fail "a symlinked temporary name was followed"
cmp -s "$work/ref/a.cc" "$work/symlink/a.cc" || fail "the file next to the symlinks was not migrated"
[ ! -L "$work/symlink/a.cc" ] || fail "the migrated file is a symlink"

# Modes, owner and hard links are kept; a read-only file is refused.
for mode in 0755 0600; do
  mkdir "$work/mode$mode"
  cp "$work/legacy.cc" "$work/mode$mode/a.cc"
  chmod "$mode" "$work/mode$mode/a.cc"
  "$tool" -i "$work/mode$mode/a.cc" "${flags[@]}" > /dev/null
  [ "$(stat -c %a "$work/mode$mode/a.cc")" = "${mode#0}" ] || fail "mode $mode was not kept"
  cmp -s "$work/ref/a.cc" "$work/mode$mode/a.cc" || fail "the file with mode $mode was not migrated"
done
mkdir "$work/readonly"
cp "$work/legacy.cc" "$work/readonly/a.cc"
chmod 0444 "$work/readonly/a.cc"
status=0
"$tool" -i "$work/readonly/a.cc" "${flags[@]}" > "$work/readonly/out.txt" 2> "$work/readonly/err.txt" ||
  status=$?
[ "$status" -eq 2 ] || fail "read-only file: exit $status, want 2"
grep -q "is read-only (mode 0444)" "$work/readonly/err.txt" || fail "read-only file: no message"
cmp -s "$work/legacy.cc" "$work/readonly/a.cc" || fail "the read-only file was changed"
grep -q "0 changed" "$work/readonly/out.txt" || fail "read-only file: counted as changed"
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$work/owner"
  cp "$work/legacy.cc" "$work/owner/a.cc"
  chown 12345:23456 "$work/owner/a.cc"
  "$tool" -i "$work/owner/a.cc" "${flags[@]}" > /dev/null
  [ "$(stat -c %u:%g "$work/owner/a.cc")" = "12345:23456" ] || fail "the owner was not kept"
fi
mkdir "$work/links"
cp "$work/legacy.cc" "$work/links/a.cc"
ln "$work/links/a.cc" "$work/links/b.cc"
inode=$(stat -c %i "$work/links/a.cc")
"$tool" -i "$work/links/a.cc" "${flags[@]}" > /dev/null
[ "$(stat -c %i:%h "$work/links/a.cc")" = "$inode:2" ] || fail "the hard link was split"
cmp -s "$work/ref/a.cc" "$work/links/b.cc" || fail "the other hard link does not see the migration"
# In place (hard link): a write that fails once is undone; one that keeps failing keeps a backup.
case_dir="$work/linkfail"
mkdir "$case_dir"
cp "$work/legacy.cc" "$case_dir/a.cc"
ln "$case_dir/a.cc" "$case_dir/b.cc"
env LD_PRELOAD="$shim" SPMD_FAIL_PATH="$case_dir/a.cc" SPMD_FAIL_AFTER=64 SPMD_FAIL_COUNT=1 \
  "$tool" -i "$case_dir/a.cc" "${flags[@]}" > "$case_dir/out.txt" 2> "$case_dir/err.txt" &&
  fail "hard link, failing write: exit 0"
cmp -s "$work/legacy.cc" "$case_dir/b.cc" || fail "hard link, failing write: not written back"
grep -q "original contents were written back" "$case_dir/err.txt" || fail "hard link: no message"
[ -z "$(find "$case_dir" -name '.*spmd-migrate*')" ] || fail "hard link: the backup was left"
mkdir "$work/linkfull"
cp "$work/legacy.cc" "$work/linkfull/a.cc"
ln "$work/linkfull/a.cc" "$work/linkfull/b.cc"
env LD_PRELOAD="$shim" SPMD_FAIL_PATH="$work/linkfull/a.cc" SPMD_FAIL_FALLOCATE=1 \
  "$tool" -i "$work/linkfull/a.cc" "${flags[@]}" > /dev/null 2> "$work/linkfull/err.txt" &&
  fail "hard link, no space to reserve: exit 0"
cmp -s "$work/legacy.cc" "$work/linkfull/a.cc" || fail "hard link, no space: the file changed"

# Shell metacharacters in the file name: no command runs, the diff applies.
mkdir "$work/meta"
meta="$work/meta/q'\$(touch PWNED)'\"; touch PWNED2 #.cc"
cp "$work/legacy.cc" "$meta"
(cd "$work/meta" && "$tool" --diff "$meta" "${flags[@]}" > "$work/meta.diff" 2> /dev/null) || true
[ ! -e "$work/meta/PWNED" ] && [ ! -e "$work/meta/PWNED2" ] || fail "a command ran from a file name"
grep -q "^+.*spmd::shard_map" "$work/meta.diff" || fail "--diff printed no migration"
cp "$work/legacy.cc" "$work/patched.cc"
patch -s "$work/patched.cc" < "$work/meta.diff"
cmp -s "$work/ref/a.cc" "$work/patched.cc" || fail "the --diff output does not patch to the -i result"
(cd "$work/meta" && "$tool" -i "$meta" "${flags[@]}" > /dev/null)
cmp -s "$work/ref/a.cc" "$meta" || fail "the file with metacharacters was not migrated"
[ ! -e "$work/meta/PWNED" ] && [ ! -e "$work/meta/PWNED2" ] || fail "a command ran from a file name"

# --export-fixes to a path that cannot be written.
for target in "$work/missing/dir/fixes.yaml" "$work"; do
  status=0
  "$tool" --export-fixes="$target" "$work/legacy.cc" "${flags[@]}" > /dev/null \
    2> "$work/fixes_err.txt" || status=$?
  [ "$status" -eq 2 ] || fail "--export-fixes=$target: exit $status, want 2"
  grep -q "cannot write" "$work/fixes_err.txt" || fail "--export-fixes=$target: no reason given"
done
echo "PASS: full disk (ENOSPC, EIO, partial write, fsync), temporary-name symlinks, modes 0755/0600," \
     "owner, hard links, read-only refused, shell metacharacters, unwritable --export-fixes"
