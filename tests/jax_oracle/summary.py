#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints what the committed JAX oracle corpus holds: cases per suite, value and error cases,
error kinds, and spmd's deliberate differences with their reasons (plain Python, no JAX)."""

import collections
import json
import os

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def main():
  totals = collections.Counter()
  reasons = collections.Counter()
  for name in sorted(os.listdir(CORPUS)):
    suite = json.load(open(os.path.join(CORPUS, name)))
    cases = suite["cases"]
    errors = [c for c in cases if "error" in c]
    differences = [c for c in cases if "spmd" in c]
    inexact = [c for c in cases if not c.get("exact", True)]
    print(f"{name}: jax {suite['jax']}, {len(cases)} cases: {len(cases) - len(errors)} values, "
          f"{len(errors)} errors, {len(differences)} deliberate differences, {len(inexact)} "
          "compared within the ulp bound")
    for key, n in collections.Counter(c["error"]["key"] or "(bare NotImplementedError)"
                                      for c in errors).most_common():
      print(f"  error {n:4d}  {key}")
    totals.update(values=len(cases) - len(errors), errors=len(errors),
                  differences=len(differences))
    reasons.update(c["spmd"]["reason"] for c in differences)
  print(f"total: {totals['values']} values, {totals['errors']} errors, "
        f"{totals['differences']} deliberate differences")
  for reason, n in reasons.most_common():
    print(f"  {n:4d}  {reason}")


if __name__ == "__main__":
  main()
