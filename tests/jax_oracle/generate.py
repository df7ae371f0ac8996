#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the JAX oracle corpus in tests/jax_oracle/corpus/ (read by oracle_test.cc).

Usage: tests/jax_oracle/generate.py [--only NAME ...] [--seed N] [--out DIR]

Each corpus file is produced by real JAX in its own virtual environment, created on first use:
  shard_map.json    jax.shard_map                       .venv-oracle         (jax 0.10.2)
  pmap.json         jax.pmap (shard_map-based, current) .venv-oracle         (jax 0.10.2)
  legacy_pmap.json  jax.pmap (legacy implementation)    .venv-oracle-legacy  (jax 0.7.2)
  prng.json         jax.random keys and float32 bits    .venv-oracle         (jax 0.10.2)
  vmap.json         jax.vmap with collectives           .venv-oracle         (jax 0.10.2)
  nested_shard_map.json  shard_map in a shard_map body  .venv-oracle         (jax 0.10.2)
The cases are random but seeded: the same versions and seed give the same files, byte for byte
(PYTHONHASHSEED is pinned too: some of JAX's messages print Python sets, whose order follows the
string hashes; tests/jax_oracle/check_reproducible.sh checks it). The case format and the body
language are described in tests/jax_oracle/README.md.
"""

import argparse
import os
import subprocess

from jax_venv import venv_python

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
# Corpus file -> (venv, number of value cases, number of error cases).
SUITES = {
    "shard_map": ("current", 1200, 80),
    "pmap": ("current", 500, 40),
    "legacy_pmap": ("legacy", 500, 40),
    "prng": ("current", 300, 0),
    "vmap": ("current", 300, 12),
    # Nested cases raise three kinds of errors only (four of each at most: see build_suite).
    "nested_shard_map": ("current", 300, 10),
}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--only", nargs="*", choices=sorted(SUITES), default=sorted(SUITES))
  parser.add_argument("--seed", type=int, default=20261202)
  parser.add_argument("--out", default=CORPUS, help="folder of the corpus files (default: corpus/)")
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  for suite in args.only:
    kind, values, errors = SUITES[suite]
    out = os.path.join(args.out, f"{suite}.json")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu", PYTHONHASHSEED="0")
    subprocess.check_call([venv_python(kind), os.path.join(HERE, "oracle.py"), suite, out,
                           str(args.seed), str(values), str(errors)], env=env)


if __name__ == "__main__":
  main()
