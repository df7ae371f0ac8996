#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Speed baseline against JAX: runs build/bench/jax_baseline_bench (spmd) and bench/jax_baseline.py
# (JAX 0.10.2 on 8 XLA:CPU host devices, in .venv-oracle) on the same workloads, alternating the
# two processes for R rounds so that load on a shared machine falls on both, and prints a markdown
# table of median times and of the per-round spmd/JAX ratio's median.
#
#   bench/jax_baseline.sh [args for both programs, e.g. --quick or --sizes=4K,1M]
#   R=5 BUILD_DIR=build-release bench/jax_baseline.sh
#
# Targets: spmd >= 20x faster than JAX on shard_map dispatch, >= 10x on either pmap's, >= 3x on
# train_step, and not slower on any collective.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${R:-3}"
bench="${BUILD_DIR:-$repo/build}/bench/jax_baseline_bench"
if [[ ! -x "$bench" ]]; then
  echo "error: $bench not built (make jax_baseline_bench in the build folder)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for ((round = 1; round <= rounds; round++)); do
  # Swapping the order every round keeps a load trend from favouring whichever runs first.
  order=(spmd jax)
  if ((round % 2 == 0)); then order=(jax spmd); fi
  for side in "${order[@]}"; do
    echo "round $round/$rounds: $side" >&2
    if [[ $side == spmd ]]; then
      "$bench" "$@" >"$work/$round.spmd.json"
    else
      python3 "$repo/bench/jax_baseline.py" "$@" >"$work/$round.jax.json"
    fi
  done
done

python3 - "$work" "$rounds" <<'EOF'
import json
import os
import statistics
import sys

work, rounds = sys.argv[1], int(sys.argv[2])
spmd = [json.load(open(f"{work}/{r}.spmd.json")) for r in range(1, rounds + 1)]
jax = [json.load(open(f"{work}/{r}.jax.json")) for r in range(1, rounds + 1)]


def target(name):
  """The speedup over JAX asked of a workload (docs/benchmarks.md), or None."""
  if name == "dispatch.shard_map":
    return 20.0
  if name.startswith("dispatch."):
    return 10.0
  if name == "train_step":
    return 3.0
  if name.split(".")[0] in ("psum", "all_gather", "all_to_all"):
    return 1.0
  return None


def us(seconds):
  return f"{seconds * 1e6:.1f}" if seconds < 1e-2 else f"{seconds * 1e6:.0f}"


print(f"spmd vs JAX, 8 CPU devices on {os.cpu_count()} cores, {rounds} alternating round(s); "
      "times are medians over rounds of each program's median µs per call, ratios are medians "
      "of per-round ratios")
print()
print("| workload | spmd µs | JAX µs | spmd/JAX | speedup | target |")
print("|---|---|---|---|---|---|")
for name in spmd[0]:
  # "dispatch.pmap/legacy" is a second spmd implementation of JAX's "dispatch.pmap".
  jax_name = name.split("/")[0]
  ours = [s[name] for s in spmd]
  theirs = [j[jax_name] for j in jax]
  ratio = statistics.median(o / t for o, t in zip(ours, theirs))
  goal = target(jax_name)
  verdict = "-" if goal is None else f"{goal:g}x: {'met' if 1 / ratio >= goal else 'MISSED'}"
  print(f"| {name} | {us(statistics.median(ours))} | {us(statistics.median(theirs))} | "
        f"{ratio:.3f} | {1 / ratio:.2f}x | {verdict} |")
EOF
