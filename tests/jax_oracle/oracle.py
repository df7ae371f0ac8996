# SPDX-License-Identifier: Apache-2.0
"""Builds one suite of the JAX oracle corpus; run by generate.py inside a venv with jax.

Usage: oracle.py SUITE OUT.json SEED VALUE_CASES ERROR_CASES

Random cases are drawn from a seeded generator, run through JAX, and written with JAX's result:
the output array, or the exception class, its key phrase (see KEY_PHRASES) and the message.
"""

import json
import math
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
from jax._src.lax import parallel as lax_parallel  # pargmax/pargmin are not exported
from jax.sharding import Mesh, PartitionSpec as P

DTYPES = ["int32", "float32", "bfloat16", "bool"]
AXIS_NAME_SETS = [["x", "y", "z"], ["i", "j", "k"], ["data", "model", "pipe"]]
REDUCTIONS = ["psum", "pmean", "pmax", "pmin"]
# One phrase of each JAX error message the corpus may contain; the C++ runner expects the same
# exception class and this phrase in spmd's message. A message with none of these stops the
# generator: add its phrase here (and make sure spmd says it too).
KEY_PHRASES = [
    "not evenly divisible by the corresponding mesh axis sizes",
    "which is too long to be compatible with the corresponding input value",
    "which is too long to be compatible with the corresponding output value",
    "out_specs which require replication which can't be statically inferred",
    "Found an unbound axis name",
    "unbound axis name",
    "ppermute sources and destinations must be unique",
    "does not represent a permutation",
    "axis_index_groups must cover all indices exactly once",
    "must match shard count",
    "must be divisible by shard_count",
    "all_to_all requires the size of the mapped axis",
    "has to be divisible by the size of the named axis",
    "only accepts a single axis",
    "has duplicate entries for",
    "pmap got inconsistent sizes for array axes to be mapped",
    "vmap got inconsistent sizes for array axes to be mapped",
    "must have at least one non-None value in in_axes",
    "requires that the number of devices",
    "Specified axis_size",
    "out of bounds for array of dimension",
    "is out of bounds for array of rank",
    "compiling computation that requires",
    "must be less than the number of dimensions",
    "Number of devices",
    "should evenly divide the shape",
    "add does not accept dtype bool",
    "reduce_sum does not accept dtype bool",
    "Unsupported pcast from=varying",
    "local devices to run due to nested pmapped or other parallel functions",
    "Leading axis size of input to pmapped function must equal the number of local devices",
    "which implies that its rank should be at least",
    "tuple index out of range",
    "pmap requires at least one argument with a mapped axis",
    # JAX does not check out_axes against the output rank; these internal failures leak instead.
    "cannot select an axis to squeeze out",
    "Operation creation failed",
    # A lowering failure on a valid program (psum_scatter with a negative scatter_dimension).
    "Cannot lower jaxpr with verifier errors",
    "RET_CHECK failure",  # XLA's verifier on some axis_index_groups (singleton groups)
    "cannot reshape array of shape",  # JAX's batching of all_to_all over a vmapped axis
    "can only accept axis_name which corresponds to one of varying",
]


class Gen:
  """Random choices for one case."""

  def __init__(self, seed):
    self.rng = np.random.default_rng(seed)

  def chance(self, p):
    return self.rng.random() < p

  def pick(self, seq):
    return seq[int(self.rng.integers(len(seq)))]

  def integer(self, lo, hi):  # inclusive
    return int(self.rng.integers(lo, hi + 1))

  def shuffled(self, seq):
    seq = list(seq)
    self.rng.shuffle(seq)
    return seq

  def values(self, shape, dtype, exact):
    if dtype == "bool":
      return self.rng.random(shape) < 0.5
    if dtype == "int32":
      return self.rng.integers(-8, 9, shape).astype(np.int32)
    v = self.rng.integers(-32, 33, shape) / 4.0 if exact else self.rng.standard_normal(shape)
    return v.astype(jnp.bfloat16 if dtype == "bfloat16" else np.float32)


# ---- the body language (also implemented by oracle_test.cc) ----


def jax_axes(axes):
  return axes[0] if len(axes) == 1 else tuple(axes)


def varying_axes(v):
  t = jax.typeof(v)
  mat = getattr(t, "manual_axis_type", None)
  return set(mat.varying) if mat is not None else set(getattr(t, "vma", ()))


def vary_over(v, axes):
  missing = tuple(a for a in axes if a not in varying_axes(v))
  return lax.pcast(v, missing, to="varying") if missing else v


def spmd_grouped_sum(v, ax, groups, mean):
  """spmd's psum/pmean with axis_index_groups, in JAX ops that check_vma accepts: masked
  full-axis sums, the result varying over the axes when there are several groups, and a mean
  dividing by each group's own size."""
  group_of = np.zeros(sum(len(g) for g in groups), np.int32)
  for k, g in enumerate(groups):
    group_of[g] = k
  position = lax.axis_index(ax)
  mine = jnp.asarray(group_of)[position]
  out = None
  for k in range(len(groups)):
    total = lax.psum(jnp.where(mine == k, v, jnp.zeros_like(v)), ax)
    out = total if out is None else jnp.where(mine == k, total, out)
  if mean:
    sizes = np.array([len(groups[k]) for k in group_of], np.float32)
    dtype = out.dtype if jnp.issubdtype(out.dtype, jnp.floating) else jnp.float32
    out = out / jnp.asarray(sizes)[position].astype(dtype)
  return out


def apply_step(step, v, args):
  op, groups = step["op"], step.get("groups")
  ax = jax_axes(step["axes"]) if "axes" in step else None
  if step.get("auto_pvary") and ax is not None and op != "pvary":
    # spmd casts a partly varying input to varying over every named axis, as JAX does for a
    # wholly invariant one (JAX itself rejects the mixed state).
    vma = varying_axes(v)
    missing = tuple(a for a in step["axes"] if a not in vma)
    if vma & set(step["axes"]) and missing:
      v = lax.pcast(v, missing, to="varying")
  if op in ("psum", "pmean") and step.get("spmd_groups"):
    return spmd_grouped_sum(v, ax, groups, op == "pmean")
  if op in REDUCTIONS:
    out = getattr(lax, op)(v, ax, axis_index_groups=groups)
    if step.get("spmd_groups") and len(groups) > 1:
      out = vary_over(out, step["axes"])  # spmd types a split reduction varying over its axes
    return out
  if op == "all_gather":
    to = {"to": step["to"]} if "to" in step else {}  # jax 0.7.2 has no `to`
    return lax.all_gather(v, ax, axis=step["axis"], tiled=step["tiled"], axis_index_groups=groups,
                          **to)
  if op == "pswapaxes":
    return lax.pswapaxes(v, ax, step["axis"], axis_index_groups=groups)
  if op == "psum_scatter":
    return lax.psum_scatter(v, ax, scatter_dimension=step["dim"], tiled=step["tiled"],
                            axis_index_groups=groups)
  if op == "all_to_all":
    return lax.all_to_all(v, ax, step["split"], step["concat"], tiled=step["tiled"],
                          axis_index_groups=groups)
  if op == "ppermute":
    return lax.ppermute(v, ax, perm=[tuple(p) for p in step["perm"]])
  if op == "pshuffle":
    return lax.pshuffle(v, ax, perm=step["perm"])
  if op in ("pargmax", "pargmin"):
    return getattr(lax_parallel, op)(v, ax)
  if op == "add_axis_index":
    return v + lax.axis_index(ax)
  if op == "mul_axis_size":
    return v * lax.psum(1, ax)
  if op == "add_arg1":
    return v + args[1]
  if op == "_mesh_order_marker":
    raise MeshOrderMarker()
  if op == "pvary":
    return lax.pcast(v, ax, to="varying") if hasattr(lax, "pcast") else lax.pvary(v, ax)
  raise AssertionError(op)


def run_body(steps):
  def body(*args):
    v = args[0]
    for step in steps:
      v = apply_step(step, v, args)
    return v
  return body


# ---- body generation: steps with parameters that fit the block (mostly) ----


def axes_subset(g, names):
  k = g.integer(1, min(2, len(names)))
  return g.shuffled(names)[:k]


def equal_groups(g, n):
  sizes = [s for s in range(1, n) if n % s == 0 and s > 1] or [n]
  s = g.pick(sizes)
  order = g.shuffled(range(n))
  return [sorted(order[i:i + s]) if g.chance(0.5) else order[i:i + s] for i in range(0, n, s)]


def uneven_groups(g, n):
  order = g.shuffled(range(n))
  cut = g.integer(1, n - 1)
  return [order[:cut], order[cut:]]


def gen_step(g, sizes, shape, inject, names_for_ops, shard_map, plain=False):
  """One step for a block of `shape`: (step, new shape), or None when the op does not fit.
  `plain`: no axis_index_groups, and one axis except in reductions (vmap and nested cases: spmd
  combines a vmapped axis with other axes in reductions only)."""
  names = list(names_for_ops)
  op = g.pick(REDUCTIONS * 2 + ["all_gather", "all_gather", "psum_scatter", "all_to_all",
                                "all_to_all", "pswapaxes", "ppermute", "pshuffle", "pargmax",
                                "pargmin", "add_axis_index", "mul_axis_size"] +
              (["pvary"] if shard_map else []))
  axes = axes_subset(g, names)
  if plain and op not in REDUCTIONS:
    axes = axes[:1]
  for _ in range(6):  # ops that split a dimension: prefer axes whose size divides one
    if op not in ("psum_scatter", "all_to_all", "pswapaxes") or \
        any(d % math.prod(sizes[a] for a in axes) == 0 for d in shape):
      break
    axes = axes_subset(g, names)[:1 if plain else 2]
  n = math.prod(sizes[a] for a in axes)
  step = {"op": op, "axes": axes}
  r = len(shape)
  grouped = op in REDUCTIONS + ["all_gather", "psum_scatter", "all_to_all", "pswapaxes"] and \
      n >= 2 and not plain and \
      (g.chance(0.2) or inject == "groups")
  if grouped:
    step["groups"] = uneven_groups(g, n) if op in REDUCTIONS and n > 2 and \
        g.chance(0.3) else equal_groups(g, n)
    n = len(step["groups"][0])
  if inject == "unbound":
    step["axes"] = axes[:-1] + ["w"]
  sizes_used = [len(grp) for grp in step["groups"]] if grouped else [n]
  if op == "pmean" and any(k & (k - 1) for k in sizes_used):
    # XLA:CPU multiplies by the rounded reciprocal of a group size that is not a power of two;
    # spmd divides, correctly rounded: the two may differ by one ulp.
    step["_inexact"] = True
  if op in REDUCTIONS:
    if inject == "groups" and n >= 2 and "groups" in step:
      step["groups"] = [grp[:-1] for grp in step["groups"]] if len(step["groups"][0]) > 1 else \
          step["groups"][:-1]
    return step, shape
  if op == "all_gather":
    if shard_map and not grouped and g.chance(0.25):
      step["to"] = "invarying"  # all_gather_invariant
    step["tiled"] = r >= 1 and g.chance(0.5)
    step["axis"] = g.integer(-r, r - 1) if step["tiled"] else g.integer(-(r + 1), r)
    new = list(shape)
    if step["tiled"]:
      new[step["axis"] % r] *= n
    else:
      new.insert(step["axis"] % (r + 1), n)
    return step, tuple(new)
  if op == "psum_scatter":
    step["tiled"] = g.chance(0.5)
    fits = [d for d in range(r) if (shape[d] % n == 0 if step["tiled"] else shape[d] == n)]
    if inject == "scatter":
      fits = [d for d in range(r) if shape[d] % n != 0]
    if not fits:
      return None
    d = g.pick(fits)
    # (Not negative in vmap cases: JAX 0.10.2's batching rule counts it against the batched rank.)
    step["dim"] = d - r if g.chance(0.1) and not plain else d
    new = list(shape)
    if step["tiled"]:
      new[d] //= n
    else:
      del new[d]
    return step, tuple(new)
  if op == "all_to_all":
    if r == 0:
      return None
    step["tiled"] = g.chance(0.5)
    fits = [d for d in range(r) if (shape[d] % n == 0 if step["tiled"] else shape[d] == n)]
    if inject == "all_to_all":
      fits = [d for d in range(r) if shape[d] % n != 0]
    if not fits:
      return None
    s, c = g.pick(fits), g.integer(0, r - 1)
    step["split"], step["concat"] = s, c
    new = list(shape)
    if step["tiled"]:
      new[s] //= n
      new[c] *= n
    else:
      del new[s]
      new.insert(c, n)
    return step, tuple(new)
  if op == "pswapaxes":
    fits = [d for d in range(r) if shape[d] == n]
    if not fits:
      return None
    step["axis"] = g.pick(fits)
    return step, shape
  if op == "ppermute":
    k = g.integer(0, n)
    src, dst = g.shuffled(range(n))[:k], g.shuffled(range(n))[:k]
    if inject == "perm" and k >= 2:
      dst[1] = dst[0]
    step["perm"] = [[s, d] for s, d in zip(src, dst)]
    return step, shape
  if op == "pshuffle":
    perm = g.shuffled(range(n))
    if inject == "perm" and n >= 2:
      perm[0] = perm[1]
    step["perm"] = perm
    return step, shape
  if op in ("pargmax", "pargmin"):
    step["axes"] = step["axes"][:1] if inject != "argmax" or len(names) < 2 else names[:2]
    return step, shape
  return step, shape


def mark_inexact(case):
  """Drops the steps' generation flags; a step flagged inexact makes the whole case inexact."""
  for s in case["body"]:
    if s.pop("_inexact", False):
      case["exact"] = False
  return case


def gen_body(g, sizes, shape, inject, names, shard_map, max_steps=2, plain=False):
  steps = []
  for _ in range(g.integer(1, max_steps)):
    for _ in range(20):
      made = gen_step(g, sizes, shape, inject if not steps else None, names, shard_map, plain)
      if made:
        steps.append(made[0])
        shape = made[1]
        break
  return steps, shape


# ---- encoding ----


def encode(x):
  x = np.asarray(x)
  dtype = "bfloat16" if x.dtype == jnp.bfloat16 else str(x.dtype)
  if dtype == "bool":
    data = x.astype(np.int32).ravel().tolist()
  elif dtype in ("float32", "bfloat16"):
    data = [float(v) for v in x.astype(np.float32).ravel()]
  else:
    data = x.ravel().tolist()
  return {"dtype": dtype, "shape": list(x.shape), "data": data}


def describe_error(e):
  message = str(e)
  key = next((k for k in KEY_PHRASES if k in message), None)
  if isinstance(e, NotImplementedError) and not message:
    key = ""  # JAX's bare NotImplementedError for grouped psum under check_vma
  if key is None:
    raise SystemExit(f"unknown JAX error ({type(e).__name__}): {message}\nAdd its key phrase to "
                     "KEY_PHRASES in tests/jax_oracle/oracle.py")
  return {"class": type(e).__name__, "key": key, "message": message[:600]}


JAX_CLASSES = {"DuplicateSpecError": "ValueError"}
ERROR_CLASSES = (ValueError, TypeError, NameError, NotImplementedError, IndexError, RuntimeError)


def run_case(case, fn, inputs):
  """Fills case['output'] or case['error'] from JAX; case['internal'] for JAX's own failures."""
  try:
    case["output"] = encode(fn(*inputs))
  except ERROR_CLASSES as e:
    case["error"] = describe_error(e)
    # JAX's own exception types (IndivisibleError, ...) are recorded as their builtin base.
    case["error"]["class"] = next(c.__name__ for c in type(e).__mro__ if c in ERROR_CLASSES)
  except MeshOrderMarker:
    case["marker"] = True
  except AssertionError as e:
    case["internal"] = f"AssertionError {e}"  # a JAX bug: no user-facing error to compare with
  except Exception as e:  # pylint: disable=broad-except
    if type(e).__name__ not in JAX_CLASSES:
      raise
    # JAX classes deriving from Exception only: spmd raises the builtin kind named in JAX_CLASSES.
    case["error"] = dict(describe_error(e), jax_class=type(e).__name__)
    case["error"]["class"] = JAX_CLASSES[type(e).__name__]


# ---- shard_map ----


def gen_mesh(g):
  names = g.pick(AXIS_NAME_SETS)[:g.integer(1, 3)]
  sizes = {}
  budget = 8
  for a in names:
    s = g.pick([d for d in (1, 2, 2, 4, 4, 8) if d <= budget])
    sizes[a] = s
    budget //= s
  return names, sizes


def gen_spec(g, names, rank):
  free = g.shuffled(names)
  spec = []
  for _ in range(rank):
    if not free or g.chance(0.35):
      spec.append(None)
    elif len(free) >= 2 and g.chance(0.25):
      spec.append([free.pop(), free.pop()])
    else:
      spec.append(free.pop())
  while spec and spec[-1] is None and g.chance(0.5):
    spec.pop()  # trailing entries may be left out
  return spec


def spec_size(entry, sizes):
  if entry is None:
    return 1
  return math.prod(sizes[a] for a in (entry if isinstance(entry, list) else [entry]))


def to_p(spec):
  return P(*[tuple(e) if isinstance(e, list) else e for e in spec])


SHARD_MAP_INJECTIONS = ["divisible", "in_rank", "unbound", "scatter", "all_to_all", "perm",
                        "groups", "argmax", "duplicate", "out_rank"]


def gen_shard_map_case(g, inject):
  names, sizes = gen_mesh(g)
  dtype = g.pick(DTYPES)
  nargs = 2 if dtype != "bool" and g.chance(0.25) else 1
  rank = g.integer(1, 3)
  spec = gen_spec(g, names, rank)
  dims = [spec_size(spec[d] if d < len(spec) else None, sizes) * g.pick([1, 2, 3, 4])
          for d in range(rank)]
  if inject == "divisible":
    split = [d for d in range(len(spec)) if spec_size(spec[d], sizes) > 1]
    if not split:
      return None
    dims[g.pick(split)] += 1
  exact = dtype == "bool" or dtype == "int32" or not g.chance(0.15)
  if not exact and dtype == "bfloat16":
    dtype = "float32"
  block = tuple(d // spec_size(spec[i] if i < len(spec) else None, sizes)
                for i, d in enumerate(dims))
  steps, out_block = gen_body(g, sizes, block, inject, names, True)
  if nargs == 2:
    steps.insert(0, {"op": "add_arg1"})
  in_specs = [spec] * nargs
  if inject == "in_rank":
    in_specs[0] = spec + [None] * (rank + 1 - len(spec))
  if inject == "duplicate" and spec and spec[0] is not None:
    in_specs[0] = [spec[0]] + spec[:1] + spec[1:]
  check_vma = g.chance(0.7)
  if len(out_block) == 0 or g.chance(0.3):
    out_spec = [] if len(out_block) == 0 else [names if len(names) > 1 else names[0]]
    if len(out_block) == 0 and g.chance(0.5):
      out_spec = []
  else:
    out_spec = gen_spec(g, names, len(out_block))
  if inject == "out_rank":
    out_spec = out_spec + [None] * (len(out_block) + 1 - len(out_spec))
  inputs = [g.values(dims, dtype, exact) for _ in range(nargs)]
  return {"mesh": {"names": names, "sizes": [sizes[a] for a in names]},
          "in_specs": in_specs, "out_spec": out_spec, "check_vma": check_vma, "body": steps,
          "inputs": inputs, "exact": exact}


def jax_shard_map(case):
  names, sizes = case["mesh"]["names"], case["mesh"]["sizes"]
  mesh = Mesh(np.array(jax.devices()[:math.prod(sizes)]).reshape(sizes), tuple(names))
  f = jax.shard_map(run_body(case["body"]), mesh=mesh,
                    in_specs=tuple(to_p(s) for s in case["in_specs"]),
                    out_specs=to_p(case["out_spec"]), check_vma=case["check_vma"])
  return jax.jit(f)


def uneven_pmean(case):
  return any(s["op"] == "pmean" and "groups" in s and
             len({len(grp) for grp in s["groups"]}) > 1 for s in case["body"])


# JAX failures inside its lowering: no user-facing error to compare with.
INTERNAL_KEYS = ("cannot select an axis to squeeze out", "Operation creation failed",
                 "Cannot lower jaxpr with verifier errors", "RET_CHECK failure",
                 "cannot reshape array of shape")


def has_negative_axes(level):
  axes = level["in_axes"] + [level["out_axes"]]
  return any(a is not None and a < 0 for a in axes)


def run_with_axes_normalised(case, run):
  """JAX's result for `case` with its negative in_axes, then out_axes, made non-negative."""
  level = dict(case["levels"][0])
  level["in_axes"] = [a + r if a is not None and a < 0 else a
                      for a, r in zip(level["in_axes"], case["input_ranks"])]
  got = {}
  run(dict(case, levels=[level]), got)
  if "output" in got and level["out_axes"] is not None and level["out_axes"] < 0:
    level["out_axes"] += len(got["output"]["shape"])
    got = {}
    run(dict(case, levels=[level]), got)
  return got


class MeshOrderMarker(Exception):
  """Raised while tracing where spmd raises its ppermute axis-order RuntimeError."""


def first_out_of_mesh_order(case):
  """Index of the first ppermute/pshuffle listing several axes out of mesh order, or None."""
  order = case["mesh"]["names"] if "mesh" in case else \
      [l["axis_name"] for l in case.get("levels", [])]
  for i, s in enumerate(case["body"]):
    if s["op"] in ("ppermute", "pshuffle"):
      ranks = [order.index(a) for a in s["axes"] if a in order]
      if ranks != sorted(ranks):
        return i
  return None


def duplicate_in_spec(case):
  for spec in case.get("in_specs", []):
    names = [a for e in spec if e is not None for a in (e if isinstance(e, list) else [e])]
    if len(names) != len(set(names)):
      return True
  return False


def expected_error(cls, key):
  return {"error": {"class": cls, "key": key}}


R_DUPLICATE = ("in_specs are checked before the body runs, so a spec naming a mesh axis twice is "
               "reported even when the body would fail too (JAX traces the body first)")
R_ORDER = ("ppermute/pshuffle over several axes listed out of mesh order raise RuntimeError, as "
           "JAX after 0.10 does (jax_raise_on_ppermute_sort_diff); JAX 0.10.2 and 0.7.2 "
           "silently number the positions in mesh order instead")
R_OUT_AXIS = ("an out_axes entry out of range for the output is a ValueError naming it (JAX does "
              "not check it and fails inside its lowering)")
R_IN_AXIS = ("an in_axes entry out of range for its argument is a ValueError naming it, as in "
             "legacy pmap (JAX 0.10's pmap leaks an IndexError)")
R_IN_AXIS_VMAP = ("an in_axes entry out of range for its argument is a ValueError naming it "
                  "(JAX 0.10's jitted vmap leaks an IndexError for some)")
R_NO_MAPPED = "the compat pmap keeps legacy pmap's message for no mapped argument"
R_BOOL_SCATTER = ("psum_scatter of bool over a vmapped axis raises the TypeError it raises over a "
                  "mesh axis (JAX's batching rules name reduce_sum instead of add, or sum the "
                  "bools as int32, depending on the path)")
R_SIZES = ("the compat pmap reports mismatched mapped sizes with legacy pmap's message (JAX "
           "0.10's pmap leaks a sharding error about the first argument only)")
R_DEVICES = ("the compat pmap keeps legacy pmap's rule that `devices` holds one device per mapped "
             "index (JAX 0.10's pmap silently runs on a prefix of a longer list, and reports a "
             "shorter one as a sharding error)")
R_GROUPED_MINMAX = ("pmax/pmin with axis_index_groups keep the result varying over the axes (the "
                    "groups hold different values); JAX 0.10 types it invariant, so an out_spec "
                    "leaving the axes out silently returns one group's value")
R_TOO_MANY = ("mapping more elements than there are devices is reported as such, as in legacy "
              "pmap (JAX 0.10's pmap builds a mesh of the available devices and leaks a sharding "
              "error)")
R_UNEVEN = ("pmean over uneven axis_index_groups divides each group's sum by that group's own "
            "size (JAX divides by len(groups[0]))")
R_GROUPED = ("psum/pmean with axis_index_groups work under check_vma=True (JAX raises "
             "NotImplementedError); the result stays varying over the axes")
R_MIXED = ("a collective over axes where its input is varying over some and invariant over "
           "others casts it to varying over all of them (JAX 0.10 raises ValueError; an "
           "invariant input over all of them is cast in both)")
R_NEGATIVE = ("negative in_axes/out_axes count from the end of each argument / of the stacked "
              "output, as in legacy pmap (JAX 0.10.2's shard_map-based pmap mis-handles them: "
              "out_axes=-1 turns 5 blocks of shape (5,) into (25, 1), and in_axes=-1 can raise a "
              "sharding error on a valid argument; jax 0.7.2's legacy pmap fails an internal "
              "assertion)")
MIXED_STATE = "can only accept axis_name which corresponds to one of varying"


def bool_scattered(case):
  """Whether a vmap case's body applies psum_scatter to a bool value."""
  dtype = case.get("dtype")
  for s in case["body"]:
    if s["op"] == "psum_scatter" and dtype == "bool":
      return True
    if s["op"] in ("psum", "pmean", "add_axis_index", "mul_axis_size", "pargmax", "pargmin"):
      dtype = "number"
  return False


def replaced_error(case, key, run):
  """Differences where spmd raises an error of its own: (reason, expected) or None."""
  if duplicate_in_spec(case) and key != "has duplicate entries for":
    return R_DUPLICATE, expected_error("ValueError", "has duplicate entries for")
  order = first_out_of_mesh_order(case)
  if order is not None:
    body = list(case["body"])
    body[order] = {"op": "_mesh_order_marker"}
    got = {}
    run(dict(case, body=body), got)
    if got.get("marker"):
      return R_ORDER, expected_error("RuntimeError",
                                     "in the same order as the axis_names declared on the mesh")
  inject = case["inject"]
  if key in INTERNAL_KEYS and inject == "out_axis":
    return R_OUT_AXIS, expected_error("ValueError", "out of bounds for array of dimension")
  if key == "tuple index out of range" and inject == "in_axis":
    return R_IN_AXIS_VMAP if "vmap" in case else R_IN_AXIS, \
        expected_error("ValueError", "which implies that its rank should be at least")
  if key == "reduce_sum does not accept dtype bool" or (bool_scattered(case) and "output" in case):
    # JAX 0.10.2 also sums bool as int32 in some of its psum_scatter batching paths.
    return R_BOOL_SCATTER, expected_error("TypeError", "add does not accept dtype bool")
  if key == "pmap requires at least one argument with a mapped axis":
    return R_NO_MAPPED, expected_error("ValueError",
                                       "pmap must have at least one non-None value in in_axes")
  if "levels" in case and key == "should evenly divide the shape" and inject == "sizes":
    return R_SIZES, expected_error("ValueError",
                                   "pmap got inconsistent sizes for array axes to be mapped")
  compiling = "compiling computation that requires"
  if inject == "too_many" and len(case.get("levels", [])) == 1 and key != compiling:
    return R_TOO_MANY, expected_error("ValueError", compiling)
  levels = case.get("levels", [])
  leading = "Leading axis size of input to pmapped function must equal the number of local devices"
  if len(levels) == 1 and "devices" in levels[0] and inject in (None, "devices") and \
      len(levels[0]["devices"]) != case["mapped_size"] and key != leading:
    return R_DEVICES, expected_error("ValueError", leading)
  return None


def spmd_difference(case, run):
  """spmd's deliberate differences from JAX: (reason, spmd's expected result), ("internal",
  None) for a case JAX itself fails on, or None."""
  key = case.get("error", {}).get("key")
  replaced = replaced_error(case, key, run)
  if replaced:
    return replaced
  internal = "internal" in case or key in INTERNAL_KEYS
  reasons, alt = [], dict(case)
  if any(s["op"] in REDUCTIONS and "groups" in s for s in case["body"]):
    alt["body"] = [dict(s, spmd_groups=True) if "groups" in s and
                   (s["op"] in ("psum", "pmean") or case.get("check_vma")) else s
                   for s in alt["body"]]
    if uneven_pmean(case):
      reasons.append(R_UNEVEN)
    if any(s["op"] in ("psum", "pmean") and "groups" in s for s in case["body"]) and \
        case.get("check_vma"):
      reasons.append(R_GROUPED)
    if any(s["op"] in ("pmax", "pmin") and len(s.get("groups", [])) > 1 for s in case["body"]) \
        and case.get("check_vma"):
      reasons.append(R_GROUPED_MINMAX)
  if key == MIXED_STATE:
    alt["body"] = [dict(s, auto_pvary=True) for s in alt["body"]]
    reasons.append(R_MIXED)
  levels = case.get("levels", [])
  negative = len(levels) == 1 and has_negative_axes(levels[0]) and \
      case["inject"] not in ("sizes", "in_axis", "out_axis")
  if negative:
    reasons.append(R_NEGATIVE)
  if not reasons:
    return ("internal", None) if internal else None
  if negative:
    got = run_with_axes_normalised(alt, run)
  else:
    got = {}
    run(alt, got)
  if "internal" in got or got.get("error", {}).get("key") in INTERNAL_KEYS:
    return "internal", None
  if got == {k: case[k] for k in ("output", "error") if k in case}:
    return ("internal", None) if internal else None
  return "; ".join(reasons), got


def finish(case, inputs):
  case.pop("out_size", None)
  case.pop("dtype", None)
  case["inputs"] = [encode(x) for x in inputs]
  return case


def build_suite(seed, want_values, want_errors, make, injections, run, inject_rate):
  g = Gen(seed)
  cases, values, errors, tries = [], 0, 0, 0
  keys, cap = {}, max(4, want_errors // 5)
  internal = []
  while values < want_values or errors < want_errors:
    tries += 1
    inject = g.pick(injections) if errors < want_errors and g.chance(inject_rate) else None
    case = make(g, inject)
    if case is None:
      continue
    mark_inexact(case)
    case["inject"] = inject
    inputs = case.pop("inputs")
    case["input_ranks"] = [np.ndim(x) for x in inputs]
    run(case, case, inputs)
    if "error" in case and (errors >= want_errors or keys.get(case["error"]["key"], 0) >= cap):
      continue  # enough errors, or enough of this kind
    if "output" in case and values >= want_values:
      continue
    diff = spmd_difference(case, lambda c, out: run(c, out, inputs))
    if diff and (diff[0] == "internal" or "internal" in diff[1]) or not diff and "internal" in case:
      internal.append(case)
      continue
    if diff:
      case["spmd"] = {"reason": diff[0], **diff[1]}
    if "error" in case:
      errors += 1
      keys[case["error"]["key"]] = keys.get(case["error"]["key"], 0) + 1
    else:
      values += 1
    del case["inject"], case["input_ranks"]
    case.pop("mapped_size", None)
    case["id"] = f"{len(cases):04d}"
    cases.append(finish(case, inputs))
  print(f"{len(cases)} cases ({values} values, {errors} errors) from {tries} draws; "
        f"{len(internal)} left out where JAX failed an internal assertion", file=sys.stderr)
  for case in internal[:int(os.environ.get("ORACLE_SHOW_LEFT_OUT", "3"))]:
    print(f"  e.g. {json.dumps(case)[:400]}", file=sys.stderr)
  return cases


def run_shard_map(case, out, inputs):
  run_case(out, jax_shard_map(case), inputs)


# ---- vmap: at top level, or inside a shard_map body over mesh axis "i" ----

VMAP_INJECTIONS = ["sizes", "in_axis"]


def gen_vmap_case(g, inject):
  """jax.vmap(body, in_axes, out_axes, axis_name="b"), the body's collectives over "b" (and "i"
  when the vmap runs in a shard_map body, P("i") on the array's dimension 0)."""
  size = g.pick([1, 2, 3, 4])
  sizes, names = {"b": size}, ["b"]
  within = g.chance(0.4)
  if within:
    sizes["i"] = g.pick([2, 4])
    names = ["i", "b"]
  dtype = g.pick(DTYPES)
  exact = dtype == "bool" or dtype == "int32" or not g.chance(0.15)
  if not exact and dtype == "bfloat16":
    dtype = "float32"
  elem = tuple(g.pick([1, 2, 3, 4]) for _ in range(g.integer(0, 2)))
  in_axis = g.integer(0, len(elem))
  block = list(elem)
  block.insert(in_axis, size)
  dims = list(block)
  if within:
    dims[0] *= sizes["i"]
  steps, out_elem = gen_body(g, sizes, elem, None, names, False, plain=True)
  out_axis = g.integer(-(len(out_elem) + 1), len(out_elem))
  if inject == "in_axis":
    in_axis = len(block) + g.integer(0, 1)
  inputs = [g.values(dims, dtype, exact)]
  if inject == "sizes":
    other = list(dims)
    other[min(in_axis, len(other) - 1)] += 1
    inputs.append(g.values(other, dtype, exact))
  out_size = size * math.prod(out_elem) * sizes.get("i", 1)
  case = {"vmap": {"axis_name": "b", "in_axes": in_axis, "out_axes": out_axis}, "body": steps,
          "inputs": inputs, "exact": exact, "out_size": out_size, "dtype": dtype}
  if within:
    case["mesh"] = {"names": ["i"], "sizes": [sizes["i"]]}
    case["check_vma"] = g.chance(0.5)
  return case


def jax_vmap(case):
  v = case["vmap"]
  mapped = jax.vmap(run_body(case["body"]), in_axes=v["in_axes"], out_axes=v["out_axes"],
                    axis_name=v["axis_name"])
  if "mesh" not in case:
    return jax.jit(mapped)
  n = case["mesh"]["sizes"][0]
  mesh = Mesh(np.array(jax.devices()[:n]), ("i",))
  return jax.jit(jax.shard_map(mapped, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                               check_vma=case["check_vma"]))


def run_vmap(case, out, inputs):
  run_case(out, jax_vmap(case), inputs)
  if "output" in out and math.prod(out["output"]["shape"]) != case["out_size"]:
    # JAX 0.10.2's batching of all_to_all over a vmapped axis can return more elements than
    # its input has (a shape of higher rank): a JAX bug, left out like its internal failures.
    out["internal"] = f"output shape {out['output']['shape']}, {case['out_size']} elements due"
  if out.get("error", {}).get("key") == "tuple index out of range" and \
      case.get("inject") != "in_axis":
    out["internal"] = "IndexError batching psum_scatter over a mesh axis"  # a JAX bug too


# ---- nested shard_map: an inner shard_map over the context mesh in an outer one's body ----


def gen_nested_case(g, inject):
  """An outer shard_map over one of two mesh axes (axis_names), whose body calls a shard_map
  without a mesh over the other; the inner body's collectives name either axis or both."""
  del inject
  names = g.pick(AXIS_NAME_SETS)[:2]
  sizes = {names[0]: g.pick([2, 4]), names[1]: 2}
  outer, inner = g.shuffled(names)
  dtype = g.pick(DTYPES)
  exact = dtype == "bool" or dtype == "int32" or not g.chance(0.15)
  if not exact and dtype == "bfloat16":
    dtype = "float32"
  rank = g.integer(1, 2)
  outer_in = gen_spec(g, [outer], rank)
  inner_in = gen_spec(g, [inner], rank)
  split = [spec_size(outer_in[d] if d < len(outer_in) else None, sizes) *
           spec_size(inner_in[d] if d < len(inner_in) else None, sizes) for d in range(rank)]
  dims = [k * g.pick([1, 2]) for k in split]
  block = tuple(d // k for d, k in zip(dims, split))
  steps, out_block = gen_body(g, sizes, block, None, names, True, plain=True)
  inner_out = gen_spec(g, [inner], len(out_block))
  outer_out = gen_spec(g, [outer], len(out_block))
  return {"mesh": {"names": names, "sizes": [sizes[a] for a in names]}, "outer_axes": [outer],
          "in_specs": [outer_in], "out_spec": outer_out, "inner_in_specs": [inner_in],
          "inner_out_spec": inner_out, "check_vma": g.chance(0.7), "body": steps,
          "inputs": [g.values(dims, dtype, exact)], "exact": exact}


def jax_nested(case):
  names, sizes = case["mesh"]["names"], case["mesh"]["sizes"]
  mesh = Mesh(np.array(jax.devices()[:math.prod(sizes)]).reshape(sizes), tuple(names))
  check = case["check_vma"]

  def outer_body(*blocks):
    inner = jax.shard_map(run_body(case["body"]),
                          in_specs=tuple(to_p(s) for s in case["inner_in_specs"]),
                          out_specs=to_p(case["inner_out_spec"]), check_vma=check)
    return inner(*blocks)

  return jax.jit(jax.shard_map(outer_body, mesh=mesh,
                               in_specs=tuple(to_p(s) for s in case["in_specs"]),
                               out_specs=to_p(case["out_spec"]),
                               axis_names=set(case["outer_axes"]), check_vma=check))


def run_nested(case, out, inputs):
  run_case(out, jax_nested(case), inputs)


# ---- pmap (current and legacy) ----

PMAP_INJECTIONS = ["sizes", "in_axis", "devices", "too_many", "axis_size", "out_axis", "unbound",
                   "no_mapped"]


def gen_pmap_case(g, inject, nested, legacy):
  n = g.pick([1, 2, 2, 3, 4, 4, 5, 8, 8])
  m = g.pick([1, 2, 4]) if nested else None
  if nested:
    n = g.pick([d for d in (1, 2, 4) if d * m <= 8])
  if inject == "too_many" and not nested:
    n = 9
  dtype = g.pick(DTYPES)
  nargs = 2 if dtype != "bool" and g.chance(0.3) else 1
  rank = g.integer(1, 3) if not nested else g.integer(2, 3)
  exact = dtype != "float32" or not g.chance(0.15)
  block = [g.pick([1, 2, 3, n, m or n]) for _ in range(rank - (2 if nested else 1))]
  in_axes, shapes = [], []
  for k in range(nargs):
    # jax 0.7.2's legacy pmap fails an internal assertion on negative in_axes and out_axes, so
    # they are rarely drawn there.
    lowest = 0 if legacy and g.chance(0.95) else -(len(block) + 1)
    ax = g.integer(lowest, len(block))
    if k > 0 and g.chance(0.3):
      ax = None
    in_axes.append(ax)
  levels = [("i", n)] + ([("j", m)] if nested else [])
  inner_in = [g.integer(0, len(block)) for _ in range(nargs)] if nested else None
  for k in range(nargs):
    shape = list(block)
    if nested and inner_in[k] is not None:
      shape.insert(inner_in[k], m)
    if in_axes[k] is None:
      shapes.append(shape)
      continue
    shape.insert(in_axes[k] % (len(shape) + 1), n + (1 if inject == "sizes" and k == 0 else 0))
    shapes.append(shape)
  if inject == "sizes" and nargs == 1:
    return None
  if inject == "in_axis":
    in_axes[0] = len(shapes[0]) + g.integer(0, 1)
  if inject == "no_mapped":
    in_axes = [None] * nargs
  sizes = dict(levels)
  names = list(sizes)
  steps, out_block = gen_body(g, sizes, tuple(block), inject if inject == "unbound" else None,
                              names, False)
  if nargs == 2:
    steps.insert(0, {"op": "add_arg1"})
  out_rank = len(out_block) + (1 if nested else 0)
  lowest = 0 if legacy and g.chance(0.95) else -(out_rank + 1)
  out_axes = g.integer(lowest, out_rank) if not g.chance(0.1) else None
  if inject == "out_axis":
    out_axes = out_rank + 1 + g.integer(0, 1)
  case = {"levels": [{"axis_name": "i", "in_axes": in_axes, "out_axes": out_axes}],
          "body": steps, "exact": exact, "mapped_size": n}
  if nested:
    case["levels"].append({"axis_name": "j", "in_axes": inner_in,
                           "out_axes": g.integer(0, len(out_block))})
  top = case["levels"][0]
  if g.chance(0.25) or inject == "devices":
    count = n + (g.pick([-1, 1]) if inject == "devices" else 0)
    if nested:
      count *= m
    if 1 <= count <= 8:
      top["devices"] = g.shuffled(range(8))[:count] if g.chance(0.5) else list(range(count))
  if g.chance(0.1) or inject in ("axis_size", "no_mapped"):
    top["axis_size"] = n + (1 if inject == "axis_size" else 0)
  # Broadcast arguments (in_axes None) need no mapped axis but are passed whole.
  case["inputs"] = [g.values(s, dtype, exact) for s in shapes]
  return case


def jax_pmap(case):
  fn = run_body(case["body"])
  for level in reversed(case["levels"]):
    kwargs = {}
    if "devices" in level:
      kwargs["devices"] = [jax.devices()[d] for d in level["devices"]]
    if "axis_size" in level:
      kwargs["axis_size"] = level["axis_size"]
    fn = jax.pmap(fn, axis_name=level["axis_name"], in_axes=tuple(level["in_axes"]),
                  out_axes=level["out_axes"], **kwargs)
  return fn


def run_pmap(case, out, inputs):
  run_case(out, jax_pmap(case), inputs)


# ---- jax.random ----


def gen_prng_case(g):
  seed = g.pick([g.integer(0, 2**31 - 1), g.integer(-2**31, -1), g.integer(2**32, 2**40)])
  op = g.pick(["key", "split", "fold_in", "bits", "uniform", "normal"])
  case = {"seed": seed, "op": op}
  key = jax.random.PRNGKey(seed)
  if op == "key":
    out = jax.random.key_data(key)
  elif op == "split":
    case["num"] = g.integer(1, 6)
    out = jax.random.split(key, case["num"])
  elif op == "fold_in":
    case["data"] = g.pick([g.integer(0, 100), g.integer(0, 2**32 - 1)])
    out = jax.random.fold_in(key, np.uint32(case["data"]))
  else:
    case["shape"] = [g.integer(1, 5) for _ in range(g.integer(0, 3))]
    if op == "bits":
      out = jax.random.bits(key, tuple(case["shape"]), jnp.uint32)
    elif op == "uniform":
      lo = float(g.integer(-4, 2))
      case["minval"], case["maxval"] = lo, lo + float(g.integer(1, 5))
      out = jax.random.uniform(key, tuple(case["shape"]), jnp.float32, case["minval"],
                               case["maxval"])
    else:
      out = jax.random.normal(key, tuple(case["shape"]), jnp.float32)
  out = np.asarray(out)
  if out.dtype == np.float32:
    out = out.view(np.uint32)
  case["output"] = encode(out)
  return case


def build_prng(seed, count):
  g = Gen(seed)
  cases = [gen_prng_case(g) for _ in range(count)]
  for i, c in enumerate(cases):
    c["id"] = f"{i:04d}"
  return cases


def main():
  suite, out, seed, values, errors = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
  if suite == "prng":
    cases = build_prng(seed, values)
  elif suite == "shard_map":
    cases = build_suite(seed, values, errors, gen_shard_map_case, SHARD_MAP_INJECTIONS,
                        run_shard_map, 0.12)
  elif suite == "vmap":
    cases = build_suite(seed, values, errors, gen_vmap_case, VMAP_INJECTIONS, run_vmap, 0.15)
  elif suite == "nested_shard_map":
    cases = build_suite(seed, values, errors, gen_nested_case, [None], run_nested, 0.0)
  else:
    legacy = suite == "legacy_pmap"
    def make(g, inject):
      return gen_pmap_case(g, inject, legacy and g.chance(0.25), legacy)
    # Most pmap errors come from injected mistakes: draw them more often than for shard_map.
    cases = build_suite(seed, values, errors, make, PMAP_INJECTIONS, run_pmap, 0.25)
  meta = {"suite": suite, "jax": jax.__version__, "seed": seed,
          "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}
  with open(out, "w") as f:
    f.write(json.dumps(meta)[:-1] + ', "cases": [\n')
    f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
    f.write("\n]}\n")


if __name__ == "__main__":
  main()
