#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""JAX's side of the speed baseline (bench/jax_baseline.sh runs it against jax_baseline_bench).

Times, on 8 XLA:CPU host devices in one process (jax.make_mesh((8,), ('i',))), the workloads that
bench/jax_baseline_bench.cc times with spmd, and prints {workload: median seconds per call} as
JSON on stdout (progress goes to stderr):

  dispatch.shard_map   jit(shard_map(identity)) on a pre-sharded f32[8,16], P('i') -> P('i')
  dispatch.pmap        pmap(lambda v: v * 2) on a pre-sharded f32[8,16]
  psum.S, all_gather.S, all_to_all.S
                       jit(shard_map(collective over 'i')), per-device f32 block of S bytes
                       (4K, 1M, 16M); all_gather and all_to_all tiled along dimension 0
  train_step           one data-parallel SGD step of a 2-layer MLP, see train_step() below
  train_step.per_array the same step with one pmean per array (train_step_per_array())

Every call is timed to block_until_ready() after warm-up (one compilation), inputs already placed
with their NamedSharding so no host transfer is timed; repetition counts are calibrated and the
median of --reps reps is reported (docs/benchmarks.md, "Method").

Runs itself inside <repo>/.venv-oracle (created on first use with a pinned CPU jax).

  bench/jax_baseline.py [--quick] [--reps=7] [--target-s=0.2] [--sizes=4K,1M,16M]
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "jax_oracle"))
from jax_venv import reexec_in  # noqa: E402  (the oracle's pinned venvs)

DEVICES = 8
# The first train_step's loss on pattern() data; jax_baseline_bench.cc checks spmd against it.
FIRST_STEP_LOSS = 0.04474314


reexec_in("current", __file__)

# XLA reads the flag once, when jax initialises its CPU backend.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={DEVICES}").strip()

import numpy as np  # noqa: E402  (only importable inside the venv)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402


def log(message):
  print(message, file=sys.stderr, flush=True)


def calibrate(body, target_s):
  """Doubles k until body(k) lasts at least target_s (after one warm-up call), as bench_util.h."""
  body(1)
  k = 1
  while k < (1 << 24):
    start = time.perf_counter()
    body(k)
    if time.perf_counter() - start >= target_s:
      break
    k *= 2
  return k


def seconds_per_call(call, reps, target_s):
  """Median over reps of the time per call(), each rep running a calibrated number of calls."""
  def body(k):
    for _ in range(k):
      call().block_until_ready()

  k = calibrate(body, target_s)
  times = []
  for _ in range(reps):
    start = time.perf_counter()
    body(k)
    times.append((time.perf_counter() - start) / k)
  return float(np.median(times))


def parse_size(text):
  units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
  return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def pattern(n, modulus, scale):
  """((0..n-1) % modulus - modulus // 2) * scale: the deterministic values both sides use."""
  return (np.arange(n) % modulus - modulus // 2).astype(np.float32) * np.float32(scale)


def local_grads(x, t, w1, b1, w2, b2):
  """The gradients and loss of relu(x @ w1 + b1) @ w2 + b2 against t on this device's rows.

  loss = mean squared error. The gradient is written by hand (check_against_grad compares the
  step with jax.grad) because spmd has no autodiff: jax_baseline_bench.cc runs exactly these ops.
  """
  z = x @ w1 + b1
  h = jnp.maximum(z, 0.0)
  d = h @ w2 + b2 - t
  loss = jnp.mean(d * d)
  dy = d * (2.0 / d.size)
  g_w2 = h.T @ dy
  g_b2 = jnp.sum(dy, axis=0)
  dz = jnp.where(z > 0, dy @ w2.T, 0.0)
  g_w1 = x.T @ dz
  g_b1 = jnp.sum(dz, axis=0)
  return (g_w1, g_b1, g_w2, g_b2, loss)


def update(w1, b1, w2, b2, means):
  """One SGD step with the full-batch (pmean'd) gradients; the loss passes through."""
  lr = 0.01
  g_w1, g_b1, g_w2, g_b2, loss = means
  return (w1 - lr * g_w1, b1 - lr * g_b1, w2 - lr * g_w2, b2 - lr * g_b2, loss)


def train_step(x, t, w1, b1, w2, b2):
  """One data-parallel SGD step: each device holds 32 rows; the gradients and the loss are
  pmean'd over 'i' as one pytree (one psum primitive), so the update is the full-batch one."""
  return update(w1, b1, w2, b2, jax.lax.pmean(local_grads(x, t, w1, b1, w2, b2), "i"))


def train_step_per_array(x, t, w1, b1, w2, b2):
  """train_step with one pmean per gradient and the loss (five psum primitives)."""
  grads = local_grads(x, t, w1, b1, w2, b2)
  return update(w1, b1, w2, b2, tuple(jax.lax.pmean(g, "i") for g in grads))


def check_against_grad(step_output, x, t, params):
  """The sharded hand-written step is full-batch SGD on jax.grad of the same loss."""
  def loss_fn(p):
    w1, b1, w2, b2 = p
    d = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2 - t
    return jnp.mean(d * d)

  grads = jax.grad(loss_fn)(params)
  for p, g, got in zip(params, grads, step_output):
    np.testing.assert_allclose(np.asarray(got), p - 0.01 * np.asarray(g), rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(float(step_output[4]), FIRST_STEP_LOSS, rtol=1e-5)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="tiny repetition counts (smoke run)")
  parser.add_argument("--reps", type=int)
  parser.add_argument("--target-s", type=float, help="minimum seconds per calibrated rep")
  parser.add_argument("--sizes", help="per-device block sizes, e.g. 4K,1M,16M")
  args = parser.parse_args()
  reps = args.reps or (2 if args.quick else 7)
  target_s = args.target_s or (0.002 if args.quick else 0.2)
  sizes = args.sizes or ("4K,1M" if args.quick else "4K,1M,16M")

  devices = jax.devices()
  if len(devices) != DEVICES or devices[0].platform != "cpu":
    sys.exit(f"expected {DEVICES} CPU devices, got {devices}")
  log(f"jax {jax.__version__}, {os.cpu_count()} cores, {DEVICES} CPU devices, "
      f"median of {reps} reps")
  mesh = jax.make_mesh((DEVICES,), ("i",))
  sharded = NamedSharding(mesh, P("i"))
  replicated = NamedSharding(mesh, P())
  results = {}

  # Dispatch: a trivial body, so the time is JAX's own per-call overhead.
  x = jax.device_put(np.arange(DEVICES * 16, dtype=np.float32).reshape(DEVICES, 16), sharded)
  identity = jax.jit(jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
  results["dispatch.shard_map"] = seconds_per_call(lambda: identity(x), reps, target_s)
  double = jax.pmap(lambda v: v * 2.0, axis_name="i")
  # pmap's own output sharding: placed so, its input needs no resharding.
  x_pmap = jax.device_put(x, double(x).sharding)
  results["dispatch.pmap"] = seconds_per_call(lambda: double(x_pmap), reps, target_s)
  log("dispatch done")

  # Collectives: device d's block is all d + 1, so the first element of every device's result
  # is known.
  ops = {
      "psum": (lambda b: jax.lax.psum(b, "i"), DEVICES * (DEVICES + 1) / 2),
      "all_gather": (lambda b: jax.lax.all_gather(b, "i", tiled=True), 1.0),
      "all_to_all": (lambda b: jax.lax.all_to_all(b, "i", 0, 0, tiled=True), 1.0),
  }
  for label in sizes.split(","):
    count = parse_size(label) // 4
    block = jax.device_put(np.repeat(np.arange(1, DEVICES + 1, dtype=np.float32), count), sharded)
    for name, (op, first) in ops.items():
      f = jax.jit(jax.shard_map(op, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
      got = [float(s.data[0]) for s in f(block).addressable_shards]
      if got != [first] * DEVICES:
        sys.exit(f"{name} at {label}: first elements {got}, expected {first}")
      results[f"{name}.{label}"] = seconds_per_call(lambda f=f, x=block: f(x), reps, target_s)
    del block
    log(f"collectives at {label} done")

  # Data-parallel training step: batch 256 (32 rows per device), 64 -> 128 -> 10.
  batch, d_in, d_hidden, d_out = 256, 64, 128, 10
  xs = pattern(batch * d_in, 13, 0.1).reshape(batch, d_in)
  ts = pattern(batch * d_out, 7, 0.1).reshape(batch, d_out)
  params = (pattern(d_in * d_hidden, 17, 0.01).reshape(d_in, d_hidden), pattern(d_hidden, 5, 0.01),
            pattern(d_hidden * d_out, 17, 0.01).reshape(d_hidden, d_out), pattern(d_out, 5, 0.01))
  for name, fn in (("train_step", train_step), ("train_step.per_array", train_step_per_array)):
    step = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=(P("i"), P("i")) + (P(),) * 4,
                                 out_specs=(P(),) * 5))
    x_placed, t_placed = jax.device_put(xs, sharded), jax.device_put(ts, sharded)
    state = [jax.device_put(p, replicated) for p in params]
    check_against_grad(step(x_placed, t_placed, *state), xs, ts, params)

    def one_step(step=step, state=state, x_placed=x_placed, t_placed=t_placed):
      # Feeds the updated parameters back, as a training loop does.
      out = step(x_placed, t_placed, *state)
      state[:] = out[:4]
      return out[4]

    results[name] = seconds_per_call(one_step, reps, target_s)
  log("train_step done")
  print(json.dumps(results))


if __name__ == "__main__":
  main()
