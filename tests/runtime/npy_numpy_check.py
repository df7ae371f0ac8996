#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NumPy's side of npy_test.cc: reads the .npy files spmd wrote and writes NumPy's own.

Usage: npy_numpy_check.py DIR

For every dtype NAME, DIR/spmd_NAME.npy (written by spmd::save) must hold expected(NAME); the
script then writes DIR/numpy_NAME.npy (np.save, C order), DIR/numpy_NAME_fortran.npy (Fortran
order) and DIR/numpy_NAME_big.npy (big-endian) for spmd::load to check. bfloat16, which NumPy
lacks, is written by ml_dtypes and JAX as the 2-byte void '<V2': it is compared as uint16 bits.
Exits 1 with a message on the first mismatch.
"""

import os
import sys

import numpy as np

SHAPE = (2, 3)


def expected(name):
  """The values npy_test.cc writes for dtype `name` (the same formulas)."""
  i = np.arange(6)
  if name == "bool":
    return (i % 3 == 0).reshape(SHAPE)
  if name in ("int8", "int16", "int32", "int64"):
    return (i * 7 - 20).astype(name).reshape(SHAPE)
  if name in ("uint8", "uint16"):
    return (i * 40).astype(name).reshape(SHAPE)
  if name == "uint32":
    return (i * 700000000).astype(np.uint32).reshape(SHAPE)
  if name == "uint64":  # past int64's range
    return (i.astype(np.uint64) * np.uint64(3000000000000000000)).reshape(SHAPE)
  if name == "bfloat16":
    # (i - 2.5) * 0.75 is exact in bfloat16: the float32 bits' upper halves.
    f = ((i - 2.5) * 0.75).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16).view("<V2").reshape(SHAPE)
  if name in ("complex64", "complex128"):
    return ((i - 2.5) * 0.75 + i * 0.5j).astype(name).reshape(SHAPE)
  return ((i - 2.5) * 0.75).astype(name).reshape(SHAPE)


def main():
  folder = sys.argv[1]
  for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
    want = expected(name)
    got = np.load(os.path.join(folder, f"spmd_{name}.npy"))
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
      sys.exit(f"spmd_{name}.npy: NumPy read {got.dtype} {got.shape} {got!r}, expected "
               f"{want.dtype} {want.shape} {want!r}")
    np.save(os.path.join(folder, f"numpy_{name}.npy"), want)
    np.save(os.path.join(folder, f"numpy_{name}_fortran.npy"), np.asfortranarray(want))
    big = want.astype(want.dtype.newbyteorder(">")) if want.dtype.kind != "V" else want
    np.save(os.path.join(folder, f"numpy_{name}_big.npy"), big)
  print(f"NumPy {np.__version__} read every file spmd wrote")


if __name__ == "__main__":
  main()
