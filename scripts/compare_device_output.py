#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares an example's output on CUDA devices with its output on CPU devices (gpu-check.sh).

Usage: scripts/compare_device_output.py CPU_OUTPUT CUDA_OUTPUT

Device names differ ("cuda:3" against "cpu:3"), and the tables that print them pad their columns
and draw their rules to the widest name, so both outputs are read as tokens: "cuda:" is read as
"cpu:", runs of spaces and of '-' count as one. Numbers printed from float math that the two
backends round differently in the last place (cuBLAS against BLIS, CUDA's libm against glibc's)
may differ by a relative or absolute 1e-5 (numbers printed as floats only; counts and
indices must be equal). make_mesh's advice for more devices names each platform's own setting
(SPMD_CPU_DEVICES, SPMD_CUDA_DEVICES_PER_GPU) and is not compared. Everything else must be equal. Exit 0 when the outputs
agree (saying whether any number needed the tolerance), 1 when they do not (the first difference),
2 on bad arguments.
"""
import math
import re
import sys

TOLERANCE = 1e-5
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")
# A token is a number, a run of word characters, or one other character; spaces and '-' runs
# between them are layout.
TOKEN = re.compile(NUMBER.pattern + r"|\w+|-+|\S")
# The parenthesis of "Start the program with more devices (...)." up to the line's last ")."
ADVICE = re.compile(r"(Start the program with more devices) \(.*\)\.")


def tokens(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = ADVICE.sub(r"\1 (advice).", f.read().replace("cuda:", "cpu:"))
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for token in TOKEN.findall(line):
            out.append((line_no, "-" if token.startswith("--") else token))
    return out


# Only numbers printed as floats (a point or an exponent) get the tolerance: counts must be equal.
def as_float(token):
    if NUMBER.fullmatch(token) is None or not re.search(r"[.eEna]", token):
        return None
    return float(token)


def close(a, b):
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b or abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    cpu, cuda = tokens(argv[1]), tokens(argv[2])
    tolerated, largest = 0, 0.0
    for (line, a), (cuda_line, b) in zip(cpu, cuda):
        if a == b:
            continue
        x, y = as_float(a), as_float(b)
        if x is not None and y is not None and close(x, y):
            tolerated += 1
            largest = max(largest, abs(x - y))
            continue
        print(f"differs: '{a}' (cpu, line {line}) against '{b}' (cuda, line {cuda_line})")
        return 1
    if len(cpu) != len(cuda):
        print(f"differs: {len(cpu)} tokens on cpu, {len(cuda)} on cuda")
        return 1
    if tolerated:
        print(f"equal within {TOLERANCE:g}: {tolerated} numbers differ, by at most {largest:.3g}")
    else:
        print("equal (device names and column widths aside)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
