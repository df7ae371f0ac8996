#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NumPy's side of kernels_bench's matmul table: GFLOP/s of numpy.matmul on square matrices.

Usage: numpy_matmul.py --sizes=256,512 --dtypes=float32,float64 --reps=7 --target=0.2
Prints `blas <libraries>` (the BLAS that NumPy loaded, read from /proc/self/maps: Debian's NumPy
takes whatever libblas.so.3 resolves to), then `<dtype> <n> <median GFLOP/s> <best GFLOP/s>` per
case: median (best) over reps of calibrated call counts, the method of bench/bench_util.h.
Exits 3, saying why, when NumPy is missing.
"""
import argparse
import statistics
import sys
import time


def loaded_blas():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    names = ("blas", "blis", "mkl", "atlas")
    found = sorted(p for p in paths if any(n in p.rsplit("/", 1)[-1].lower() for n in names))
    return " ".join(found) or "none found in /proc/self/maps"


def seconds_per_call(f, calls):
    start = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - start) / calls


def calibrate(f, target):
    f()
    calls = 1
    while seconds_per_call(f, calls) * calls < target:
        calls *= 2
    return calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="256")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.2)
    args = parser.parse_args()
    try:
        import numpy as np
    except ImportError as error:
        print(f"no NumPy in {sys.executable}: {error}")
        sys.exit(3)
    print("blas", loaded_blas())
    for dtype in args.dtypes.split(","):
        for n in map(int, args.sizes.split(",")):
            values = (np.arange(n * n) % 17 - 8).astype(dtype).reshape(n, n) / 8
            a, b = values, values.T.copy()
            f = lambda: np.matmul(a, b)
            calls = calibrate(f, args.target)
            times = [seconds_per_call(f, calls) for _ in range(args.reps)]
            flops = 2.0 * n**3
            print(dtype, n, f"{flops / statistics.median(times) / 1e9:.1f}",
                  f"{flops / min(times) / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
