#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The migration demo: installs what is missing, builds spmd and spmd-migrate, migrates a copy of
# examples/legacy into a scratch folder (printing the tool's summary), builds the migrated copy
# against the spmd package of the build tree, then runs every program three ways on 8 CPU
# devices (legacy pmap, legacy source on the compat shim, migrated to shard_map) and prints
# whether every output matches the legacy one byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/setup.sh
scripts/build.sh -DSPMD_BUILD_TESTS=OFF -DSPMD_BUILD_REWRITER=ON
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo
echo "== spmd-migrate over a copy of examples/legacy (in $scratch)"
cp .clang-format "$scratch/"
names=()
for dir in examples/legacy/*/; do
  name=$(basename "$dir")
  names+=("$name")
  mkdir "$scratch/$name"
  cp "$dir/main.cc" "$scratch/$name/main.cc"
done
build/rewriter/spmd-migrate -i "$scratch"/*/main.cc -- -std=c++20 -I"$root/runtime/include"

echo
echo "== building the migrated copy against the spmd package (find_package(spmd))"
cat > "$scratch/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(migrated_examples CXX)
find_package(spmd CONFIG REQUIRED)
foreach(name ${names[*]})
  add_executable(\${name} \${name}/main.cc)
  target_compile_features(\${name} PRIVATE cxx_std_20)
  # Nothing of pmap may be left: its declarations are deprecated.
  target_compile_options(\${name} PRIVATE -Werror=deprecated-declarations)
  target_link_libraries(\${name} PRIVATE spmd::runtime)
endforeach()
EOF
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -Dspmd_DIR="$root/build" \
  >/dev/null
cmake --build "$scratch/build" -j "${SPMD_JOBS:-$(nproc)}" >/dev/null

echo
echo "== running on 8 CPU devices"
run() { SPMD_CPU_DEVICES=8 "$1" >"$2" 2>&1 && echo ok || echo "failed ($?)"; }
verdict() { cmp -s "$1" "$2" && echo "identical" || echo "DIFFERENT"; }
printf '| %-22s | %-6s | %-22s | %-22s |\n' program lines "compat shim vs legacy" \
  "migrated vs legacy"
printf '|%s|%s|%s|%s|\n' "------------------------" "--------" "------------------------" \
  "------------------------"
all_same=true
for name in "${names[@]}"; do
  out="$scratch/$name"
  legacy=$(run "build/examples/legacy/$name/${name}_legacy" "$out/legacy.out")
  compat=$(run "build/examples/legacy/$name/${name}_compat" "$out/compat.out")
  migrated=$(run "$scratch/build/$name" "$out/migrated.out")
  if [ "$legacy$compat$migrated" != okokok ]; then
    echo "$name: legacy $legacy, compat $compat, migrated $migrated" >&2
    all_same=false
    continue
  fi
  shim=$(verdict "$out/legacy.out" "$out/compat.out")
  new=$(verdict "$out/legacy.out" "$out/migrated.out")
  [ "$shim$new" = identicalidentical ] || all_same=false
  printf '| %-22s | %6s | %-22s | %-22s |\n' "$name" "$(wc -l <"$out/legacy.out")" "$shim" "$new"
done
echo
if $all_same; then
  echo "every output matches the legacy program byte for byte"
else
  echo "some outputs differ (see above)" >&2
  exit 1
fi
