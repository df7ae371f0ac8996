// SPDX-License-Identifier: Apache-2.0
// Checks that spmd's threefry PRNG reproduces jax.random bit for bit (floats by bit pattern).
//
// Reference values come from tests/jax_oracle/prng_reference.py run with jax 0.10.2 / jaxlib
// 0.10.2 on CPU (x86-64 with FMA). Long outputs are pinned by count, first/last words and an FNV-1a
// hash over their 32-bit words, computed the same way as in that script.
#include "random/threefry.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "spmd/errors.h"

namespace spmd::internal::prng {
namespace {

// The uint32 words of a result; 64-bit elements contribute their high word first.
template <typename T>
std::vector<uint32_t> words(const std::vector<T>& values) {
  std::vector<uint32_t> out;
  for (T v : values) {
    if constexpr (sizeof(T) == 8) {
      const auto u = std::bit_cast<uint64_t>(v);
      out.push_back(static_cast<uint32_t>(u >> 32));
      out.push_back(static_cast<uint32_t>(u));
    } else {
      out.push_back(std::bit_cast<uint32_t>(v));
    }
  }
  return out;
}

uint64_t fnv1a(const std::vector<uint32_t>& w) {
  uint64_t h = 0xCBF29CE484222325u;
  for (uint32_t v : w) h = (h ^ v) * 0x100000001B3u;
  return h;
}

// A recorded output: every word when fnv == 0, else the first/last words plus the hash.
struct Expected {
  std::vector<uint32_t> first;
  std::vector<uint32_t> last;
  uint64_t fnv;
};

void expect_matches(const std::vector<uint32_t>& got, const Expected& want) {
  if (want.fnv == 0) {
    EXPECT_EQ(got, want.first);
    return;
  }
  ASSERT_GE(got.size(), want.first.size() + want.last.size());
  EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.begin() + want.first.size()), want.first);
  EXPECT_EQ(std::vector<uint32_t>(got.end() - want.last.size(), got.end()), want.last);
  EXPECT_EQ(fnv1a(got), want.fnv);
}

TEST(Threefry, KnownAnswerVectors) {
  struct Case {
    Key key;
    uint32_t x0, x1, y0, y1;
  };
  const Case cases[] = {
      {{0, 0}, 0, 0, 0x6b200159, 0x99ba4efe},
      {{0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {{0x13198a2e, 0x03707344}, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
  };
  for (const Case& c : cases) {
    uint32_t y0 = 0, y1 = 0;
    threefry2x32(c.key, &c.x0, &c.x1, &y0, &y1, 1);
    EXPECT_EQ(y0, c.y0);
    EXPECT_EQ(y1, c.y1);
  }
}

TEST(Threefry, SeedMatchesPrngKey) {
  // x64 disabled (JAX's default): only the low 32 bits of the seed survive.
  EXPECT_EQ(seed(0), (Key{0, 0}));
  EXPECT_EQ(seed(1), (Key{0, 1}));
  EXPECT_EQ(seed(42), (Key{0, 42}));
  EXPECT_EQ(seed(-1), (Key{0, 0xffffffff}));
  EXPECT_EQ(seed(2147483647), (Key{0, 0x7fffffff}));
  EXPECT_EQ(seed((int64_t{1} << 32) + 5), (Key{0, 5}));
  // x64 enabled: the int64 seed is split into {hi, lo}.
  EXPECT_EQ(seed(-1, true), (Key{0xffffffff, 0xffffffff}));
  EXPECT_EQ(seed((int64_t{1} << 40) + 3, true), (Key{0x100, 3}));
}

TEST(Threefry, FoldIn) {
  EXPECT_EQ(fold_in(seed(0), 0), (Key{0x6b200159, 0x99ba4efe}));
  EXPECT_EQ(fold_in(seed(0), 1), (Key{0x375f238f, 0xcddb151d}));
  EXPECT_EQ(fold_in(seed(0), 7), (Key{0xa1ef7a4d, 0x116eb6b3}));
  EXPECT_EQ(fold_in(seed(0), 0x80000000u), (Key{0x36af47bc, 0x25f28bf1}));
  EXPECT_EQ(fold_in(seed(42), 0), (Key{0x6d3e048f, 0x1022172d}));
  EXPECT_EQ(fold_in(seed(42), 1), (Key{0x03d7b32d, 0xadd083f4}));
  EXPECT_EQ(fold_in(seed(42), 7), (Key{0x97d0552f, 0x51bf719f}));
  EXPECT_EQ(fold_in(seed(42), 0x80000000u), (Key{0xbda28b29, 0x84d904a5}));
}

enum Kind { kSplit, kBits, kUniform01, kUniformM2P3, kNormal };

struct Reference {
  bool partitionable;
  int64_t seed;
  Kind kind;
  int64_t n;
  std::vector<uint32_t> first;  // As in Expected.
  std::vector<uint32_t> last;
  uint64_t fnv;
};

std::vector<uint32_t> run(const Reference& r) {
  const Key key = seed(r.seed);
  switch (r.kind) {
    case kSplit:
      return split(key, r.n, r.partitionable);
    case kBits:
      return random_bits(key, r.n, r.partitionable);
    case kUniform01:
      return words(uniform_f32(key, r.n, 0.0f, 1.0f, r.partitionable));
    case kUniformM2P3:
      return words(uniform_f32(key, r.n, -2.0f, 3.0f, r.partitionable));
    case kNormal:
      return words(normal_f32(key, r.n, r.partitionable));
  }
  return {};
}

// {partitionable, seed, kind, n, first words, last words, fnv}, as printed by the script.
// clang-format off
const Reference kReferences[] = {
    {true, 0, kSplit, 2, {0x6b200159, 0x99ba4efe, 0x375f238f, 0xcddb151d}, {}, 0},
    {true, 0, kSplit, 5, {0x6b200159, 0x99ba4efe, 0x375f238f, 0xcddb151d}, {0x9312778b,
     0xe4e8dfbe, 0x883ffec1, 0x19dbc576}, 0x55ef2a8cff76855e},
    {true, 0, kBits, 1, {0xf29a4fa7}, {}, 0},
    {true, 0, kBits, 3, {0xf29a4fa7, 0xfa843692, 0x55110e28}, {}, 0},
    {true, 0, kBits, 8, {0xf29a4fa7, 0xfa843692, 0x55110e28, 0x77faa835, 0x91e43bb7, 0x2a5e6943,
     0x4f68ea7d, 0xb081ccfe}, {}, 0},
    {true, 0, kBits, 1000, {0xf29a4fa7, 0xfa843692, 0x55110e28, 0x77faa835}, {0x92502c5e,
     0x7a783389, 0x111078ef, 0x64f53232}, 0xed1d9d437cbf29f2},
    {true, 0, kUniform01, 1, {0x3f729a4e}, {}, 0},
    {true, 0, kUniformM2P3, 1, {0x402f40e2}, {}, 0},
    {true, 0, kUniform01, 7, {0x3f729a4e, 0x3f7a8436, 0x3eaa221c, 0x3eeff550, 0x3f11e43a,
     0x3e2979a0, 0x3e9ed1d4}, {}, 0},
    {true, 0, kUniformM2P3, 7, {0x402f40e2, 0x40392544, 0xbead5574, 0x3eafca90, 0x3f597522,
     0xbf9613fc, 0xbee5e6dc}, {}, 0},
    {true, 0, kUniform01, 1001, {0x3f729a4e, 0x3f7a8436, 0x3eaa221c, 0x3eeff550}, {0x3ef4f064,
     0x3d8883c0, 0x3ec9ea64, 0x3f57ddd8}, 0x82c4421e87bb0e53},
    {true, 0, kUniformM2P3, 1001, {0x402f40e2, 0x40392544, 0xbead5574, 0x3eafca90}, {0x3ec8b1f4,
     0xbfd556d4, 0xbce6c0c0, 0x400dd54e}, 0x163f1db6d54713f7},
    {true, 0, kNormal, 1, {0x3fcfb2bd}, {}, 0},
    {true, 0, kNormal, 7, {0x3fcfb2bd, 0x40019df0, 0xbede0017, 0xbda10222, 0x3e34512c,
     0xbf78dad7, 0xbefd97cc}, {}, 0},
    {true, 0, kNormal, 1001, {0x3fcfb2bd, 0x40019df0, 0xbede0017, 0xbda10222}, {0xbd5dea09,
     0xbfc025e3, 0xbe893197, 0x3f810026}, 0x565af6ec0d8b7085},
    {true, 0, kNormal, 100000, {0x3fcfb2bd, 0x40019df0, 0xbede0017, 0xbda10222}, {0xbf59f852,
     0xbda74e35, 0xbdf70dca, 0xbfdf046e}, 0xc5a9826e87c61f11},
    {true, 42, kSplit, 2, {0x6d3e048f, 0x1022172d, 0x03d7b32d, 0xadd083f4}, {}, 0},
    {true, 42, kSplit, 5, {0x6d3e048f, 0x1022172d, 0x03d7b32d, 0xadd083f4}, {0xbad56946,
     0x354ba891, 0xb013aee3, 0xc34eddf6}, 0xda8ab265adbe4dd3},
    {true, 42, kBits, 1, {0x7d1c13a2}, {}, 0},
    {true, 42, kBits, 3, {0x7d1c13a2, 0xae0730d9, 0x9dc3f9f9}, {}, 0},
    {true, 42, kBits, 8, {0x7d1c13a2, 0xae0730d9, 0x9dc3f9f9, 0x8f9ec1d7, 0x735d7315,
     0x95fb4ed8, 0x1326b799, 0xc66f24b0}, {}, 0},
    {true, 42, kBits, 1000, {0x7d1c13a2, 0xae0730d9, 0x9dc3f9f9, 0x8f9ec1d7}, {0x7ea6c13f,
     0x51eb31df, 0xf2508a94, 0x5dc2d15a}, 0x59071ad0cc4e3fb9},
    {true, 42, kUniform01, 1, {0x3efa3824}, {}, 0},
    {true, 42, kUniformM2P3, 1, {0x3ee318b4}, {}, 0},
    {true, 42, kUniform01, 7, {0x3efa3824, 0x3f2e0730, 0x3f1dc3f8, 0x3f0f9ec0, 0x3ee6bae4,
     0x3f15fb4e, 0x3d9935b0}, {}, 0},
    {true, 42, kUniformM2P3, 7, {0x3ee318b4, 0x3fb311f8, 0x3f8a69ec, 0x3f4e19c0, 0x3e81a674,
     0x3f6de886, 0xbfd01f39}, {}, 0},
    {true, 42, kUniform01, 1001, {0x3efa3824, 0x3f2e0730, 0x3f1dc3f8, 0x3f0f9ec0}, {0x3ea3d660,
     0x3f72508a, 0x3ebb85a0, 0x3f413bc8}, 0xbde68dfccc5410c1},
    {true, 42, kUniformM2P3, 1001, {0x3ee318b4, 0x3fb311f8, 0x3f8a69ec, 0x3f4e19c0},
     {0xbeccd020, 0x402ee4ac, 0xbe2cc7c0, 0x3fe31574}, 0x6e0af89c5170741d},
    {true, 42, kNormal, 1, {0xbce7df15}, {}, 0},
    {true, 42, kNormal, 7, {0xbce7df15, 0x3eef2be8, 0x3e976661, 0x3e1d3b24, 0xbdfe04eb,
     0x3e5e211a, 0xbfb86eb9}, {}, 0},
    {true, 42, kNormal, 1001, {0xbce7df15, 0x3eef2be8, 0x3e976661, 0x3e1d3b24}, {0xbeef7812,
     0x3fce5cc5, 0xbeaeff4e, 0x3f30923e}, 0x3f4b8635fe88d871},
    {true, 42, kNormal, 100000, {0xbce7df15, 0x3eef2be8, 0x3e976661, 0x3e1d3b24}, {0x3ef01aa2,
     0x3e8483c5, 0x3f5a3eb6, 0xbf0554aa}, 0xb2cff8652c503668},
    {false, 0, kSplit, 2, {0xf71f4ea9, 0x39a405d9, 0xa20e4081, 0x4bdfae2f}, {}, 0},
    {false, 0, kSplit, 5, {0x5adb10de, 0x9aaccaa7, 0x6d762adb, 0x3b09a614}, {0x40416377,
     0x46fd82ab, 0xc48fe6ae, 0xb6f992ef}, 0xc38fcedfa3332046},
    {false, 0, kBits, 1, {0x6b200159}, {}, 0},
    {false, 0, kBits, 3, {0xf71f4ea9, 0x508efb2c, 0xa20e4081}, {}, 0},
    {false, 0, kBits, 8, {0x883ffec1, 0x59831cc0, 0x5a84a4cb, 0xf3d306bf, 0x19dbc576,
     0xfba37a3b, 0x3204ed2f, 0xdef27109}, {}, 0},
    {false, 0, kBits, 1000, {0x0ed6143c, 0x47420386, 0x70507858, 0x3ed1af31}, {0x6428bb8c,
     0x5567f01d, 0x4401ea6c, 0x6d63d2a7}, 0x103fa4a6c0d2fee2},
    {false, 0, kUniform01, 1, {0x3ed64000}, {}, 0},
    {false, 0, kUniformM2P3, 1, {0x3dbd0000}, {}, 0},
    {false, 0, kUniform01, 7, {0x3f083ffe, 0x3eb30638, 0x3eb50948, 0x3f38abc4, 0x3dcede20,
     0x3f7ba37a, 0x3e4813b0}, {}, 0},
    {false, 0, kUniformM2P3, 7, {0x3f293ff6, 0xbe80e0e8, 0xbe6da330, 0x3fcdad6a, 0xbfbf5a96,
     0x403a8c58, 0xbf82f3b2}, {}, 0},
    {false, 0, kUniform01, 1001, {0x3f22c00a, 0x3e332678, 0x3f1aa0a4, 0x3e9f6208}, {0x3f3d5dd6,
     0x3f529f74, 0x3e085588, 0x3f6eb132}, 0x9ad803c5b7614c6d},
    {false, 0, kUniformM2P3, 1001, {0x3f96e019, 0xbf9007f5, 0x3f82919a, 0xbee315d8},
     {0x3fd96a97, 0x40074751, 0xbfaaca8b, 0x402a5d7e}, 0xbc79f90cbddc522d},
    {false, 0, kNormal, 1, {0xbe52c850}, {}, 0},
    {false, 0, kNormal, 7, {0x3da59e09, 0xbec5c22f, 0xbec055f0, 0x3f164054, 0xbfa34e10,
     0x4007a0fb, 0xbf5bb3cc}, {}, 0},
    {false, 0, kNormal, 1001, {0x3eb1b76a, 0xbf6f4d93, 0x3e870a3d, 0xbefbff7a}, {0x3f247857,
     0x3f6d0668, 0xbf8e4b64, 0x3fbf362a}, 0x9d5dcccac1cab374},
    {false, 0, kNormal, 100000, {0xbf11245a, 0xbee42515, 0x3f0799d2, 0x4037ccbe}, {0x3f574818,
     0xbfe5be8e, 0x3fbb4e19, 0x3cc6a195}, 0x1b5c2e8b10ea8f3f},
    {false, 42, kSplit, 2, {0x92fb20ea, 0xdb4c98db, 0x0f38d913, 0x0ff68959}, {}, 0},
    {false, 42, kSplit, 5, {0xa4d91a96, 0x5290657f, 0x3188ce22, 0xe2f13aff}, {0x585a803a,
     0x409c2e81, 0xa1c44acd, 0xa79edc49}, 0x6ba833350f6bcba1},
    {false, 42, kBits, 1, {0x6d3e048f}, {}, 0},
    {false, 42, kBits, 3, {0x92fb20ea, 0x19a3f86f, 0x0f38d913}, {}, 0},
    {false, 42, kBits, 8, {0xb013aee3, 0x997e0266, 0x43e44385, 0x3dbc1e1f, 0xc34eddf6,
     0x48ebcd9f, 0x0a56f817, 0x00d226af}, {}, 0},
    {false, 42, kBits, 1000, {0x9d699eb0, 0x0e572953, 0x2ddd9156, 0xa2e15d1e}, {0x7c30a0ab,
     0xa896de16, 0xeabe5b83, 0x21fc4b53}, 0x4f807705691525f8},
    {false, 42, kUniform01, 1, {0x3eda7c08}, {}, 0},
    {false, 42, kUniformM2P3, 1, {0x3e08d850}, {}, 0},
    {false, 42, kUniform01, 7, {0x3f3013ae, 0x3f197e02, 0x3e87c884, 0x3ec866ec, 0x3f434edc,
     0x3e91d798, 0x3d256f80}, {}, 0},
    {false, 42, kUniformM2P3, 7, {0x3fb83133, 0x3f7f760a, 0xbf2c8ab6, 0xbd2feb20, 0x3fe84526,
     0xbf136504, 0xbfe62694}, {}, 0},
    {false, 42, kUniform01, 1001, {0x3f74af88, 0x3ef5eda8, 0x3d1ec200, 0x3f623944}, {0x3d179ea0,
     0x3f5c1c8e, 0x3f516c48, 0x3ea3b090}, 0x227994b5c3b3bc39},
    {false, 42, kUniformM2P3, 1001, {0x4031db6a, 0x3ecda448, 0xbfe731b0, 0x401ac795},
     {0xbfe84f37, 0x401323b2, 0x4005c75a, 0xbecd8d30}, 0x3059a9cd10585ff1},
    {false, 42, kNormal, 1, {0xbe3d2515}, {}, 0},
    {false, 42, kNormal, 7, {0x3efab01f, 0x3e8127e7, 0xbf209ca7, 0xbe8d2161, 0x3f373a52,
     0xbf11892c, 0xbfdf82ed}, {}, 0},
    {false, 42, kNormal, 1001, {0x3fda1a8e, 0xbd4a0c7c, 0xbfe1f455, 0x3f98c87d}, {0xbfe4a90a,
     0x3f8a2c0d, 0x3f687218, 0xbeefe1d3}, 0x1439f308792d7da8},
    {false, 42, kNormal, 100000, {0x3faf99f6, 0x3f64e54d, 0xbf61c79d, 0x3ebcc85c}, {0x3e9889ad,
     0x3e87d82a, 0x3f0fa197, 0x3db56f9a}, 0xa9e35030df04d7e2},
};
// clang-format on

TEST(Threefry, MatchesJaxRandom) {
  for (const Reference& r : kReferences) {
    SCOPED_TRACE(testing::Message() << "partitionable=" << r.partitionable << " seed=" << r.seed
                                    << " kind=" << r.kind << " n=" << r.n);
    expect_matches(run(r), {r.first, r.last, r.fnv});
  }
}

TEST(Threefry, Bits64AndUniformF64MatchX64Mode) {
  const Key key = seed(0);
  expect_matches(words(random_bits64(key, 3, true)),
                 {{0x6b200159, 0x99ba4efe, 0x375f238f, 0xcddb151d, 0xf71f4ea9, 0xa20e4081}, {}, 0});
  expect_matches(words(random_bits64(key, 3, false)),
                 {{0x9312778b, 0xe4e8dfbe, 0x19850714, 0x98b89669, 0xbdf17afd, 0x7408518d}, {}, 0});
  expect_matches(words(uniform_f64(key, 1001, -2.0, 3.0, true)),
                 {{0x3fb7a006, 0xc000a340, 0xbfed6489, 0xc61f5716, 0x40069ce4, 0x4a81523a,
                   0x3febeb8a, 0xb76f1182},
                  {0xbfecec58, 0xc4367f78, 0x3ffcab32, 0xf1720022, 0x3fffaf9b, 0xc716c397,
                   0x3ff0b82d, 0x1ee7d27a},
                  0x0ebfbe3d39c49c0f});
  expect_matches(words(uniform_f64(key, 1001, -2.0, 3.0, false)),
                 {{0xbff3eecb, 0x1af983fb, 0xbfce6a20, 0x754f5750, 0x3ff2aa1d, 0xaeb28bb9,
                   0xbff37a5e, 0x3251e683},
                  {0x3fe9e0d5, 0x8628c18e, 0x3ffb538a, 0xb6ba1f6f, 0x40033a5b, 0xa7f02914,
                   0x3fdca6f6, 0x27a50d00},
                  0x44c030603673a0bd});
}

// Uniform and normal samples depend only on the top 23 bits, so sweeping all 2^23 of them covers
// every float32 value the samplers can return, including both branches of erf_inv.
TEST(Threefry, EveryMantissaMatchesJax) {
  std::vector<float> uniform, normal;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    uniform.push_back(uniform_from_bits_f32(m << 9, -2.0f, 3.0f));
    normal.push_back(normal_from_bits_f32(m << 9));
  }
  expect_matches(words(uniform), {{0xc0000000, 0xbffffffb, 0xbffffff6, 0xbffffff1},
                                  {0x403ffff6, 0x403ffff8, 0x403ffffb, 0x403ffffe},
                                  0x88a479bec9d8d07b});
  expect_matches(words(normal), {{0xc0ad7080, 0xc0a3fd7b, 0xc0a068d7, 0xc09e218b},
                                 {0x409d3c6d, 0x409f2b7f, 0x40a1f313, 0x40a70b2a},
                                 0x0d2b267dd29b9c91});
}

TEST(Threefry, ErfInvEdgeCases) {
  const float xs[] = {-1.0f, -0.99999994f, -0.5f, 0.0f, 1e-20f, 0.3f, 0.9999f, 1.0f};
  std::vector<float> got;
  for (float x : xs) got.push_back(erf_inv_f32(x));
  expect_matches(words(got), {{0xff800000, 0xc07547ca, 0xbef430fe, 0x00000000, 0x1e27674c,
                               0x3e8b803d, 0x403010d3, 0x7f800000},
                              {},
                              0});
  EXPECT_TRUE(std::isnan(erf_inv_f32(1.5f)));
}

TEST(Threefry, RejectsNegativeCounts) {
  EXPECT_THROW(split(seed(0), -1), spmd::ValueError);
  EXPECT_THROW(random_bits(seed(0), -1), spmd::ValueError);
  EXPECT_TRUE(normal_f32(seed(0), 0).empty());
}

}  // namespace
}  // namespace spmd::internal::prng
