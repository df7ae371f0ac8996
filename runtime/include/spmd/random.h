// SPDX-License-Identifier: Apache-2.0
// File: spmd/random.h
//
// Counter-based random numbers with jax.random's default generator (threefry2x32, with JAX's
// default jax_threefry_partitionable=True), bit for bit: the same seed gives the same keys, bits,
// uniform and normal float32 samples as JAX on a CPU with FMA.
//
// Keys are raw uint32[2] arrays (jax.random.PRNGKey / key_data). Inside a mapped body, a
// per-device stream is `fold_in(key, axis_index("i"))`.
//
// Example:
//   namespace rnd = spmd::random;
//   spmd::Array key = rnd::PRNGKey(0);
//   spmd::Array keys = rnd::split(key, 2);            // uint32[2,2]
//   spmd::Array u = rnd::uniform(keys[0], {3});       // f32[3] in [0, 1)
//   spmd::Array z = rnd::normal(rnd::fold_in(key, 7), {2, 2});
#pragma once

#include <cstdint>

#include "spmd/array.h"

namespace spmd::random {

// jax.random.PRNGKey(seed) with x64 disabled: {0, low 32 bits of seed}.
Array PRNGKey(int64_t seed);
// jax.random.split(key, num): uint32[num, 2].
Array split(const Array& key, int64_t num = 2);
// jax.random.fold_in(key, data); data is converted to uint32 like jnp.uint32(data).
Array fold_in(const Array& key, uint32_t data);
Array fold_in(const Array& key, const Array& data);  // data: a scalar integer array
// jax.random.bits(key, shape): uint32.
Array bits(const Array& key, Shape shape);
// jax.random.uniform(key, shape, dtype, minval, maxval); dtype float32 or float64.
Array uniform(const Array& key, Shape shape = {}, DType dtype = DType::kFloat32,
              double minval = 0.0, double maxval = 1.0);
// jax.random.normal(key, shape): standard normal float32.
Array normal(const Array& key, Shape shape = {}, DType dtype = DType::kFloat32);

}  // namespace spmd::random
