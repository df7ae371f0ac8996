// SPDX-License-Identifier: Apache-2.0
// Bit-exact C++ reimplementation of JAX's default PRNG (threefry2x32): keys, split, fold_in,
// raw bits, and float32 uniform/normal sampling as jax.random computes them on XLA:CPU.
//
// Verified against jax 0.10.2 (see tests/jax_oracle/prng_reference.py). Two JAX configuration
// knobs change the results and are exposed as parameters:
//  * `partitionable`: jax_threefry_partitionable, default true (checked in jax 0.10.2). It sets
//    how counters are laid out for split() and random_bits(), and so everything built on them.
//  * `x64`: jax_enable_x64, default false. It only changes how an integer seed becomes a key.
// Samples depend only on the total element count, never on the shape: JAX hashes the flat
// row-major index in both schemes, so a [2, 3] sample equals the [6] one reshaped.
//
// Float results reproduce XLA:CPU on an x86-64 host with FMA: XLA lets LLVM fuse mul+add pairs
// into FMAs, so jax.random's floats carry that rounding (JAX on a CPU without FMA, or on GPU, may
// differ in the last bit). threefry.cc spells out every fused operation as std::fma.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace spmd::internal::prng {

// Raw key data, as jax.random.key_data(key) of a threefry2x32 key.
using Key = std::array<uint32_t, 2>;

// The 20-round Threefry-2x32 block cipher (JAX's threefry2x32_p), elementwise over n counter
// pairs (x0[i], x1[i]). Outputs may alias the inputs.
void threefry2x32(Key key, const uint32_t* x0, const uint32_t* x1, uint32_t* y0, uint32_t* y1,
                  size_t n);

// jax.random.PRNGKey(seed). With x64 disabled (JAX's default) the seed is truncated to its low 32
// bits and the key is {0, uint32(seed)}: PRNGKey(-1) == {0, 0xffffffff}, PRNGKey(2**32 + 5) ==
// {0, 5}. With x64 enabled the key is the int64 bit pattern split as {hi, lo}: PRNGKey(-1) ==
// {0xffffffff, 0xffffffff}.
Key seed(int64_t seed, bool x64 = false);

// jax.random.split(key, num): num keys, row-major [num, 2].
std::vector<uint32_t> split(Key key, int64_t num, bool partitionable = true);

// jax.random.fold_in(key, data); identical in both schemes.
Key fold_in(Key key, uint32_t data);

// jax.random.bits(key, (count,), uint32) / (..., uint64).
std::vector<uint32_t> random_bits(Key key, int64_t count, bool partitionable = true);
std::vector<uint64_t> random_bits64(Key key, int64_t count, bool partitionable = true);

// jax.random.uniform(key, (count,), float32 / float64, minval, maxval).
std::vector<float> uniform_f32(Key key, int64_t count, float minval = 0.0f, float maxval = 1.0f,
                               bool partitionable = true);
std::vector<double> uniform_f64(Key key, int64_t count, double minval = 0.0, double maxval = 1.0,
                                bool partitionable = true);

// jax.random.normal(key, (count,), float32).
std::vector<float> normal_f32(Key key, int64_t count, bool partitionable = true);

// Elementwise stages of the samplers, for callers that produce the bits themselves (e.g. one
// shard of a partitionable array).
float uniform_from_bits_f32(uint32_t bits, float minval, float maxval);
double uniform_from_bits_f64(uint64_t bits, double minval, double maxval);
float normal_from_bits_f32(uint32_t bits);
// lax.erf_inv for float32 as XLA:CPU evaluates it (Giles' approximation on top of XLA's log1p).
float erf_inv_f32(float x);

}  // namespace spmd::internal::prng
