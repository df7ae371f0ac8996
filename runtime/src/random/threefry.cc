// SPDX-License-Identifier: Apache-2.0
// Threefry-2x32 PRNG matching jax.random bit for bit; see threefry.h for the contract.
//
// The float code mirrors the operation order of XLA:CPU's generated code, with std::fma exactly
// where its LLVM backend fused a multiply into an add. No other product feeds an addition except
// x * -x in erf_inv_f32, which has several uses, so compiler FP contraction (e.g. GCC's default
// -ffp-contract=fast with an FMA-capable -march) leaves the results unchanged; no flags needed.
#include "random/threefry.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "spmd/errors.h"

namespace spmd::internal::prng {
namespace {

constexpr uint32_t kKeyParity = 0x1BD11BDA;  // Skein's key-schedule constant.
constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
// Counters hashed per batch; keeps the scratch arrays on the stack.
constexpr size_t kBatch = 256;
// The unpartitionable scheme hashes at most this many counters under one key (uint32 iota size).
constexpr uint64_t kMaxIota = 0xFFFFFFFFu;

uint32_t rotl(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

size_t to_size(int64_t n, const char* what) {
  if (n < 0) throw ValueError(std::string(what) + ": negative count");
  return static_cast<size_t>(n);
}

// Hashes the flat indices [0, n) laid out as uint64 (hi, lo) counter pairs, as
// jax_threefry_partitionable does (prng.iota_2x32_shape), and passes each batch to `emit`.
template <typename Emit>
void hash_index_range(Key key, uint64_t n, Emit emit) {
  uint32_t x0[kBatch], x1[kBatch];
  for (uint64_t done = 0; done < n;) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(kBatch, n - done));
    for (size_t i = 0; i < m; ++i) {
      const uint64_t index = done + i;
      x0[i] = static_cast<uint32_t>(index >> 32);
      x1[i] = static_cast<uint32_t>(index);
    }
    threefry2x32(key, x0, x1, x0, x1, m);
    emit(done, x0, x1, m);
    done += m;
  }
}

// threefry_2x32(key, iota(n)) of the unpartitionable scheme (n <= kMaxIota): the counters are
// split into halves (odd n padded with one zero) that form the pairs, and the outputs are the
// concatenation y0 ++ y1 with the padding dropped.
void hash_iota(Key key, uint64_t n, uint32_t* out) {
  const uint64_t half = (n + 1) / 2;
  uint32_t x0[kBatch], x1[kBatch];
  for (uint64_t j0 = 0; j0 < half; j0 += kBatch) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(kBatch, half - j0));
    for (size_t i = 0; i < m; ++i) {
      x0[i] = static_cast<uint32_t>(j0 + i);
      x1[i] = half + j0 + i < n ? static_cast<uint32_t>(half + j0 + i) : 0u;
    }
    threefry2x32(key, x0, x1, x0, x1, m);
    for (size_t i = 0; i < m; ++i) {
      out[j0 + i] = x0[i];
      if (half + j0 + i < n) out[half + j0 + i] = x1[i];
    }
  }
}

// Unpartitionable random bits: `words` uint32 values from iota counters; beyond kMaxIota words
// JAX hashes whole blocks under keys split off the input key.
std::vector<uint32_t> original_words(Key key, uint64_t words) {
  std::vector<uint32_t> out(words);
  const uint64_t blocks = words / kMaxIota;
  if (blocks == 0) {
    hash_iota(key, words, out.data());
    return out;
  }
  const std::vector<uint32_t> keys = split(key, static_cast<int64_t>(blocks + 1), false);
  for (uint64_t b = 0; b <= blocks; ++b) {
    const Key sub = {keys[2 * b], keys[2 * b + 1]};
    hash_iota(sub, b < blocks ? kMaxIota : words % kMaxIota, out.data() + b * kMaxIota);
  }
  return out;
}

// lax.max as XLA lowers it (llvm.maximum): NaN-propagating, and +0 beats -0.
template <typename T>
T xla_max(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// Natural log as XLA:CPU emits it for float32 (a Cephes-style range reduction to [sqrt(.5),
// sqrt(2)) and a degree-9 polynomial), including which mul+add pairs LLVM fused into FMAs.
float xla_log_f32(float y) {
  if (y == 0.0f) return -std::numeric_limits<float>::infinity();
  if (y == std::numeric_limits<float>::infinity()) return y;
  if (!(y > 0.0f)) return std::bit_cast<float>(0xFFFFFFFFu);  // XLA's NaN for y < 0 / NaN.
  const uint32_t bits = std::bit_cast<uint32_t>(std::max(y, std::numeric_limits<float>::min()));
  // Exponent e and mantissa m in [0.5, 1); m < sqrt(0.5) is doubled (and e decremented) so that
  // x = m - 1 lies in [sqrt(0.5) - 1, sqrt(2) - 1).
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127) + 1.0f;
  const float m = std::bit_cast<float>((bits & 0x807FFFFFu) | 0x3F000000u);
  const bool small = m < 0.707106769f;
  const float x = (m - 1.0f) + (small ? m : 0.0f);
  e -= small ? 1.0f : 0.0f;
  const float x2 = x * x;
  const float x3 = x2 * x;
  // The polynomial is evaluated as three interleaved quadratics combined in powers of x^3.
  float a = std::fma(x, 0.0703768358f, -0.115146101f);
  a = std::fma(a, x, 0.116769984f);
  float b = std::fma(x, -0.12420141f, 0.142493233f);
  b = std::fma(b, x, -0.166680574f);
  float c = std::fma(x, 0.200007141f, -0.24999994f);
  c = std::fma(c, x, 0.333333313f);
  float p = std::fma(a, x3, b);
  p = std::fma(p, x3, c);
  // log(2) is split in a low and an exactly representable high part (0.693359375).
  p = std::fma(p, x3, e * -0.000212194442f);
  const float r = std::fma(-0.5f, x2, x) + p;
  return std::fma(e, 0.693359375f, r);
}

// XLA's log1p: a Cephes rational approximation for |t| < sqrt(2) - 1, log(1 + t) otherwise.
float xla_log1p_f32(float t) {
  if (!(std::fabs(t) < 0.414213568f)) return xla_log_f32(t + 1.0f);
  constexpr float kNum[] = {4.52700006e-05f, 0.498541027f, 6.57873249f, 29.9119186f,
                            60.9496689f,     57.1129646f,  20.0395527f};
  constexpr float kDen[] = {1.0f,        15.0629091f, 83.0475693f, 221.762405f,
                            309.098724f, 216.427887f, 60.11866f};
  float num = kNum[0];
  float den = kDen[0];
  for (int i = 1; i < 7; ++i) {
    num = std::fma(num, t, kNum[i]);
    den = std::fma(den, t, kDen[i]);
  }
  const float t2 = t * t;
  const float r = (t * t2) * (num / den);
  return t + std::fma(-0.5f, t2, r);
}

}  // namespace

void threefry2x32(Key key, const uint32_t* x0, const uint32_t* x1, uint32_t* y0, uint32_t* y1,
                  size_t n) {
  const uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ kKeyParity};
  for (size_t i = 0; i < n; ++i) {
    uint32_t a = x0[i] + ks[0];
    uint32_t b = x1[i] + ks[1];
    // Five groups of four Threefish-style rounds, each followed by a key injection whose second
    // word also adds the group number.
    for (uint32_t g = 1; g <= 5; ++g) {
      for (int r : kRotations[(g - 1) % 2]) {
        a += b;
        b = rotl(b, r) ^ a;
      }
      a += ks[g % 3];
      b += ks[(g + 1) % 3] + g;
    }
    y0[i] = a;
    y1[i] = b;
  }
}

Key seed(int64_t seed, bool x64) {
  const auto bits = static_cast<uint64_t>(seed);
  // Without x64 JAX first narrows the seed to int32, so the high word is always zero.
  return {x64 ? static_cast<uint32_t>(bits >> 32) : 0u, static_cast<uint32_t>(bits)};
}

std::vector<uint32_t> split(Key key, int64_t num, bool partitionable) {
  const size_t n = to_size(num, "split");
  if (!partitionable) return original_words(key, 2 * static_cast<uint64_t>(n));
  std::vector<uint32_t> out(2 * n);
  hash_index_range(key, n, [&](uint64_t at, const uint32_t* y0, const uint32_t* y1, size_t m) {
    for (size_t i = 0; i < m; ++i) {
      out[2 * (at + i)] = y0[i];
      out[2 * (at + i) + 1] = y1[i];
    }
  });
  return out;
}

Key fold_in(Key key, uint32_t data) {
  // threefry_2x32(key, seed(data)): one block with the counter pair (0, data).
  const uint32_t x0 = 0, x1 = data;
  Key out;
  threefry2x32(key, &x0, &x1, &out[0], &out[1], 1);
  return out;
}

std::vector<uint32_t> random_bits(Key key, int64_t count, bool partitionable) {
  const size_t n = to_size(count, "random_bits");
  if (!partitionable) return original_words(key, n);
  std::vector<uint32_t> out(n);
  hash_index_range(key, n, [&](uint64_t at, const uint32_t* y0, const uint32_t* y1, size_t m) {
    for (size_t i = 0; i < m; ++i) out[at + i] = y0[i] ^ y1[i];
  });
  return out;
}

std::vector<uint64_t> random_bits64(Key key, int64_t count, bool partitionable) {
  const size_t n = to_size(count, "random_bits64");
  std::vector<uint64_t> out(n);
  if (!partitionable) {
    // 2n words; the first half supplies the high halves, the second half the low halves.
    const std::vector<uint32_t> words = original_words(key, 2 * static_cast<uint64_t>(n));
    for (size_t i = 0; i < n; ++i) out[i] = uint64_t{words[i]} << 32 | words[n + i];
    return out;
  }
  hash_index_range(key, n, [&](uint64_t at, const uint32_t* y0, const uint32_t* y1, size_t m) {
    for (size_t i = 0; i < m; ++i) out[at + i] = uint64_t{y0[i]} << 32 | y1[i];
  });
  return out;
}

float uniform_from_bits_f32(uint32_t bits, float minval, float maxval) {
  // The top 23 bits become the mantissa of a float in [1, 2); XLA fuses the affine map to an FMA.
  const float unit = std::bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f;
  return xla_max(minval, std::fma(unit, maxval - minval, minval));
}

double uniform_from_bits_f64(uint64_t bits, double minval, double maxval) {
  const double unit = std::bit_cast<double>((bits >> 12) | 0x3FF0000000000000u) - 1.0;
  return xla_max(minval, std::fma(unit, maxval - minval, minval));
}

float erf_inv_f32(float x) {
  // Giles' single-precision approximation: a polynomial in w - 2.5 or sqrt(w) - 3 where
  // w = -log(1 - x^2).
  constexpr float kCentral[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                -0.00417768164f,  0.246640727f,    1.50140941f};
  constexpr float kTail[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                             -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                             0.00943887047f,   1.00167406f,     2.83297682f};
  const float w = -xla_log1p_f32(x * -x);
  const bool central = w < 5.0f;
  const float* c = central ? kCentral : kTail;
  const float v = central ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = std::fma(p, v, c[i]);
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  return p * x;
}

float normal_from_bits_f32(uint32_t bits) {
  // Uniform on (-1, 1) excluding -1, then sqrt(2) * erfinv; 1.41421354f is float32(sqrt(2)).
  const float lo = std::nextafter(-1.0f, 0.0f);
  return erf_inv_f32(uniform_from_bits_f32(bits, lo, 1.0f)) * 1.41421354f;
}

std::vector<float> uniform_f32(Key key, int64_t count, float minval, float maxval,
                               bool partitionable) {
  const std::vector<uint32_t> bits = random_bits(key, count, partitionable);
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = uniform_from_bits_f32(bits[i], minval, maxval);
  return out;
}

std::vector<double> uniform_f64(Key key, int64_t count, double minval, double maxval,
                                bool partitionable) {
  const std::vector<uint64_t> bits = random_bits64(key, count, partitionable);
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = uniform_from_bits_f64(bits[i], minval, maxval);
  return out;
}

std::vector<float> normal_f32(Key key, int64_t count, bool partitionable) {
  const std::vector<uint32_t> bits = random_bits(key, count, partitionable);
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = normal_from_bits_f32(bits[i]);
  return out;
}

}  // namespace spmd::internal::prng
