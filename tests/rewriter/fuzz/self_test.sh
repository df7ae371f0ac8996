#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz driver can fail: fuzz.py run over a deliberately broken spmd-migrate (the real tool
# wrapped so that it breaks one promise) must exit 1 and count the fault in its table, for each
# fault it checks: a crash, a hang, a file modified that does not compile (and edits that are not
# stable), and migrated code that runs differently from its legacy build.
# Usage: self_test.sh <spmd-migrate> <repository root> <build folder> <clang++> <c++> [<library>...]
#   <library>: those the static runtime needs besides fmt (BLIS, CUDA's), for the behaviour builds
set -euo pipefail
tool=$1 root=$2 build=$3 clang=$4 cxx=$5
libs=()
for lib in "${@:6}"; do libs+=(--lib "$lib"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The broken tool: $FAULT says how; the arguments are the real tool's.
cat > "$work/broken-tool" <<'TOOL'
#!/usr/bin/env bash
file=""
for arg in "$@"; do [[ $arg == *.cc ]] && file=$arg; done
case $FAULT in
  crash) kill -SEGV $$ ;;
  hang) exec sleep 600 ;;
  modify)  # edits every file it is given, compiling or not, differently on every run
    "$REAL_TOOL" "$@"; status=$?
    echo "int fuzz_broken_$RANDOM;" >> "$file"
    exit $status ;;
  behaviour)  # what it migrates prints one more line
    cp "$file" "$file.before"
    "$REAL_TOOL" "$@"; status=$?
    if [[ $1 == -i ]] && ! cmp -s "$file" "$file.before"; then
      printf '#include <cstdio>\nstatic const int fuzz_broken = std::puts("broken");\n' >> "$file"
    fi
    exit $status ;;
esac
TOOL
chmod +x "$work/broken-tool"

# expect <fault> <table rows, ';' between> <fuzz.py arguments...>: the run fails and each row
# counts one or more.
expect() {
  local fault=$1 rows=$2 status=0 row
  shift 2
  FAULT=$fault REAL_TOOL=$tool "${PYTHON:-python3}" "$root/tests/rewriter/fuzz/fuzz.py" \
    --tool "$work/broken-tool" --root "$root" --build "$build" --clang "$clang" --cxx "$cxx" \
    --jobs 1 --work "$work/$fault" "${libs[@]}" "$@" > "$work/$fault.txt" 2>&1 || status=$?
  [[ $status == 1 ]] || { cat "$work/$fault.txt"; fail "$fault: fuzz.py exited $status, not 1"; }
  IFS=';' read -ra rows <<< "$rows"
  for row in "${rows[@]}"; do
    grep -Eq "^\| $row \| [1-9][0-9]* \|$" "$work/$fault.txt" ||
      { cat "$work/$fault.txt"; fail "$fault: the row '$row' counts nothing"; }
  done
  echo "$fault: detected (${rows[*]})"
}

# The mutants are the same on every run (fuzz.py's fixed --random-seed): of the first three, two do
# not compile and one compiles and is changed by the tool, which is all that each fault needs.
expect crash "crashes" --count 2 --behaviour 0
expect hang "hangs" --count 1 --behaviour 0 --timeout 5
expect modify "modified files that do not compile;idempotence failures" --count 3 --behaviour 0
expect behaviour "behaviour mismatches" --count 3 --behaviour 1
