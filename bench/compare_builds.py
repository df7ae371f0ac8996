#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares one benchmark program between two builds (before/after a change), in one run.

Runs BEFORE/bench/PROG and AFTER/bench/PROG alternately (ABAB, the order swapped every round),
parses every markdown table they print, and prints the same tables with each numeric cell
replaced by the median over rounds of after/before, so that load that comes and goes on a shared
machine falls on both builds (docs/benchmarks.md, "Method"). A ratio above 1 is slower after for
times, and larger after for ratios and bandwidths: read each column's meaning from its header.
Cells printed as "median (min)" are compared by their median, or by their min with --use=min
(the fastest rep of a run: what the code costs when the scheduler does not get in the way).

  bench/compare_builds.py --before=build-old --after=build --rounds=5 dispatch_bench -- --reps=7
"""
import argparse
import re
import statistics
import subprocess
import sys

NUMBER = re.compile(r"^-?\d+(\.\d+)?")
MIN = re.compile(r"\((-?\d+(\.\d+)?)\)")


def run(build, prog, args):
    out = subprocess.run([f"{build}/bench/{prog}", *args], check=True, capture_output=True,
                         text=True).stdout
    return out.splitlines()


def value(cell, use):
    """The cell's number: its median, or with use == "min" the min in parentheses if it has one."""
    if use == "min" and (m := MIN.search(cell)):
        return float(m.group(1))
    m = NUMBER.match(cell)
    return float(m.group()) if m else None


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="build folder of the baseline")
    parser.add_argument("--after", required=True, help="build folder of the change")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--use", choices=["median", "min", "both"], default="median",
                        help="which figure of a 'median (min)' cell to compare (both: one table "
                             "each, from the same runs)")
    parser.add_argument("prog")
    parser.add_argument("args", nargs="*")
    opts = parser.parse_args()

    runs = {"before": [], "after": []}
    for r in range(opts.rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for side in order:
            build = opts.before if side == "before" else opts.after
            runs[side].append(run(build, opts.prog, opts.args))
        print(f"round {r + 1}/{opts.rounds} done", file=sys.stderr)
    for use in ["median", "min"] if opts.use == "both" else [opts.use]:
        print(f"after / before, median over {opts.rounds} rounds of each cell's {use} ratio:")
        print_ratios(runs, opts.rounds, use)


def print_ratios(runs, rounds, use):
    """Prints the after run's tables with each measured cell replaced by its ratio."""
    template = runs["after"][0]
    for i, line in enumerate(template):
        if not line.startswith("|") or set(line) <= set("|-: "):
            print(line)
            continue
        out = []
        for j, cell in enumerate(cells(line)):
            seen = {cells(lines[i])[j] for lines in runs["before"] + runs["after"]
                    if i < len(lines) and j < len(cells(lines[i]))}
            if len(seen) == 1:  # a label (devices, op, size), the same in every run
                out.append(cell)
                continue
            ratios = []
            for before, after in zip(runs["before"], runs["after"]):
                if i >= len(before) or i >= len(after):
                    break
                b, a = cells(before[i]), cells(after[i])
                if j >= len(b) or j >= len(a):
                    break
                vb, va = value(b[j], use), value(a[j], use)
                if vb is not None and va is not None and vb != 0:
                    ratios.append(va / vb)
            if len(ratios) == rounds:
                out.append(f"{statistics.median(ratios):.3f}")
            else:
                out.append(cell)
        print("| " + " | ".join(out) + " |")


if __name__ == "__main__":
    main()
