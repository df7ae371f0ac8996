#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints jax.random reference values for tests/runtime/threefry_test.cc.

Runs itself inside <repo>/.venv-oracle (created on first use with a pinned CPU jax). Floats are
printed as their IEEE bit patterns; long outputs as first/last values plus an FNV-1a hash over
their 32-bit words (64-bit values hash as hi word then lo word), which the C++ test recomputes.
Float results are XLA:CPU's and depend on the host having FMA (x86-64 AVX2/AVX-512 machines do).
"""

import os

from jax_venv import reexec_in

reexec_in("current", __file__)

import numpy as np  # noqa: E402  (only importable inside the venv)
import jax  # noqa: E402
import jax.extend.random  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src.random import prng as jax_prng  # noqa: E402

SEEDS = [0, 1, 42, -1, 2**31 - 1, 2**32 + 5]
KEY_SEEDS = [0, 42]  # Keys whose derived values (split, bits, samples) are recorded.


def fnv1a(words):
  h = 0xCBF29CE484222325
  for w in np.asarray(words, dtype=np.uint64).ravel().tolist():
    h = ((h ^ w) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
  return h


def words(x):
  """uint32 words of an array; float64/uint64 elements become (hi, lo) pairs."""
  x = np.asarray(x)
  if x.dtype.itemsize == 8:
    u = x.view(np.uint64).ravel()
    return np.stack([u >> np.uint64(32), u & np.uint64(0xFFFFFFFF)], axis=1).ravel()
  return x.view(np.uint32).ravel()


def hexes(x):
  return ", ".join(f"0x{int(v):08x}" for v in words(x))


def emit(name, x, head=4):
  """Short arrays in full; long ones as count, first/last `head` elements and a hash."""
  x = np.asarray(x).ravel()
  if x.size <= 8:
    print(f"{name} = {{{hexes(x)}}}")
  else:
    print(f"{name} n={x.size} first={{{hexes(x[:head])}}} last={{{hexes(x[-head:])}}} "
          f"fnv=0x{fnv1a(words(x)):016x}")


def key_of(seed):
  return jax.random.PRNGKey(seed)


def dump_derived(tag):
  for s in KEY_SEEDS:
    k = key_of(s)
    emit(f"{tag} split(seed={s}, 2)", jax.random.split(k, 2))
    emit(f"{tag} split(seed={s}, 5)", jax.random.split(k, 5))
    for n in [1, 3, 8, 1000]:
      emit(f"{tag} bits(seed={s}, {n})", jax.random.bits(k, (n,), jnp.uint32))
    for n in [1, 7, 1001]:
      emit(f"{tag} uniform01(seed={s}, {n})", jax.random.uniform(k, (n,), jnp.float32))
      emit(f"{tag} uniform(-2,3)(seed={s}, {n})",
           jax.random.uniform(k, (n,), jnp.float32, -2.0, 3.0))
    for n in [1, 7, 1001, 100000]:
      emit(f"{tag} normal(seed={s}, {n})", jax.random.normal(k, (n,), jnp.float32))
  # Only the flat element count matters, not the shape.
  k = key_of(0)
  assert np.array_equal(jax.random.bits(k, (2, 3), jnp.uint32).ravel(),
                        jax.random.bits(k, (6,), jnp.uint32))
  assert np.array_equal(jax.random.normal(k, (4, 5, 6)).ravel(), jax.random.normal(k, (120,)))


def sweep_bits(key, bit_width, shape):
  """A fake PRNG whose bits enumerate all 2**23 float32 mantissas (bits >> 9 == index)."""
  del key
  assert bit_width == 32
  n = int(np.prod(shape))
  return jax.lax.shift_left(jax.lax.iota(np.uint32, n), np.uint32(9)).reshape(shape)


def dump_sweep():
  """Every float32 output of uniform/normal, produced by jax.random's own sampling code."""
  impl = jax_prng.PRNGImpl(
      key_shape=(2,), seed=jax_prng.prngs["threefry2x32"].seed,
      split=jax_prng.prngs["threefry2x32"].split, random_bits=sweep_bits,
      fold_in=jax_prng.prngs["threefry2x32"].fold_in, name="mantissa_sweep", tag="swp")
  key = jax.random.key(0, impl=impl)
  n = 2**23
  emit("sweep uniform(-2,3)", jax.random.uniform(key, (n,), jnp.float32, -2.0, 3.0))
  emit("sweep normal", jax.random.normal(key, (n,), jnp.float32))


def main():
  cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
  print(f"jax {jax.__version__} jaxlib {jax.lib.__version__} backend={jax.default_backend()} "
        f"host_fma={' fma ' in cpu.replace(chr(10), ' ')}")
  print(f"defaults: jax_threefry_partitionable={jax.config.jax_threefry_partitionable} "
        f"jax_enable_x64={jax.config.jax_enable_x64} "
        f"jax_default_prng_impl={jax.config.jax_default_prng_impl}")
  for s in SEEDS:
    emit(f"key(seed={s})", jax.random.key_data(key_of(s)))
  for s in KEY_SEEDS:
    for d in [0, 1, 7, 2**31]:
      emit(f"fold_in(seed={s}, {d})", jax.random.key_data(jax.random.fold_in(key_of(s), d)))
  # Random123's known-answer vectors for Threefry-2x32-20, through JAX's own primitive.
  for key, ctr in [((0, 0), (0, 0)), ((2**32 - 1,) * 2, (2**32 - 1,) * 2),
                   ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3))]:
    out = jax.extend.random.threefry_2x32(np.uint32(key), np.uint32(ctr))
    emit(f"threefry2x32(key={{{hexes(np.uint32(key))}}}, x={{{hexes(np.uint32(ctr))}}})", out)
  xs = np.float32([-1.0, -0.99999994, -0.5, 0.0, 1e-20, 0.3, 0.9999, 1.0])
  emit("erf_inv(-1, -0.99999994, -0.5, 0, 1e-20, 0.3, 0.9999, 1)", jax.lax.erf_inv(xs))
  dump_derived("partitionable")
  dump_sweep()

  jax.config.update("jax_threefry_partitionable", False)
  dump_derived("original")
  jax.config.update("jax_threefry_partitionable", True)

  jax.config.update("jax_enable_x64", True)
  for s in [-1, 2**40 + 3]:
    emit(f"x64 key(seed={s})", jax.random.key_data(key_of(s)))
  k = key_of(0)
  for part in [True, False]:
    jax.config.update("jax_threefry_partitionable", part)
    emit(f"x64 partitionable={part} bits64(seed=0, 3)", jax.random.bits(k, (3,), jnp.uint64))
    emit(f"x64 partitionable={part} uniform64(-2,3)(seed=0, 1001)",
         jax.random.uniform(k, (1001,), jnp.float64, -2.0, 3.0))


if __name__ == "__main__":
  main()
