// SPDX-License-Identifier: Apache-2.0
// Internal: float32 <-> float16/bfloat16 on bit patterns, rounding to nearest even, as one inline
// definition for the host (spmd::float16_t, spmd::bfloat16_t, the CPU kernels) and for device
// code (compiled by nvcc, where SPMD_HOST_DEVICE marks it __host__ __device__), so that every
// backend rounds the same way, NaN payloads included.
//
//   uint16_t h = float_bits_to_half_bits(std::bit_cast<uint32_t>(1.5f));  // 0x3e00
#pragma once

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define SPMD_HOST_DEVICE __host__ __device__
#else
#define SPMD_HOST_DEVICE
#endif

namespace spmd::internal {

SPMD_HOST_DEVICE inline uint32_t bits_of_float(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

SPMD_HOST_DEVICE inline float float_of_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

// `value >> shift` rounded to nearest, ties to even; shift is in [1, 31].
SPMD_HOST_DEVICE constexpr uint32_t shift_right_round_even(uint32_t value, int shift) {
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t quotient = value >> shift;
  return quotient + (rest > half || (rest == half && (quotient & 1u)) ? 1u : 0u);
}

// The float16 nearest to the float32 with bits `x`.
SPMD_HOST_DEVICE constexpr uint16_t float_bits_to_half_bits(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    // Setting the quiet bit keeps a NaN a NaN even when its payload lives in the dropped bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (magnitude >= 0x38800000u) {
    // Normal half: rebias the exponent (127 -> 15); a rounding carry out of the mantissa
    // correctly bumps the exponent.
    return static_cast<uint16_t>(sign | shift_right_round_even(magnitude - 0x38000000u, 13));
  }
  if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25: zero
  // Subnormal half, in units of 2^-24: the float's full significand shifted by its exponent.
  const int exponent = static_cast<int>(magnitude >> 23);
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_right_round_even(significand, 126 - exponent));
}

// The float32 bits of the float16 with bits `h` (exact).
SPMD_HOST_DEVICE constexpr uint32_t half_bits_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13);
  if (exponent == 0) {
    if (mantissa == 0) return sign;
    // Subnormal: normalise the mantissa into a float's implicit bit.
    int shift = 0;
    uint32_t m = mantissa;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      ++shift;
    }
    return sign | static_cast<uint32_t>(113 - shift) << 23 | (m & 0x3ffu) << 13;
  }
  return sign | ((exponent + 112) << 23) | (mantissa << 13);
}

// The bfloat16 nearest to the float32 with bits `x`.
SPMD_HOST_DEVICE constexpr uint16_t float_bits_to_bfloat16_bits(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet, so a low-payload NaN stays NaN
  }
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// The float32 bits of the bfloat16 with bits `b` (exact).
SPMD_HOST_DEVICE constexpr uint32_t bfloat16_bits_to_float_bits(uint16_t b) {
  return static_cast<uint32_t>(b) << 16;
}

}  // namespace spmd::internal
