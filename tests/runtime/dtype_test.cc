// SPDX-License-Identifier: Apache-2.0
// Unit tests for spmd/dtype.h: float16/bfloat16 rounding, dtype names and JAX's promotion rules.
#include "spmd/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <iterator>
#include <limits>

#include "spmd/errors.h"

namespace spmd {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint16_t half_bits(float f) { return float16_t(f).bits; }
float half_value(uint16_t bits) { return static_cast<float>(float16_t::from_bits(bits)); }
uint16_t bf16_bits(float f) { return bfloat16_t(f).bits; }
float bf16_value(uint16_t bits) { return static_cast<float>(bfloat16_t::from_bits(bits)); }
float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Float16Test, ExactValues) {
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(0.5f), 0x3800);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(half_bits(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(half_bits(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(half_value(0x3555), 0.333251953125f);
  EXPECT_EQ(half_value(0x7bff), 65504.0f);
  EXPECT_EQ(half_value(0xc000), -2.0f);
  EXPECT_TRUE(std::signbit(half_value(0x8000)));
}

TEST(Float16Test, RoundsToNearestEven) {
  // The spacing just above 1 is 2^-10: exact halfway points go to the even neighbour.
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(half_bits(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f + 0x1p-23f), 0x3c01);
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f - 0x1p-23f), 0x3c00);
  EXPECT_EQ(half_bits(-(1.0f + 3 * 0x1p-11f)), 0xbc02);
  // Spacing 2 above 2048.
  EXPECT_EQ(half_bits(2049.0f), 0x6800);
  EXPECT_EQ(half_bits(2051.0f), 0x6802);
  // A rounding carry out of the mantissa bumps the exponent.
  EXPECT_EQ(half_bits(2047.5f), 0x6800);
  EXPECT_EQ(half_bits(2046.5f), 0x67fe);
  // Overflow threshold: 65520 is halfway between 65504 and 65536 (inf) and ties away from the odd
  // mantissa 0x3ff.
  EXPECT_EQ(half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(half_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);
  EXPECT_EQ(half_bits(-65520.0f), 0xfc00);
}

TEST(Float16Test, Subnormals) {
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(half_bits(-0x1p-24f), 0x8001);
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);  // tie: to even (zero)
  EXPECT_EQ(half_bits(-0x1p-25f), 0x8000);
  EXPECT_EQ(half_bits(0x1p-25f * (1.0f + 0x1p-23f)), 0x0001);
  EXPECT_EQ(half_bits(3 * 0x1p-25f), 0x0002);  // 1.5 units: tie to 2
  EXPECT_EQ(half_bits(5 * 0x1p-25f), 0x0002);  // 2.5 units: tie to 2
  EXPECT_EQ(half_bits(0x1p-26f), 0x0000);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(half_bits(1023 * 0x1p-24f), 0x03ff);
  EXPECT_EQ(half_bits(1023.5f * 0x1p-24f), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(half_value(0x0001), 0x1p-24f);
  EXPECT_EQ(half_value(0x8001), -0x1p-24f);
  EXPECT_EQ(half_value(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(half_value(0x0200), 0x1p-15f);
}

TEST(Float16Test, InfinityAndNaN) {
  EXPECT_EQ(half_bits(kInf), 0x7c00);
  EXPECT_EQ(half_bits(-kInf), 0xfc00);
  EXPECT_EQ(half_bits(1e10f), 0x7c00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(half_value(0x7c00), kInf);
  EXPECT_EQ(half_value(0xfc00), -kInf);
  const auto is_half_nan = [](uint16_t b) { return (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0; };
  EXPECT_TRUE(is_half_nan(half_bits(kNaN)));
  // A NaN whose payload lies only in the bits float16 drops must stay NaN.
  EXPECT_TRUE(is_half_nan(half_bits(from_bits(0x7f800001))));
  EXPECT_EQ(half_bits(from_bits(0xffc00000)) & 0x8000, 0x8000);  // sign kept
  EXPECT_TRUE(std::isnan(half_value(0x7e00)));
  EXPECT_TRUE(std::isnan(half_value(0x7c01)));
  EXPECT_TRUE(std::isnan(half_value(0xfe00)));
}

TEST(Float16Test, EveryBitPatternConvertsExactlyAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float f = half_value(bits);
    const int exponent = (b >> 10) & 0x1f;
    const int mantissa = b & 0x3ff;
    if (exponent == 0x1f && mantissa != 0) {
      EXPECT_TRUE(std::isnan(f)) << b;
      EXPECT_TRUE(std::isnan(half_value(half_bits(f)))) << b;
      continue;
    }
    float expected = exponent == 0x1f ? kInf
                     : exponent == 0  ? std::ldexp(static_cast<float>(mantissa), -24)
                                      : std::ldexp(1.0f + mantissa / 1024.0f, exponent - 15);
    if (b & 0x8000) expected = -expected;
    ASSERT_EQ(std::bit_cast<uint32_t>(f), std::bit_cast<uint32_t>(expected)) << b;
    ASSERT_EQ(half_bits(f), bits) << b;
  }
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(from_bits(0x3f808000)), 0x3f80);  // tie, even below
  EXPECT_EQ(bf16_bits(from_bits(0x3f818000)), 0x3f82);  // tie, even above
  EXPECT_EQ(bf16_bits(from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(bf16_bits(from_bits(0x3f807fff)), 0x3f80);
  EXPECT_EQ(bf16_bits(from_bits(0xbf818000)), 0xbf82);
  EXPECT_EQ(bf16_bits(from_bits(0x3fffffff)), 0x4000);  // carry into the exponent
  // Float subnormals stay subnormal and round the same way.
  EXPECT_EQ(bf16_bits(from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(bf16_bits(from_bits(0x00008000)), 0x0000);
  EXPECT_EQ(bf16_bits(from_bits(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(bf16_bits(kInf), 0x7f80);
  EXPECT_EQ(bf16_bits(-kInf), 0xff80);
}

TEST(BFloat16Test, NaNStaysQuietNaN) {
  EXPECT_EQ(bf16_bits(from_bits(0x7f800001)), 0x7fc0);  // payload only in dropped bits
  EXPECT_EQ(bf16_bits(from_bits(0xffc00000)), 0xffc0);
  EXPECT_EQ(bf16_bits(from_bits(0x7fa00000)), 0x7fe0);  // signalling -> quiet, payload kept
  EXPECT_TRUE(std::isnan(bf16_value(0x7fc0)));
  EXPECT_TRUE(std::isnan(bf16_value(0x7f81)));
}

TEST(BFloat16Test, EveryBitPatternConvertsExactlyAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float f = bf16_value(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16) << b;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_value(bf16_bits(f)))) << b;
    } else {
      ASSERT_EQ(bf16_bits(f), bits) << b;
    }
  }
}

TEST(DTypeTest, NamesAndSizes) {
  struct Row {
    DType dt;
    const char* name;
    const char* short_name;
    int64_t size;
  };
  const Row rows[] = {
      {DType::kBool, "bool", "bool", 1},
      {DType::kInt32, "int32", "i32", 4},
      {DType::kInt64, "int64", "i64", 8},
      {DType::kUInt32, "uint32", "u32", 4},
      {DType::kFloat16, "float16", "f16", 2},
      {DType::kBFloat16, "bfloat16", "bf16", 2},
      {DType::kFloat32, "float32", "f32", 4},
      {DType::kFloat64, "float64", "f64", 8},
      {DType::kInt8, "int8", "i8", 1},
      {DType::kInt16, "int16", "i16", 2},
      {DType::kUInt8, "uint8", "u8", 1},
      {DType::kUInt16, "uint16", "u16", 2},
      {DType::kUInt64, "uint64", "u64", 8},
      {DType::kComplex64, "complex64", "c64", 8},
      {DType::kComplex128, "complex128", "c128", 16},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(dtype_name(row.dt), row.name);
    EXPECT_EQ(dtype_short_name(row.dt), row.short_name);
    EXPECT_EQ(itemsize(row.dt), row.size);
  }
  static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);
  static_assert(dtype_of_v<float16_t> == DType::kFloat16 && dtype_of_v<uint32_t> == DType::kUInt32);
  static_assert(dtype_of_v<std::complex<float>> == complex64 &&
                dtype_of_v<std::complex<double>> == complex128);
}

TEST(DTypeTest, Kinds) {
  EXPECT_FALSE(is_floating(DType::kBool));
  EXPECT_FALSE(is_integer(DType::kBool));
  for (DType dt : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8,
                   DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    EXPECT_TRUE(is_integer(dt));
    EXPECT_FALSE(is_floating(dt));
  }
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    EXPECT_TRUE(is_floating(dt));
    EXPECT_FALSE(is_integer(dt));
    EXPECT_FALSE(is_complex(dt));
    EXPECT_EQ(real_dtype(dt), dt);
  }
  for (DType dt : {DType::kComplex64, DType::kComplex128}) {
    EXPECT_TRUE(is_complex(dt));
    EXPECT_FALSE(is_floating(dt));
    EXPECT_FALSE(is_integer(dt));
  }
  EXPECT_EQ(real_dtype(DType::kComplex64), DType::kFloat32);
  EXPECT_EQ(real_dtype(DType::kComplex128), DType::kFloat64);
}

TEST(DTypeTest, ShapeStrings) {
  EXPECT_EQ(type_string(DType::kFloat32, {4, 2}), "f32[4,2]");
  EXPECT_EQ(type_string(DType::kInt32, {}), "i32[]");
  EXPECT_EQ(type_string(DType::kBool, {3}), "bool[3]");
  EXPECT_EQ(type_string(DType::kBFloat16, {1, 0, 7}), "bf16[1,0,7]");
  EXPECT_EQ(shape_tuple_string({4, 2}), "(4, 2)");
  EXPECT_EQ(shape_tuple_string({4}), "(4,)");
  EXPECT_EQ(shape_tuple_string({}), "()");
  EXPECT_EQ(shape_tuple_string({2, 3, 5}), "(2, 3, 5)");
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({4, 2, 3}), 24);
  EXPECT_EQ(shape_size({4, 0}), 0);
}

TEST(DTypeTest, PromotionTable) {
  constexpr DType b = DType::kBool, i8 = DType::kInt8, i16 = DType::kInt16, i32 = DType::kInt32,
                  i64 = DType::kInt64, u8 = DType::kUInt8, u16 = DType::kUInt16,
                  u32 = DType::kUInt32, u64 = DType::kUInt64, f16 = DType::kFloat16,
                  bf16 = DType::kBFloat16, f32 = DType::kFloat32, f64 = DType::kFloat64,
                  c64 = DType::kComplex64, c128 = DType::kComplex128;
  constexpr DType kAll[] = {b,   i8,  i16,  i32, i64, u8,  u16, u32,
                            u64, f16, bf16, f32, f64, c64, c128};
  constexpr int kN = std::size(kAll);
  // Row a, column b, in kAll order: jnp.promote_types(a, b) on JAX 0.10.2 with x64 enabled
  // (spmd keeps the 64-bit types JAX would truncate without it).
  constexpr DType kExpected[kN][kN] = {
      {b, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128},      // bool
      {i8, i8, i16, i32, i64, i16, i32, i64, f64, f16, bf16, f32, f64, c64, c128},    // int8
      {i16, i16, i16, i32, i64, i16, i32, i64, f64, f16, bf16, f32, f64, c64, c128},  // int16
      {i32, i32, i32, i32, i64, i32, i32, i64, f64, f16, bf16, f32, f64, c64, c128},  // int32
      {i64, i64, i64, i64, i64, i64, i64, i64, f64, f16, bf16, f32, f64, c64, c128},  // int64
      {u8, i16, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128},    // uint8
      {u16, i32, i32, i32, i64, u16, u16, u32, u64, f16, bf16, f32, f64, c64, c128},  // uint16
      {u32, i64, i64, i64, i64, u32, u32, u32, u64, f16, bf16, f32, f64, c64, c128},  // uint32
      {u64, f64, f64, f64, f64, u64, u64, u64, u64, f16, bf16, f32, f64, c64, c128},  // uint64
      {f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f32, f64, c64, c128},   // float16
      {bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16, f32, bf16, f32, f64, c64,
       c128},                                                                         // bfloat16
      {f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, c64, c128},   // float32
      {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c128, c128},  // float64
      {c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c128, c64, c128},  // complex64
      {c128, c128, c128, c128, c128, c128, c128, c128, c128, c128, c128, c128, c128, c128,
       c128},  // complex128
  };
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), kExpected[i][j])
          << dtype_name(kAll[i]) << " + " << dtype_name(kAll[j]);
    }
  }
}

TEST(DTypeTest, PromoteWithWeakScalar) {
  EXPECT_EQ(promote_with_scalar(DType::kBool, false), DType::kInt32);
  EXPECT_EQ(promote_with_scalar(DType::kBool, true), DType::kFloat32);
  for (DType dt : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8,
                   DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    EXPECT_EQ(promote_with_scalar(dt, false), dt);
    EXPECT_EQ(promote_with_scalar(dt, true), DType::kFloat32);
  }
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64,
                   DType::kComplex64, DType::kComplex128}) {
    EXPECT_EQ(promote_with_scalar(dt, false), dt);
    EXPECT_EQ(promote_with_scalar(dt, true), dt);
  }
}

TEST(DTypeTest, InvalidEnumeratorThrows) {
  const auto bad = static_cast<DType>(42);
  EXPECT_THROW(itemsize(bad), ValueError);
  EXPECT_THROW(dtype_name(bad), ValueError);
  EXPECT_THROW(promote_types(bad, DType::kInt32), ValueError);
}

}  // namespace
}  // namespace spmd
