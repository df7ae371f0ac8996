// SPDX-License-Identifier: Apache-2.0
// Unit tests for the CPU backend's kernels, reached through the backend registry, against the
// contract in backend/kernels.h: conversions, every elementwise op, broadcast/transposed/
// negative-stride views, reductions and batched matmul. Expected values are exact wherever the
// contract pins them down. The buffers are host vectors, so this suite runs on host-memory
// backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/registry.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();

const Kernels& kernels() { return backend_for(Platform::kCpu).kernels(Device{}); }

// Test buffers hold bool arrays as bytes (so a stray non-0/1 byte can be planted) and float16 /
// bfloat16 as their structs.
template <class T>
DType dtype_for() {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return DType::kBool;
  } else {
    return dtype_of_v<T>;
  }
}

// A view of v starting at element `offset`; dense when no strides are given.
template <class T>
ConstView in(const std::vector<T>& v, Shape shape, Strides strides = {}, int64_t offset = 0) {
  if (strides.empty()) strides = dense_strides(shape);
  return {v.data() + offset, dtype_for<T>(), std::move(shape), std::move(strides)};
}
template <class T>
MutView out(std::vector<T>& v, Shape shape, Strides strides = {}, int64_t offset = 0) {
  if (strides.empty()) strides = dense_strides(shape);
  return {v.data() + offset, dtype_for<T>(), std::move(shape), std::move(strides)};
}

std::vector<uint16_t> bits_of(const std::vector<float16_t>& v) {
  std::vector<uint16_t> bits;
  for (const float16_t h : v) bits.push_back(h.bits);
  return bits;
}
std::vector<uint16_t> bits_of(const std::vector<bfloat16_t>& v) {
  std::vector<uint16_t> bits;
  for (const bfloat16_t h : v) bits.push_back(h.bits);
  return bits;
}
std::vector<float16_t> halves(std::initializer_list<float> values) {
  std::vector<float16_t> v;
  for (const float f : values) v.emplace_back(f);
  return v;
}

// Exact equality that also distinguishes -0.0 from 0.0 and treats any NaN as equal to any NaN.
template <class T>
void expect_values(const std::vector<T>& actual, const std::vector<T>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(actual[i])) << "index " << i << ": " << actual[i];
        continue;
      }
      EXPECT_EQ(std::signbit(actual[i]), std::signbit(expected[i])) << "index " << i;
    }
    EXPECT_EQ(actual[i], expected[i]) << "index " << i;
  }
}

template <class R, class S>
std::vector<R> convert(const std::vector<S>& src) {
  std::vector<R> dst(src.size());
  const Shape shape{static_cast<int64_t>(src.size())};
  kernels().copy(in(src, shape), out(dst, shape));
  return dst;
}

template <class T>
std::vector<T> unary(UnaryOp op, const std::vector<T>& x) {
  std::vector<T> y(x.size());
  const Shape shape{static_cast<int64_t>(x.size())};
  kernels().unary(op, in(x, shape), out(y, shape));
  return y;
}

template <class R = void, class T>
auto binary(BinaryOp op, const std::vector<T>& a, const std::vector<T>& b) {
  using Out = std::conditional_t<std::is_void_v<R>, T, R>;
  std::vector<Out> y(a.size());
  const Shape shape{static_cast<int64_t>(a.size())};
  kernels().binary(op, in(a, shape), in(b, shape), out(y, shape));
  return y;
}

// Reduces the trailing num_reduced dims of a view; R is the output element type.
template <class R>
std::vector<R> reduce(ReduceOp op, const ConstView& x, int num_reduced) {
  const Shape out_shape(x.shape.begin(), x.shape.end() - num_reduced);
  std::vector<R> y(static_cast<size_t>(shape_size(out_shape)));
  kernels().reduce(op, x, num_reduced, out(y, out_shape));
  return y;
}

TEST(DimsTest, HoldsSixInlineAndMoreOnTheHeap) {
  Dims d{1, 2, 3};
  EXPECT_EQ(d.size(), 3u);
  for (int64_t v = 4; v <= 9; ++v) d.push_back(v);  // past the inline capacity
  EXPECT_EQ(std::vector<int64_t>(d), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const Dims copy = d;
  d.resize(6);  // back inline
  EXPECT_EQ(std::vector<int64_t>(d), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(copy.back(), 9);
  EXPECT_EQ(Dims(std::vector<int64_t>{5, 6}), (Dims{5, 6}));
  EXPECT_EQ(Dims(3, 7), (Dims{7, 7, 7}));
  EXPECT_TRUE(Dims().empty());
}

TEST(DimsTest, CopiesAndMovesBetweenInlineAndHeap) {
  const Dims small{1, 2}, big{1, 2, 3, 4, 5, 6, 7, 8};
  Dims a = big;  // heap copy
  EXPECT_EQ(a, big);
  a = small;  // heap -> inline
  EXPECT_EQ(a, small);
  a.push_back(3);  // still usable after shrinking
  EXPECT_EQ(a, (Dims{1, 2, 3}));
  Dims moved = std::move(a);  // inline move
  EXPECT_EQ(moved, (Dims{1, 2, 3}));
  Dims b = big;
  Dims c = std::move(b);  // heap move leaves b empty and usable
  EXPECT_EQ(c, big);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  b.push_back(4);
  EXPECT_EQ(b, Dims{4});
  c = Dims{9};  // move-assign inline over heap
  EXPECT_EQ(c, Dims{9});
  c.push_back(8);
  EXPECT_EQ(c, (Dims{9, 8}));
  c = Dims(big);  // move-assign heap over inline
  EXPECT_EQ(c, big);
  const Dims& same = c;
  c = same;  // self-assignment keeps the elements
  EXPECT_EQ(c, big);
}

TEST(DenseStridesTest, RowMajor) {
  EXPECT_EQ(dense_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(dense_strides({5}), (Strides{1}));
  EXPECT_EQ(dense_strides({}), Strides{});
}

// ---- copy ----

TEST(CpuCopyTest, SameDtypeFollowsStrides) {
  const std::vector<float> src{0, 1, 2, 3, 4, 5};
  std::vector<float> dst(6, -1);
  kernels().copy(in(src, {2, 3}), out(dst, {2, 3}));
  expect_values(dst, src);
  // Transpose of the [2, 3] buffer as a [3, 2] view.
  kernels().copy(in(src, {3, 2}, {1, 3}), out(dst, {3, 2}));
  expect_values(dst, {0, 3, 1, 4, 2, 5});
  // Reversed: negative stride from the last element.
  kernels().copy(in(src, {6}, {-1}, 5), out(dst, {6}));
  expect_values(dst, {5, 4, 3, 2, 1, 0});
  // Both dims reversed.
  kernels().copy(in(src, {2, 3}, {-3, -1}, 5), out(dst, {2, 3}));
  expect_values(dst, {5, 4, 3, 2, 1, 0});
  // Row broadcast with a 0 stride.
  kernels().copy(in(src, {2, 3}, {0, 1}), out(dst, {2, 3}));
  expect_values(dst, {0, 1, 2, 0, 1, 2});
  // Strided destination: every other element, the rest untouched.
  std::vector<float> sparse(6, -1);
  kernels().copy(in(src, {3}), out(sparse, {3}, {2}));
  expect_values(sparse, {0, -1, 1, -1, 2, -1});
  // A view copied onto itself.
  kernels().copy(in(sparse, {6}), out(sparse, {6}));
  expect_values(sparse, {0, -1, 1, -1, 2, -1});
}

// Same-dtype copies walk 2-D planes in tiles: sizes that are not multiples of the tile, a batch of
// planes, and contiguous rows with an outer stride.
TEST(CpuCopyTest, TiledPlanesCoverEdgeTiles) {
  constexpr int64_t kB = 3, kR = 37, kC = 70;
  std::vector<int32_t> src(kB * kR * kC);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>(i);
  std::vector<int32_t> dst(src.size(), -1);
  kernels().copy(in(src, {kB, kC, kR}, {kR * kC, 1, kC}), out(dst, {kB, kC, kR}));
  std::vector<int32_t> transposed;
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t c = 0; c < kC; ++c) {
      for (int64_t r = 0; r < kR; ++r) transposed.push_back(src[(b * kR + r) * kC + c]);
    }
  }
  expect_values(dst, transposed);
  // Columns 5..24 of every row: runs of 20 with a row stride of kC.
  std::vector<int32_t> columns(kB * kR * 20, -1);
  kernels().copy(in(src, {kB * kR, 20}, {kC, 1}, 5), out(columns, {kB * kR, 20}));
  std::vector<int32_t> expected;
  for (int64_t r = 0; r < kB * kR; ++r) {
    for (int64_t c = 5; c < 25; ++c) expected.push_back(src[r * kC + c]);
  }
  expect_values(columns, expected);
}

// A transpose of `rows` x `cols` T through the copy kernel, checked element by element as bits.
template <class T>
void expect_transposed_bits(int64_t rows, int64_t cols) {
  std::vector<T> src(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < src.size(); ++i) {
    uint64_t bits = 0x7ff4000000000000ULL + i * 0x9e3779b97f4a7c15ULL;  // NaN payloads among them
    if constexpr (sizeof(T) == 4) bits = 0x7fa00000u + static_cast<uint32_t>(i) * 2654435761u;
    std::memcpy(static_cast<void*>(&src[i]), &bits, std::min(sizeof(T), sizeof(bits)));
  }
  std::vector<T> dst(src.size());
  kernels().copy(in(src, {cols, rows}, {1, cols}), out(dst, {cols, rows}));
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(std::memcmp(&dst[c * rows + r], &src[r * cols + c], sizeof(T)), 0)
          << sizeof(T) << "-byte elements, " << rows << " x " << cols << ", at " << c << ", " << r;
    }
  }
}

// Transposes go through a tile on the stack and, for 4-byte elements, 4 x 4 register shuffles:
// every element width, whole tiles and ragged edges, NaN payloads kept.
TEST(CpuCopyTest, TransposeEveryWidthKeepsBits) {
  for (const auto& [rows, cols] :
       {std::pair<int64_t, int64_t>{64, 64}, {45, 67}, {3, 130}, {1, 5}}) {
    expect_transposed_bits<int8_t>(rows, cols);
    expect_transposed_bits<int16_t>(rows, cols);
    expect_transposed_bits<float>(rows, cols);
    expect_transposed_bits<double>(rows, cols);
    expect_transposed_bits<std::complex<double>>(rows, cols);
  }
}

TEST(CpuCopyTest, SameDtypeKeepsBits) {
  const std::vector<float16_t> src{float16_t::from_bits(0x7c01), float16_t::from_bits(0xfe3f),
                                   float16_t::from_bits(0x8000)};
  std::vector<float16_t> dst(3);
  kernels().copy(in(src, {3}), out(dst, {3}));
  EXPECT_EQ(bits_of(dst), (std::vector<uint16_t>{0x7c01, 0xfe3f, 0x8000}));
  const std::vector<int64_t> big{kI64Min, (int64_t{1} << 62) + 1};
  EXPECT_EQ(convert<int64_t>(big), big);
}

TEST(CpuCopyTest, FloatToIntSaturatesAndMapsNaNToZero) {
  expect_values(convert<int32_t>(std::vector<float>{1.9f, -1.9f, 3e9f, -3e9f, kNaN, kInf, -kInf,
                                                    2147483520.0f, 2147483648.0f, -2147483648.0f}),
                {1, -1, kI32Max, kI32Min, 0, kI32Max, kI32Min, 2147483520, kI32Max, kI32Min});
  expect_values(convert<int32_t>(std::vector<double>{2147483647.5, 2147483648.0, -2147483648.9,
                                                     -2147483649.0, -0.0}),
                {kI32Max, kI32Max, kI32Min, kI32Min, 0});
  expect_values(convert<int64_t>(std::vector<double>{9.3e18, 9223372036854774784.0,
                                                     -9223372036854775808.0, -1e300, kNaN}),
                {kI64Max, 9223372036854774784, kI64Min, kI64Min, 0});
  expect_values(convert<int64_t>(std::vector<float>{9.3e18f, -9.3e18f, 1e10f}),
                {kI64Max, kI64Min, 10000000000});
  expect_values(
      convert<uint32_t>(std::vector<float>{-1.0f, -0.5f, 4294967040.0f, 5e9f, kNaN, 7.99f}),
      {0u, 0u, 4294967040u, kU32Max, 0u, 7u});
  expect_values(convert<int32_t>(halves({-65504.0f, kInf, 2.5f})), {-65504, kI32Max, 2});
}

TEST(CpuCopyTest, IntToIntWraps) {
  expect_values(
      convert<int32_t>(std::vector<int64_t>{(int64_t{1} << 32) + 5, int64_t{1} << 31, -1}),
      {5, kI32Min, -1});
  expect_values(convert<uint32_t>(std::vector<int32_t>{-1, kI32Min}), {kU32Max, 2147483648u});
  expect_values(convert<int32_t>(std::vector<uint32_t>{kU32Max}), {-1});
  expect_values(convert<int64_t>(std::vector<uint32_t>{kU32Max}), {int64_t{kU32Max}});
  expect_values(convert<int64_t>(std::vector<int32_t>{-5}), {-5});
}

TEST(CpuCopyTest, ToBoolIsNonZeroAndBoolReadsNonZero) {
  expect_values(convert<uint8_t>(std::vector<float>{0.0f, -0.0f, 0.5f, kNaN, -kInf}),
                {0, 0, 1, 1, 1});
  expect_values(convert<uint8_t>(std::vector<int32_t>{0, 7, -1}), {0, 1, 1});
  expect_values(convert<uint8_t>(std::vector<uint32_t>{256}), {1});
  // A stray byte value in a bool array reads as true.
  const std::vector<uint8_t> bools{0, 1, 2};
  expect_values(convert<int32_t>(bools), {0, 1, 1});
  expect_values(convert<float>(bools), {0.0f, 1.0f, 1.0f});
  EXPECT_EQ(bits_of(convert<float16_t>(bools)), (std::vector<uint16_t>{0x0000, 0x3c00, 0x3c00}));
}

TEST(CpuCopyTest, ToHalfRoundsOnceToNearestEven) {
  // 1 + 2^-11 + 2^-40 is just above a float16 tie; rounding through float first would land on
  // the tie and go down to 1.0.
  const std::vector<double> f64{
      1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, -(1 + 0x1p-11 + 0x1p-40), 65519.99, 1e300, 1e-300,
      std::nan("")};
  const auto f64_to_f16 = bits_of(convert<float16_t>(f64));
  EXPECT_EQ(f64_to_f16[0], 0x3c01);
  EXPECT_EQ(f64_to_f16[1], 0x3c00);
  EXPECT_EQ(f64_to_f16[2], 0xbc01);
  EXPECT_EQ(f64_to_f16[3], 0x7bff);
  EXPECT_EQ(f64_to_f16[4], 0x7c00);
  EXPECT_EQ(f64_to_f16[5], 0x0000);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t::from_bits(f64_to_f16[6]))));
  // 2^24 + 2^16 + 1 is just above a bfloat16 tie but rounds to the tie as a float.
  EXPECT_EQ(bits_of(convert<bfloat16_t>(std::vector<int32_t>{16842753, 16842752, -16842753})),
            (std::vector<uint16_t>{0x4b81, 0x4b80, 0xcb81}));
  EXPECT_EQ(bits_of(convert<bfloat16_t>(
                std::vector<int64_t>{(int64_t{1} << 40) + (int64_t{1} << 32) + 1})),
            (std::vector<uint16_t>{0x5381}));
  EXPECT_EQ(bits_of(convert<float16_t>(std::vector<int32_t>{2049, 2051, -2049})),
            (std::vector<uint16_t>{0x6800, 0x6802, 0xe800}));
  EXPECT_EQ(bits_of(convert<float16_t>(std::vector<uint32_t>{70000})),
            (std::vector<uint16_t>{0x7c00}));
  EXPECT_EQ(bits_of(convert<float16_t>(std::vector<int64_t>{-100000, kI64Min})),
            (std::vector<uint16_t>{0xfc00, 0xfc00}));
  // float16 -> bfloat16 goes through float, which holds every float16 exactly.
  EXPECT_EQ(bits_of(convert<bfloat16_t>(std::vector<float16_t>{float16_t::from_bits(0x3c01)})),
            (std::vector<uint16_t>{0x3f80}));
}

TEST(CpuCopyTest, FloatWidths) {
  expect_values(
      convert<float>(std::vector<double>{1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-40, 1e300, -1e-300}),
      {1.0f, 1.0f + 0x1p-23f, kInf, -0.0f});
  expect_values(convert<double>(std::vector<float>{0.1f, -kInf}), {double{0.1f}, -kInfD});
  expect_values(convert<float>(halves({0.1f})), {static_cast<float>(float16_t(0.1f))});
  expect_values(convert<double>(std::vector<int64_t>{(int64_t{1} << 53) + 1}), {0x1p53});
  expect_values(convert<float>(std::vector<uint32_t>{kU32Max}), {0x1p32f});
}

// ---- fill and iota ----

TEST(CpuFillTest, ConvertsTheScalar) {
  const auto filled = []<class T>(std::type_identity<T>, Scalar value, size_t n = 3) {
    std::vector<T> v(n);
    kernels().fill(out(v, {static_cast<int64_t>(n)}), value);
    return v;
  };
  expect_values(filled(std::type_identity<float>{}, 2.5), {2.5f, 2.5f, 2.5f});
  expect_values(filled(std::type_identity<int32_t>{}, 3.99), {3, 3, 3});
  expect_values(filled(std::type_identity<int32_t>{}, -1e20), {kI32Min, kI32Min, kI32Min});
  expect_values(filled(std::type_identity<uint32_t>{}, int64_t{-1}), {kU32Max, kU32Max, kU32Max});
  expect_values(filled(std::type_identity<int64_t>{}, (int64_t{1} << 62) + 1, 1),
                {(int64_t{1} << 62) + 1});
  expect_values(filled(std::type_identity<uint8_t>{}, int64_t{2}), {1, 1, 1});
  expect_values(filled(std::type_identity<uint8_t>{}, std::nan("")), {1, 1, 1});
  expect_values(filled(std::type_identity<uint8_t>{}, 0.0), {0, 0, 0});
  expect_values(filled(std::type_identity<double>{}, false), {0.0, 0.0, 0.0});
  expect_values(filled(std::type_identity<int32_t>{}, true), {1, 1, 1});
  EXPECT_EQ(bits_of(filled(std::type_identity<float16_t>{}, 1 + 0x1p-11 + 0x1p-40, 1)),
            (std::vector<uint16_t>{0x3c01}));
  EXPECT_EQ(bits_of(filled(std::type_identity<bfloat16_t>{}, true, 1)),
            (std::vector<uint16_t>{0x3f80}));
  EXPECT_EQ(bits_of(filled(std::type_identity<bfloat16_t>{}, int64_t{16842753}, 1)),
            (std::vector<uint16_t>{0x4b81}));
}

TEST(CpuFillTest, StridedAndEmpty) {
  std::vector<int32_t> v(6, 0);
  kernels().fill(out(v, {3}, {2}), int64_t{7});
  expect_values(v, {7, 0, 7, 0, 7, 0});
  // Transposed-and-reversed destination: elements 1, 0, 4, 3.
  kernels().fill(out(v, {2, 2}, {3, -1}, 1), int64_t{9});
  expect_values(v, {9, 9, 7, 9, 9, 0});
  kernels().fill(out(v, {0, 3}), int64_t{5});
  expect_values(v, {9, 9, 7, 9, 9, 0});
}

TEST(CpuIotaTest, CountsInTheDtype) {
  std::vector<int32_t> i32(5);
  kernels().iota(out(i32, {5}));
  expect_values(i32, {0, 1, 2, 3, 4});
  std::vector<double> f64(3);
  kernels().iota(out(f64, {3}));
  expect_values(f64, {0.0, 1.0, 2.0});
  std::vector<uint8_t> b(3);
  kernels().iota(out(b, {3}));
  expect_values(b, {0, 1, 1});
  std::vector<float16_t> f16(2052);
  kernels().iota(out(f16, {2052}));
  EXPECT_EQ(f16[2047].bits, 0x67ff);
  EXPECT_EQ(f16[2049].bits, 0x6800);  // 2049 ties to 2048
  EXPECT_EQ(f16[2051].bits, 0x6802);  // 2051 ties to 2052
}

// ---- unary ----

TEST(CpuUnaryTest, NegWrapsAndKeepsSignedZero) {
  expect_values(unary(UnaryOp::kNeg, std::vector<int32_t>{kI32Min, 5, 0}), {kI32Min, -5, 0});
  expect_values(unary(UnaryOp::kNeg, std::vector<int64_t>{kI64Min}), {kI64Min});
  expect_values(unary(UnaryOp::kNeg, std::vector<uint32_t>{1, 0}), {kU32Max, 0u});
  expect_values(unary(UnaryOp::kNeg, std::vector<float>{0.0f, -1.5f, kNaN}), {-0.0f, 1.5f, kNaN});
  EXPECT_EQ(bits_of(unary(UnaryOp::kNeg, halves({2.0f}))), (std::vector<uint16_t>{0xc000}));
}

TEST(CpuUnaryTest, AbsSignSquare) {
  expect_values(unary(UnaryOp::kAbs, std::vector<int32_t>{kI32Min, -3, 3}), {kI32Min, 3, 3});
  expect_values(unary(UnaryOp::kAbs, std::vector<uint32_t>{kU32Max}), {kU32Max});
  expect_values(unary(UnaryOp::kAbs, std::vector<float>{-0.0f, -2.0f, -kInf, kNaN}),
                {0.0f, 2.0f, kInf, kNaN});
  expect_values(unary(UnaryOp::kSign, std::vector<int32_t>{-7, 0, 9, kI32Min}), {-1, 0, 1, -1});
  expect_values(unary(UnaryOp::kSign, std::vector<uint32_t>{0, 5, kU32Max}), {0u, 1u, 1u});
  expect_values(unary(UnaryOp::kSign, std::vector<float>{-2.0f, -0.0f, 0.0f, 3.0f, kNaN, -kInf}),
                {-1.0f, -0.0f, 0.0f, 1.0f, kNaN, -1.0f});
  expect_values(unary(UnaryOp::kSign, std::vector<double>{1e-300, -5.0}), {1.0, -1.0});
  expect_values(unary(UnaryOp::kSquare, std::vector<int32_t>{65536, -3, 46341}),
                {0, 9, -2147479015});
  expect_values(unary(UnaryOp::kSquare, std::vector<float>{1.5f, -kInf}), {2.25f, kInf});
}

TEST(CpuUnaryTest, LogicalNotIsBoolOnly) {
  expect_values(unary(UnaryOp::kLogicalNot, std::vector<uint8_t>{0, 1, 2}), {1, 0, 0});
  EXPECT_THROW(unary(UnaryOp::kLogicalNot, std::vector<int32_t>{1}), TypeError);
}

TEST(CpuUnaryTest, TranscendentalsMatchTheLibmInTheComputeType) {
  const std::vector<float> x{0.25f, 1.0f, 2.0f, 10.0f};
  std::vector<float> exp, log, sqrt, tanh;
  for (const float v : x) {
    exp.push_back(std::exp(v));
    log.push_back(std::log(v));
    sqrt.push_back(std::sqrt(v));
    tanh.push_back(std::tanh(v));
  }
  expect_values(unary(UnaryOp::kExp, x), exp);
  expect_values(unary(UnaryOp::kLog, x), log);
  expect_values(unary(UnaryOp::kSqrt, x), sqrt);
  expect_values(unary(UnaryOp::kTanh, x), tanh);
  expect_values(unary(UnaryOp::kLog, std::vector<double>{0.0, -1.0, 2.0}),
                {-kInfD, std::nan(""), std::log(2.0)});
  expect_values(unary(UnaryOp::kSqrt, std::vector<double>{2.0, -0.0}), {std::sqrt(2.0), -0.0});
  // float16 computes in float and rounds once.
  EXPECT_EQ(bits_of(unary(UnaryOp::kSqrt, halves({2.0f}))),
            (std::vector<uint16_t>{float16_t(std::sqrt(2.0f)).bits}));
  EXPECT_EQ(bits_of(unary(UnaryOp::kExp, std::vector<bfloat16_t>{bfloat16_t(1.0f)})),
            (std::vector<uint16_t>{bfloat16_t(std::exp(1.0f)).bits}));
  EXPECT_THROW(unary(UnaryOp::kExp, std::vector<int32_t>{1}), TypeError);
  EXPECT_THROW(unary(UnaryOp::kFloor, std::vector<uint8_t>{1}), TypeError);
}

TEST(CpuUnaryTest, FloorCeilRoundHalfToEven) {
  const std::vector<float> x{-1.5f, 1.5f,  -0.0f, 2.0f, kNaN,  kInf, 0.5f,
                             2.5f,  -0.5f, -2.5f, 2.4f, -2.6f, 3.5f};
  expect_values(unary(UnaryOp::kFloor, x), {-2.0f, 1.0f, -0.0f, 2.0f, kNaN, kInf, 0.0f, 2.0f, -1.0f,
                                            -3.0f, 2.0f, -3.0f, 3.0f});
  expect_values(unary(UnaryOp::kCeil, x), {-1.0f, 2.0f, -0.0f, 2.0f, kNaN, kInf, 1.0f, 3.0f, -0.0f,
                                           -2.0f, 3.0f, -2.0f, 4.0f});
  expect_values(unary(UnaryOp::kRound, x), {-2.0f, 2.0f, -0.0f, 2.0f, kNaN, kInf, 0.0f, 2.0f, -0.0f,
                                            -2.0f, 2.0f, -3.0f, 4.0f});
  expect_values(unary(UnaryOp::kRound, std::vector<double>{0.5, 1.5, 2.5, 4503599627370497.0}),
                {0.0, 2.0, 2.0, 4503599627370497.0});
  EXPECT_EQ(bits_of(unary(UnaryOp::kRound, halves({2.5f, 3.5f}))),
            (std::vector<uint16_t>{0x4000, 0x4400}));
}

// Units in the last place of x's type at x.
template <class F>
F ulp(F x) {
  return std::nextafter(std::abs(x), std::numeric_limits<F>::infinity()) - std::abs(x);
}

TEST(CpuUnaryTest, ErfInv) {
  // Reference values from mpmath. float uses Giles' single-precision polynomials (within 3 ulp);
  // double is refined to within 1.3 ulp, so 2 ulp catches a missing refinement (3.4 ulp).
  const std::vector<std::pair<float, double>> f32 = {
      {0.5f, 0.476936276204469873}, {-0.5f, -0.476936276204469873}, {0.3f, 0.272462726105523775},
      {0.9f, 1.163087071945772236}, {0.999f, 2.326756326796154750}, {0.1f, 0.088855991825306482},
  };
  std::vector<float> in32;
  for (const auto& [v, e] : f32) in32.push_back(v);
  const auto y32 = unary(UnaryOp::kErfInv, in32);
  for (size_t i = 0; i < f32.size(); ++i) {
    const auto e = static_cast<float>(f32[i].second);
    EXPECT_NEAR(y32[i], e, 3 * ulp(e)) << f32[i].first;
  }
  expect_values(unary(UnaryOp::kErfInv, std::vector<float>{0.0f, -0.0f, 1.0f, -1.0f, 1.5f, kNaN}),
                {0.0f, -0.0f, kInf, -kInf, kNaN, kNaN});
  EXPECT_EQ(bits_of(unary(UnaryOp::kErfInv, halves({0.5f, -1.0f}))),
            (std::vector<uint16_t>{float16_t(0.476936276f).bits, 0xfc00}));

  const std::vector<std::pair<double, double>> f64 = {
      {0.5, 0.4769362762044699},
      {-0.3, -0.2724627147267543},
      {0.9, 1.1630871536766743},
      {0.75, 0.8134198475976185},
      {0.833, 0.9771564055381596},
      {0.487, 0.462570553540923},
      {0.444, 0.4163396728588192},
      {0.99, 1.8213863677184494},
      {0.999999, 3.458910737275499},
      {0.9999999999, 4.572824958544925},
      {0.9999999999999998, 5.805018683193453},
      {-0.9999999999999999, -5.8635847487551676},
      {1e-10, 8.862269254527581e-11},
      {1e-300, 8.86226925452758e-301},
  };
  std::vector<double> in64;
  for (const auto& [v, e] : f64) in64.push_back(v);
  const auto y64 = unary(UnaryOp::kErfInv, in64);
  for (size_t i = 0; i < f64.size(); ++i) {
    EXPECT_NEAR(y64[i], f64[i].second, 2 * ulp(f64[i].second)) << f64[i].first;
  }
  expect_values(unary(UnaryOp::kErfInv, std::vector<double>{1.0, -1.0, 1.0000001, 0.0, -0.0}),
                {kInfD, -kInfD, std::nan(""), 0.0, -0.0});
}

// ---- binary ----

TEST(CpuBinaryTest, ArithmeticWraps) {
  expect_values(binary(BinaryOp::kAdd, std::vector<int32_t>{kI32Max, kI32Min, 3},
                       std::vector<int32_t>{1, -1, 4}),
                {kI32Min, kI32Max, 7});
  expect_values(binary(BinaryOp::kSub, std::vector<uint32_t>{0, 5}, std::vector<uint32_t>{1, 2}),
                {kU32Max, 3u});
  expect_values(binary(BinaryOp::kSub, std::vector<int32_t>{kI32Min}, std::vector<int32_t>{1}),
                {kI32Max});
  expect_values(
      binary(BinaryOp::kMul, std::vector<int64_t>{kI64Max, 3}, std::vector<int64_t>{2, -4}),
      {-2, -12});
  expect_values(
      binary(BinaryOp::kMul, std::vector<int32_t>{65536, kI32Min}, std::vector<int32_t>{65536, -1}),
      {0, kI32Min});
  expect_values(binary(BinaryOp::kMul, std::vector<uint32_t>{65536}, std::vector<uint32_t>{65537}),
                {65536u});
}

TEST(CpuBinaryTest, HalfComputesInFloatAndRoundsOnce) {
  // 2048 + 1 = 2049 in float, which ties to 2048 in float16; 2048 + 3 -> 2052.
  EXPECT_EQ(bits_of(binary(BinaryOp::kAdd, halves({2048.0f, 2048.0f}), halves({1.0f, 3.0f}))),
            (std::vector<uint16_t>{0x6800, 0x6802}));
  EXPECT_EQ(bits_of(binary(BinaryOp::kMul, halves({300.0f}), halves({300.0f}))),
            (std::vector<uint16_t>{0x7c00}));
  EXPECT_EQ(bits_of(binary(BinaryOp::kDiv, std::vector<bfloat16_t>{bfloat16_t(1.0f)},
                           std::vector<bfloat16_t>{bfloat16_t(3.0f)})),
            (std::vector<uint16_t>{bfloat16_t(1.0f / 3.0f).bits}));
}

TEST(CpuBinaryTest, IntegerDivisionFamily) {
  const std::vector<int32_t> a{7, -7, 7, -7, 5, kI32Min, 0, 6, kI32Min};
  const std::vector<int32_t> b{2, 2, -2, -2, 0, -1, 3, 3, 2};
  expect_values(binary(BinaryOp::kDiv, a, b), {3, -3, -3, 3, 0, kI32Min, 0, 2, -1073741824});
  expect_values(binary(BinaryOp::kFloorDiv, a, b), {3, -4, -4, 3, 0, kI32Min, 0, 2, -1073741824});
  expect_values(binary(BinaryOp::kRem, a, b), {1, 1, -1, -1, 0, 0, 0, 0, 0});
  expect_values(binary(BinaryOp::kRem, std::vector<int32_t>{7, -7, 7, -7},
                       std::vector<int32_t>{3, 3, -3, -3}),
                {1, 2, -2, -1});
  expect_values(binary(BinaryOp::kFloorDiv, std::vector<int64_t>{kI64Min, -1},
                       std::vector<int64_t>{-1, kI64Max}),
                {kI64Min, -1});
  expect_values(
      binary(BinaryOp::kRem, std::vector<int64_t>{kI64Min, -1}, std::vector<int64_t>{-1, kI64Max}),
      {0, kI64Max - 1});
  const std::vector<uint32_t> ua{7, kU32Max, 9};
  const std::vector<uint32_t> ub{0, 2, 4};
  expect_values(binary(BinaryOp::kDiv, ua, ub), {0u, 2147483647u, 2u});
  expect_values(binary(BinaryOp::kFloorDiv, ua, ub), {0u, 2147483647u, 2u});
  expect_values(binary(BinaryOp::kRem, ua, ub), {0u, 1u, 1u});
}

TEST(CpuBinaryTest, FloatDivisionFamily) {
  expect_values(
      binary(BinaryOp::kDiv, std::vector<float>{1, -1, 0, 1}, std::vector<float>{0, 0, 0, -4}),
      {kInf, -kInf, kNaN, -0.25f});
  expect_values(binary(BinaryOp::kFloorDiv, std::vector<float>{7, -7, 7, -7, 1, 1, -1, 0, 0},
                       std::vector<float>{2, 2, -2, -2, 0.1f, 0, 0, 5, -5}),
                {3, -4, -4, 3, 9, kInf, -kInf, 0.0f, -0.0f});
  expect_values(binary(BinaryOp::kRem, std::vector<float>{7.5f, -7.5f, 7.5f, -7.5f, 6, -6, 1, kInf},
                       std::vector<float>{2, 2, -2, -2, -3, 3, 0, 2}),
                {1.5f, 0.5f, -0.5f, -1.5f, -0.0f, 0.0f, kNaN, kNaN});
  expect_values(binary(BinaryOp::kRem, std::vector<double>{-1.0, 5.0}, std::vector<double>{3, 5}),
                {2.0, 0.0});
}

TEST(CpuBinaryTest, Power) {
  expect_values(binary(BinaryOp::kPow, std::vector<int32_t>{3, 2, 2, 2, 1, -1, -1, 0, 0, 5, -2, 7},
                       std::vector<int32_t>{4, 31, 32, -1, -5, -3, -4, 0, 3, 0, 3, kI32Min}),
                {81, kI32Min, 0, 0, 1, -1, 1, 1, 0, 1, -8, 0});
  expect_values(binary(BinaryOp::kPow, std::vector<int64_t>{3, -1}, std::vector<int64_t>{40, 63}),
                {-6289078614652622815, -1});
  expect_values(binary(BinaryOp::kPow, std::vector<uint32_t>{3, 2}, std::vector<uint32_t>{20, 32}),
                {3486784401u, 0u});
  expect_values(binary(BinaryOp::kPow, std::vector<float>{2, 9, 2, -8, 0},
                       std::vector<float>{10, 0.5f, -1, 1.0f / 3, -1}),
                {1024, 3, 0.5f, std::pow(-8.0f, 1.0f / 3), kInf});
}

TEST(CpuBinaryTest, MaxMinPropagateNaN) {
  const std::vector<float> a{1, kNaN, 3, 2, -kInf};
  const std::vector<float> b{2, 1, kNaN, 2, 5};
  expect_values(binary(BinaryOp::kMax, a, b), {2, kNaN, kNaN, 2, 5});
  expect_values(binary(BinaryOp::kMin, a, b), {1, kNaN, kNaN, 2, -kInf});
  expect_values(binary(BinaryOp::kMax, std::vector<int32_t>{-5, 7}, std::vector<int32_t>{3, -9}),
                {3, 7});
  expect_values(binary(BinaryOp::kMin, std::vector<int32_t>{-5, 7}, std::vector<int32_t>{3, -9}),
                {-5, -9});
  expect_values(
      binary(BinaryOp::kMax, std::vector<uint32_t>{kU32Max, 0}, std::vector<uint32_t>{1, 1}),
      {kU32Max, 1u});
  EXPECT_TRUE(
      std::isnan(static_cast<float>(binary(BinaryOp::kMin, halves({1.0f}), halves({kNaN}))[0])));
}

TEST(CpuBinaryTest, LogicalAndBitwise) {
  // The stray byte 2 is true: a raw 2 & 1 would be 0.
  const std::vector<uint8_t> p{0, 0, 1, 2};
  const std::vector<uint8_t> q{0, 1, 0, 1};
  expect_values(binary(BinaryOp::kAnd, p, q), {0, 0, 0, 1});
  expect_values(binary(BinaryOp::kOr, p, q), {0, 1, 1, 1});
  expect_values(binary(BinaryOp::kXor, p, q), {0, 1, 1, 0});
  const std::vector<int32_t> a{0b1100, -1};
  const std::vector<int32_t> b{0b1010, 5};
  expect_values(binary(BinaryOp::kAnd, a, b), {0b1000, 5});
  expect_values(binary(BinaryOp::kOr, a, b), {0b1110, -1});
  expect_values(binary(BinaryOp::kXor, a, b), {0b0110, -6});
  expect_values(binary(BinaryOp::kXor, std::vector<uint32_t>{kU32Max}, std::vector<uint32_t>{1}),
                {kU32Max - 1});
  EXPECT_THROW(binary(BinaryOp::kAnd, std::vector<float>{1}, std::vector<float>{1}), TypeError);
}

TEST(CpuBinaryTest, ComparisonsWriteBool) {
  const std::vector<int32_t> a{1, 2, 3};
  const std::vector<int32_t> b{2, 2, 2};
  expect_values(binary<uint8_t>(BinaryOp::kEq, a, b), {0, 1, 0});
  expect_values(binary<uint8_t>(BinaryOp::kNe, a, b), {1, 0, 1});
  expect_values(binary<uint8_t>(BinaryOp::kLt, a, b), {1, 0, 0});
  expect_values(binary<uint8_t>(BinaryOp::kLe, a, b), {1, 1, 0});
  expect_values(binary<uint8_t>(BinaryOp::kGt, a, b), {0, 0, 1});
  expect_values(binary<uint8_t>(BinaryOp::kGe, a, b), {0, 1, 1});
  expect_values(
      binary<uint8_t>(BinaryOp::kGt, std::vector<uint32_t>{kU32Max}, std::vector<uint32_t>{1}),
      {1});
  const std::vector<float> x{kNaN, 1, kNaN, -0.0f};
  const std::vector<float> y{kNaN, kNaN, 1, 0.0f};
  expect_values(binary<uint8_t>(BinaryOp::kEq, x, y), {0, 0, 0, 1});
  expect_values(binary<uint8_t>(BinaryOp::kNe, x, y), {1, 1, 1, 0});
  expect_values(binary<uint8_t>(BinaryOp::kLt, x, y), {0, 0, 0, 0});
  expect_values(binary<uint8_t>(BinaryOp::kGe, x, y), {0, 0, 0, 1});
  expect_values(binary<uint8_t>(BinaryOp::kLt, halves({1.0f, 2.0f}), halves({2.0f, 1.0f})), {1, 0});
  expect_values(
      binary<uint8_t>(BinaryOp::kEq, std::vector<uint8_t>{2, 0}, std::vector<uint8_t>{1, 1}),
      {1, 0});
}

TEST(CpuBinaryTest, BroadcastTransposedAndNegativeStrides) {
  const std::vector<int32_t> a{1, 2, 3, 4, 5, 6};
  std::vector<int32_t> y(6);
  // Row vector broadcast over rows, a scalar over everything, a column over columns.
  const std::vector<int32_t> row{10, 20, 30};
  kernels().binary(BinaryOp::kAdd, in(a, {2, 3}), in(row, {2, 3}, {0, 1}), out(y, {2, 3}));
  expect_values(y, {11, 22, 33, 14, 25, 36});
  const std::vector<int32_t> scalar{100};
  kernels().binary(BinaryOp::kAdd, in(scalar, {2, 3}, {0, 0}), in(a, {2, 3}), out(y, {2, 3}));
  expect_values(y, {101, 102, 103, 104, 105, 106});
  const std::vector<int32_t> column{10, 20};
  kernels().binary(BinaryOp::kMul, in(a, {2, 3}), in(column, {2, 3}, {1, 0}), out(y, {2, 3}));
  expect_values(y, {10, 20, 30, 80, 100, 120});
  // a viewed as the transpose of a [3, 2] buffer; b reversed in both dims.
  const std::vector<int32_t> b{10, 20, 30, 40, 50, 60};
  kernels().binary(BinaryOp::kSub, in(a, {2, 3}, {1, 2}), in(b, {2, 3}, {-3, -1}, 5),
                   out(y, {2, 3}));
  expect_values(y, {1 - 60, 3 - 50, 5 - 40, 2 - 30, 4 - 20, 6 - 10});
  // a transposed against a reversed broadcast row {5, 4, 1}.
  const std::vector<int32_t> pivots{1, 4, 5};
  std::vector<uint8_t> flags(6);
  kernels().binary(BinaryOp::kGt, in(a, {2, 3}, {1, 2}), in(pivots, {2, 3}, {0, -1}, 2),
                   out(flags, {2, 3}));
  expect_values(flags, {0, 0, 1, 0, 0, 1});
}

TEST(CpuBinaryTest, DenseAndStridedPathsAgree) {
  std::vector<float> a(2000), b(2000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i) * 0.37f - 100.0f;
    b[i] = 3.0f - static_cast<float>(i % 17);
  }
  std::vector<float> dense(1000), strided(1000);
  // Even elements of a and b, read densely from compacted copies and with stride 2 directly.
  std::vector<float> a_even, b_even;
  for (size_t i = 0; i < a.size(); i += 2) {
    a_even.push_back(a[i]);
    b_even.push_back(b[i]);
  }
  for (const BinaryOp op : {BinaryOp::kAdd, BinaryOp::kMul, BinaryOp::kRem, BinaryOp::kPow}) {
    kernels().binary(op, in(a_even, {1000}), in(b_even, {1000}), out(dense, {1000}));
    kernels().binary(op, in(a, {1000}, {2}), in(b, {1000}, {2}), out(strided, {1000}));
    expect_values(strided, dense);
  }
}

// ---- select ----

TEST(CpuSelectTest, PicksPerElementAndBroadcasts) {
  const std::vector<uint8_t> cond{1, 0, 2, 0, 1, 0};
  const std::vector<float> a{1, 2, 3, 4, 5, 6};
  const std::vector<float> b{-1};
  std::vector<float> y(6);
  kernels().select(in(cond, {2, 3}), in(a, {2, 3}), in(b, {2, 3}, {0, 0}), out(y, {2, 3}));
  expect_values(y, {1, -1, 3, -1, 5, -1});
  const std::vector<uint8_t> column{0, 1};
  kernels().select(in(column, {2, 3}, {1, 0}), in(a, {2, 3}), in(b, {2, 3}, {0, 0}),
                   out(y, {2, 3}));
  expect_values(y, {-1, -1, -1, 4, 5, 6});
  // Bits are moved untouched.
  const std::vector<float16_t> h{float16_t::from_bits(0x7c01), float16_t::from_bits(0x0001)};
  const std::vector<float16_t> g{float16_t::from_bits(0x1234), float16_t::from_bits(0x4321)};
  std::vector<float16_t> hy(2);
  const std::vector<uint8_t> pick{1, 0};
  kernels().select(in(pick, {2}), in(h, {2}), in(g, {2}), out(hy, {2}));
  EXPECT_EQ(bits_of(hy), (std::vector<uint16_t>{0x7c01, 0x4321}));
  const std::vector<int64_t> big{kI64Min, kI64Max};
  std::vector<int64_t> by(2);
  kernels().select(in(pick, {2}), in(big, {2}, {-1}, 1), in(big, {2}), out(by, {2}));
  expect_values(by, {kI64Max, kI64Max});
}

// ---- reduce ----

TEST(CpuReduceTest, SumOverTrailingDims) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {2, 3}), 1), {6, 15});
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {2, 3}), 2), {21});
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {2, 3}), 0), x);
  // Transposed view [3, 2] of the [2, 3] buffer: rows are {1, 4}, {2, 5}, {3, 6}.
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {3, 2}, {1, 3}), 1), {5, 7, 9});
  // Reversed and broadcast inputs.
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {2, 3}, {-3, -1}, 5), 1), {15, 6});
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {4, 3}, {0, 1}), 1), {6, 6, 6, 6});
  // Reducing a middle-major layout: [2, 2, 3] with the leading dim innermost in memory.
  const std::vector<int32_t> y{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  expect_values(reduce<int32_t>(ReduceOp::kSum, in(y, {2, 2, 3}, {1, 6, 2}), 2),
                {1 + 3 + 5 + 7 + 9 + 11, 2 + 4 + 6 + 8 + 10 + 12});
}

TEST(CpuReduceTest, IntegerSumAndProdWrap) {
  const std::vector<int32_t> x{kI32Max, 1};
  expect_values(reduce<int32_t>(ReduceOp::kSum, in(x, {2}), 1), {kI32Min});
  expect_values(reduce<uint32_t>(ReduceOp::kSum, in(std::vector<uint32_t>{kU32Max, 2}, {2}), 1),
                {1u});
  expect_values(reduce<int32_t>(ReduceOp::kProd, in(std::vector<int32_t>{65536, 65536, 3}, {3}), 1),
                {0});
  expect_values(reduce<int64_t>(ReduceOp::kProd, in(std::vector<int64_t>{-2, 3, 4}, {3}), 1),
                {-24});
  expect_values(reduce<float>(ReduceOp::kProd, in(std::vector<float>{1, 2, 3, 4}, {4}), 1), {24});
}

TEST(CpuReduceTest, HalfSumsAccumulateInFloat) {
  // Accumulating in float16 would stall at 2048 (2048 + 1 rounds back to 2048).
  const std::vector<float16_t> one{float16_t(1.0f)};
  const auto f16 = reduce<float16_t>(ReduceOp::kSum, in(one, {4096}, {0}), 1);
  EXPECT_EQ(f16[0].bits, float16_t(4096.0f).bits);
  const std::vector<bfloat16_t> bone{bfloat16_t(1.0f)};
  const auto bf16 = reduce<bfloat16_t>(ReduceOp::kSum, in(bone, {1000}, {0}), 1);
  EXPECT_EQ(bf16[0].bits, bfloat16_t(1000.0f).bits);
}

TEST(CpuReduceTest, PairwiseSumIsAccurate) {
  // 2^24 + 2 ones: a sequential float sum stalls at 2^24; the pairwise tree is exact.
  const std::vector<float> one{1.0f};
  EXPECT_EQ(reduce<float>(ReduceOp::kSum, in(one, {(1 << 24) + 2}, {0}), 1)[0], 16777218.0f);
  // 10^6 copies of 0.1f sum to 100000.0015; a sequential float sum gives 100958.34.
  const std::vector<float> tenth{0.1f};
  EXPECT_NEAR(reduce<float>(ReduceOp::kSum, in(tenth, {1000000}, {0}), 1)[0], 100000.0f, 0.02f);
}

TEST(CpuReduceTest, PairwiseSumIsDeterministicOverTheFlattenedRange) {
  constexpr int64_t kRows = 3, kN = 97 * 103;
  std::vector<float> x(kRows * kN);
  uint32_t state = 12345;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) * 0x1p-24f - 0.5f;
  }
  const auto sums = reduce<float>(ReduceOp::kSum, in(x, {kRows, kN}), 1);
  // The same flattened ranges through a 2-D reduced shape, a stride-2 copy and a repeat.
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {kRows, 97, 103}), 2), sums);
  std::vector<float> spread(2 * x.size());
  kernels().copy(in(x, {kRows * kN}), out(spread, {kRows * kN}, {2}));
  expect_values(reduce<float>(ReduceOp::kSum, in(spread, {kRows, kN}, {2 * kN, 2}), 1), sums);
  expect_values(reduce<float>(ReduceOp::kSum, in(x, {kRows, kN}), 1), sums);
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<float> row(x.begin() + r * kN, x.begin() + (r + 1) * kN);
    expect_values(reduce<float>(ReduceOp::kSum, in(row, {kN}), 1), {sums[r]});
    double exact = 0;
    for (const float v : row) exact += v;
    EXPECT_NEAR(sums[r], exact, 1e-3);
  }
}

// Column sums (outputs contiguous in the input: sum(x, 0) of a row-major matrix) run row by row;
// each output must still get the bits of summing its own column alone, for every row count around
// the pairwise blocks and levels, with signed zeros, infinities and NaNs among the values.
template <class T>
void expect_column_sums_match_columns(int64_t rows, int64_t n) {
  std::vector<T> x(static_cast<size_t>(rows * n));
  uint32_t state = static_cast<uint32_t>(rows * 131 + n);
  for (size_t i = 0; i < x.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    const float v = static_cast<float>(state >> 8) * 0x1p-20f - 8.0f;
    x[i] = static_cast<T>(i % 97 == 5 ? -0.0f : v);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (x.size() > 40) x[40] = std::numeric_limits<T>::infinity();
    if (x.size() > 77) x[77] = std::numeric_limits<T>::quiet_NaN();
  }
  const auto sums = reduce<T>(ReduceOp::kSum, in(x, {n, rows}, {1, n}), 1);
  for (int64_t j = 0; j < n; ++j) {
    std::vector<T> column(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) column[r] = x[r * n + j];
    const T alone = reduce<T>(ReduceOp::kSum, in(column, {rows}), 1)[0];
    ASSERT_EQ(std::memcmp(&sums[j], &alone, sizeof(T)), 0)
        << rows << " x " << n << ", column " << j << ": " << sums[j] << " vs " << alone;
  }
}

TEST(CpuReduceTest, ColumnSumsGiveEachColumnsBits) {
  for (const int64_t rows : {1, 15, 16, 17, 33, 48, 1000, 4099}) {
    for (const int64_t n : {2, 7, 128}) {
      expect_column_sums_match_columns<float>(rows, n);
      expect_column_sums_match_columns<double>(rows, n);
      expect_column_sums_match_columns<int32_t>(rows, n);
    }
  }
  // bfloat16 accumulates in float and rounds once, as a column alone does.
  std::vector<bfloat16_t> h;
  for (int i = 0; i < 300 * 3; ++i) h.emplace_back(static_cast<float>(i % 11) * 0.37f);
  const auto sums = reduce<bfloat16_t>(ReduceOp::kSum, in(h, {3, 300}, {1, 3}), 1);
  for (int j = 0; j < 3; ++j) {
    std::vector<bfloat16_t> column;
    for (int r = 0; r < 300; ++r) column.push_back(h[r * 3 + j]);
    EXPECT_EQ(sums[j].bits, reduce<bfloat16_t>(ReduceOp::kSum, in(column, {300}), 1)[0].bits);
  }
  // Two reduced dimensions: positions in row-major order of [4, 9], outputs innermost.
  std::vector<float> y(4 * 9 * 5);
  for (size_t i = 0; i < y.size(); ++i) y[i] = 1.0f / static_cast<float>(i + 1);
  const auto both = reduce<float>(ReduceOp::kSum, in(y, {5, 4, 9}, {1, 45, 5}), 2);
  for (int j = 0; j < 5; ++j) {
    std::vector<float> column;
    for (int p = 0; p < 36; ++p) column.push_back(y[p * 5 + j]);
    const float alone = reduce<float>(ReduceOp::kSum, in(column, {36}), 1)[0];
    EXPECT_EQ(std::memcmp(&both[j], &alone, sizeof(float)), 0) << "column " << j;
  }
}

TEST(CpuReduceTest, MaxMinPropagateNaN) {
  const std::vector<float> x{1, 5, 3, 1, kNaN, 3};
  expect_values(reduce<float>(ReduceOp::kMax, in(x, {2, 3}), 1), {5, kNaN});
  expect_values(reduce<float>(ReduceOp::kMin, in(x, {2, 3}), 1), {1, kNaN});
  const std::vector<int32_t> y{-5, 7, 2, kI32Min};
  expect_values(reduce<int32_t>(ReduceOp::kMax, in(y, {4}), 1), {7});
  expect_values(reduce<int32_t>(ReduceOp::kMin, in(y, {4}), 1), {kI32Min});
  expect_values(reduce<uint32_t>(ReduceOp::kMax, in(std::vector<uint32_t>{1, kU32Max}, {2}), 1),
                {kU32Max});
}

TEST(CpuReduceTest, EmptyReductionsGiveIdentities) {
  const std::vector<float> none;
  const Shape empty{2, 0};
  expect_values(reduce<float>(ReduceOp::kSum, in(none, empty), 1), {0.0f, 0.0f});
  expect_values(reduce<float>(ReduceOp::kProd, in(none, empty), 1), {1.0f, 1.0f});
  expect_values(reduce<float>(ReduceOp::kMax, in(none, empty), 1), {-kInf, -kInf});
  expect_values(reduce<float>(ReduceOp::kMin, in(none, empty), 1), {kInf, kInf});
  const std::vector<int32_t> ints;
  expect_values(reduce<int32_t>(ReduceOp::kMax, in(ints, empty), 1), {kI32Min, kI32Min});
  expect_values(reduce<int32_t>(ReduceOp::kMin, in(ints, empty), 1), {kI32Max, kI32Max});
  const std::vector<uint32_t> uints;
  expect_values(reduce<uint32_t>(ReduceOp::kMax, in(uints, {0}), 1), {0u});
  const std::vector<float16_t> halfs;
  EXPECT_EQ(reduce<float16_t>(ReduceOp::kMax, in(halfs, {0}), 1)[0].bits, 0xfc00);
  const std::vector<uint8_t> bools;
  expect_values(reduce<uint8_t>(ReduceOp::kAny, in(bools, {0}), 1), {0});
  expect_values(reduce<uint8_t>(ReduceOp::kAll, in(bools, {0}), 1), {1});
  expect_values(reduce<uint8_t>(ReduceOp::kMax, in(bools, {0}), 1), {0});
  expect_values(reduce<uint8_t>(ReduceOp::kMin, in(bools, {0}), 1), {1});
  // No outputs at all.
  EXPECT_TRUE((reduce<float>(ReduceOp::kSum, in(none, {0, 3}), 1).empty()));
}

TEST(CpuReduceTest, ArgMaxArgMin) {
  const auto argmax = [](const std::vector<float>& v) {
    return reduce<int32_t>(ReduceOp::kArgMax, in(v, {static_cast<int64_t>(v.size())}), 1);
  };
  const auto argmin = [](const std::vector<float>& v) {
    return reduce<int32_t>(ReduceOp::kArgMin, in(v, {static_cast<int64_t>(v.size())}), 1);
  };
  expect_values(argmax({1, 5, 5, 2}), {1});        // first of the ties
  expect_values(argmax({1, kNaN, 7, kNaN}), {1});  // NaN is the max, first NaN wins
  expect_values(argmax({-kInf, -kInf}), {0});
  expect_values(argmin({3, 1, 1, 2}), {1});
  expect_values(argmin({3, 1, kNaN, kNaN}), {2});  // NaN is also the min
  expect_values(argmin({kInf, 7, kInf}), {1});
  const std::vector<int32_t> ints{4, 9, 9, -3, 0, -3};
  expect_values(reduce<int32_t>(ReduceOp::kArgMax, in(ints, {2, 3}), 1), {1, 1});
  expect_values(reduce<int32_t>(ReduceOp::kArgMin, in(ints, {2, 3}), 1), {0, 0});
  // Flattened over two reduced dims of a transposed view: the view is {{4, -3}, {9, 0}, {9, -3}}.
  expect_values(reduce<int32_t>(ReduceOp::kArgMax, in(ints, {1, 3, 2}, {6, 1, 3}), 2), {2});
  expect_values(reduce<int32_t>(ReduceOp::kArgMin, in(ints, {1, 3, 2}, {6, 1, 3}), 2), {1});
  expect_values(reduce<int32_t>(ReduceOp::kArgMax, in(ints, {6}), 0), {0, 0, 0, 0, 0, 0});
  const std::vector<float16_t> h = halves({1.0f, 3.0f, kNaN});
  expect_values(reduce<int32_t>(ReduceOp::kArgMax, in(h, {3}), 1), {2});
  expect_values(reduce<int32_t>(ReduceOp::kArgMin, in(h, {3}), 1), {2});
  const std::vector<uint8_t> b{0, 2, 1};
  expect_values(reduce<int32_t>(ReduceOp::kArgMax, in(b, {3}), 1), {1});
}

TEST(CpuReduceTest, AnyAll) {
  const std::vector<uint8_t> x{0, 0, 0, 0, 2, 0};
  expect_values(reduce<uint8_t>(ReduceOp::kAny, in(x, {2, 3}), 1), {0, 1});
  const std::vector<uint8_t> y{1, 1, 2, 1, 0, 1};
  expect_values(reduce<uint8_t>(ReduceOp::kAll, in(y, {2, 3}), 1), {1, 0});
  expect_values(reduce<uint8_t>(ReduceOp::kAll, in(y, {3, 2}, {1, 3}), 1), {1, 0, 1});
  expect_values(reduce<uint8_t>(ReduceOp::kMax, in(x, {2, 3}), 1), {0, 1});
}

// ---- matmul ----

// c = a @ b by the textbook triple loop in double; exact for the small integers used here.
std::vector<double> reference_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                     int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t kk = 0; kk < k; ++kk) {
          c[(bi * m + i) * n + j] += a[(bi * m + i) * k + kk] * b[(bi * k + kk) * n + j];
        }
      }
    }
  }
  return c;
}

std::vector<double> small_ints(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (double& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<double>(static_cast<int>((seed >> 16) % 19) - 9);
  }
  return v;
}

template <class T>
std::vector<T> cast_all(const std::vector<double>& v) {
  std::vector<T> out;
  for (const double x : v) out.push_back(static_cast<T>(x));
  return out;
}

template <class T>
void check_matmul_layouts() {
  constexpr int64_t kB = 3, kM = 4, kK = 5, kN = 6;
  const auto a64 = small_ints(kB * kM * kK, 1);
  const auto b64 = small_ints(kB * kK * kN, 2);
  const auto a = cast_all<T>(a64);
  const auto b = cast_all<T>(b64);
  std::vector<T> c(kB * kM * kN);
  const Shape c_shape{kB, kM, kN};

  kernels().matmul(in(a, {kB, kM, kK}), in(b, {kB, kK, kN}), out(c, c_shape));
  expect_values(c, cast_all<T>(reference_matmul(a64, b64, kB, kM, kK, kN)));

  // Transposed storage of both operands: a stored [B, K, M], b stored [B, N, K].
  std::vector<T> at(a.size()), bt(b.size());
  for (int64_t bi = 0; bi < kB; ++bi) {
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t kk = 0; kk < kK; ++kk) {
        at[(bi * kK + kk) * kM + i] = a[(bi * kM + i) * kK + kk];
      }
    }
    for (int64_t kk = 0; kk < kK; ++kk) {
      for (int64_t j = 0; j < kN; ++j) bt[(bi * kN + j) * kK + kk] = b[(bi * kK + kk) * kN + j];
    }
  }
  std::fill(c.begin(), c.end(), T{});
  kernels().matmul(in(at, {kB, kM, kK}, {kK * kM, 1, kM}), in(bt, {kB, kK, kN}, {kN * kK, 1, kK}),
                   out(c, c_shape));
  expect_values(c, cast_all<T>(reference_matmul(a64, b64, kB, kM, kK, kN)));

  // b shared by every batch (batch stride 0), and a with its batch order reversed.
  std::vector<double> a_rev, b_shared;
  for (int64_t bi = kB - 1; bi >= 0; --bi) {
    a_rev.insert(a_rev.end(), a64.begin() + bi * kM * kK, a64.begin() + (bi + 1) * kM * kK);
  }
  for (int64_t bi = 0; bi < kB; ++bi)
    b_shared.insert(b_shared.end(), b64.begin(), b64.begin() + kK * kN);
  kernels().matmul(in(a, {kB, kM, kK}, {-kM * kK, kK, 1}, (kB - 1) * kM * kK),
                   in(b, {kB, kK, kN}, {0, kN, 1}), out(c, c_shape));
  expect_values(c, cast_all<T>(reference_matmul(a_rev, b_shared, kB, kM, kK, kN)));
}

TEST(CpuMatmulTest, MatchesReferenceForEveryLayout) {
  check_matmul_layouts<float>();
  check_matmul_layouts<double>();
  check_matmul_layouts<int32_t>();
  check_matmul_layouts<int64_t>();
}

TEST(CpuMatmulTest, SmallKnownProduct) {
  const std::vector<float> a{1, 2, 3, 4, 5, 6};     // [1, 2, 3]
  const std::vector<float> b{7, 8, 9, 10, 11, 12};  // [1, 3, 2]
  std::vector<float> c(4);
  kernels().matmul(in(a, {1, 2, 3}), in(b, {1, 3, 2}), out(c, {1, 2, 2}));
  expect_values(c, {58, 64, 139, 154});
  // A row broadcast as a (batch and row strides 0).
  std::vector<float> c2(4);
  kernels().matmul(in(a, {2, 1, 3}, {0, 0, 1}), in(b, {2, 3, 2}, {0, 2, 1}), out(c2, {2, 1, 2}));
  expect_values(c2, {58, 64, 58, 64});
}

TEST(CpuMatmulTest, HalfAccumulatesInFloat) {
  // Accumulating in float16 would stall at 2048.
  const std::vector<float16_t> one{float16_t(1.0f)};
  std::vector<float16_t> c(1);
  kernels().matmul(in(one, {1, 1, 3000}, {0, 0, 0}), in(one, {1, 3000, 1}, {0, 0, 0}),
                   out(c, {1, 1, 1}));
  EXPECT_EQ(c[0].bits, float16_t(3000.0f).bits);
  const std::vector<bfloat16_t> a{bfloat16_t(1.5f), bfloat16_t(2.0f)};
  std::vector<bfloat16_t> cb(1);
  kernels().matmul(in(a, {1, 1, 2}), in(a, {1, 2, 1}), out(cb, {1, 1, 1}));
  EXPECT_EQ(cb[0].bits, bfloat16_t(6.25f).bits);
}

TEST(CpuMatmulTest, IntegerWrapsAndBoolIsOrOfAnds) {
  const std::vector<int32_t> a{kI32Max, 1};
  const std::vector<int32_t> ones{1, 1};
  std::vector<int32_t> c(1);
  kernels().matmul(in(a, {1, 1, 2}), in(ones, {1, 2, 1}), out(c, {1, 1, 1}));
  expect_values(c, {kI32Min});
  const std::vector<int32_t> big{65536};
  kernels().matmul(in(big, {1, 1, 1}), in(big, {1, 1, 1}), out(c, {1, 1, 1}));
  expect_values(c, {0});
  // 256 true terms: a wrapping byte count would come back to 0.
  const std::vector<uint8_t> yes{1};
  std::vector<uint8_t> cb(1);
  kernels().matmul(in(yes, {1, 1, 256}, {0, 0, 0}), in(yes, {1, 256, 1}, {0, 0, 0}),
                   out(cb, {1, 1, 1}));
  expect_values(cb, {1});
  const std::vector<uint8_t> p{1, 0, 0, 2};  // [[1, 0], [0, 1]] with a stray byte
  const std::vector<uint8_t> q{0, 1, 0, 0};  // [[0, 1], [0, 0]]
  std::vector<uint8_t> pq(4);
  kernels().matmul(in(p, {1, 2, 2}), in(q, {1, 2, 2}), out(pq, {1, 2, 2}));
  expect_values(pq, {0, 1, 0, 0});
}

TEST(CpuMatmulTest, EmptyContractionGivesZeros) {
  const std::vector<float> none;
  std::vector<float> c(6, 7.0f);
  kernels().matmul(in(none, {1, 2, 0}), in(none, {1, 0, 3}), out(c, {1, 2, 3}));
  expect_values(c, {0, 0, 0, 0, 0, 0});
}

// Float products go through the BLAS, whose summation order is its own (kernels.h), so they are
// checked against a double reference within the classic bound for a k-term dot product:
// |c - ref| <= 2 k eps sum_k |a_ik b_kj| (the 2 leaves room for the BLAS's blocked partial sums).
// The inputs are not small integers, so that every product and sum rounds.
std::vector<double> uniform_values(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (double& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<double>(seed >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0;
  }
  return v;
}

// One operand: `values` is the logical [batch, rows, cols] matrix (row-major); `storage` and the
// view place it in memory in some layout.
template <class T>
struct Operand {
  std::vector<double> values;
  std::vector<T> storage;
  Strides strides;
  int64_t offset = 0;
};

enum class Layout { kDense, kTransposed, kEveryOtherColumn, kReversedRows, kBroadcastBatch };

// The [batch, rows, cols] operand of the given layout, rounded to T, with its values as rounded.
template <class T>
Operand<T> make_operand(Layout layout, int64_t batch, int64_t rows, int64_t cols, uint32_t seed) {
  Operand<T> x;
  const int64_t stored_batch = layout == Layout::kBroadcastBatch ? 1 : batch;
  const std::vector<double> raw = uniform_values(stored_batch * rows * cols, seed);
  const int64_t width = layout == Layout::kEveryOtherColumn ? 2 * cols : cols;
  x.storage.assign(static_cast<size_t>(std::max<int64_t>(stored_batch * rows * width, 1)), T{});
  const auto at = [&](int64_t bi, int64_t i, int64_t j) -> T& {
    switch (layout) {
      case Layout::kTransposed:
        return x.storage[(bi * cols + j) * rows + i];
      case Layout::kEveryOtherColumn:
        return x.storage[(bi * rows + i) * width + 2 * j];
      case Layout::kReversedRows:
        return x.storage[(bi * rows + rows - 1 - i) * cols + j];
      default:
        return x.storage[(bi * rows + i) * cols + j];
    }
  };
  for (int64_t bi = 0; bi < stored_batch; ++bi) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        at(bi, i, j) = static_cast<T>(raw[(bi * rows + i) * cols + j]);
    }
  }
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        x.values.push_back(
            static_cast<double>(at(layout == Layout::kBroadcastBatch ? 0 : bi, i, j)));
      }
    }
  }
  switch (layout) {
    case Layout::kDense:
      x.strides = {rows * cols, cols, 1};
      break;
    case Layout::kTransposed:
      x.strides = {rows * cols, 1, rows};
      break;
    case Layout::kEveryOtherColumn:
      x.strides = {rows * width, width, 2};
      break;
    case Layout::kReversedRows:
      x.strides = {rows * cols, -cols, 1};
      x.offset = (rows - 1) * cols;
      break;
    case Layout::kBroadcastBatch:
      x.strides = {0, cols, 1};
      break;
  }
  return x;
}

// c = a @ b through the kernel, checked element by element against the double reference.
template <class T>
void check_float_matmul(Layout la, Layout lb, int64_t batch, int64_t m, int64_t k, int64_t n) {
  SCOPED_TRACE(::testing::Message()
               << "layouts " << static_cast<int>(la) << ", " << static_cast<int>(lb) << "; batch "
               << batch << ", m " << m << ", k " << k << ", n " << n);
  const auto a = make_operand<T>(la, batch, m, k, 11);
  const auto b = make_operand<T>(lb, batch, k, n, 12);
  std::vector<T> c(static_cast<size_t>(batch * m * n), std::numeric_limits<T>::quiet_NaN());
  kernels().matmul(in(a.storage, {batch, m, k}, a.strides, a.offset),
                   in(b.storage, {batch, k, n}, b.strides, b.offset), out(c, {batch, m, n}));
  std::vector<double> magnitude_a, magnitude_b;
  for (const double v : a.values) magnitude_a.push_back(std::fabs(v));
  for (const double v : b.values) magnitude_b.push_back(std::fabs(v));
  const auto reference = reference_matmul(a.values, b.values, batch, m, k, n);
  const auto magnitude = reference_matmul(magnitude_a, magnitude_b, batch, m, k, n);
  const double eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_LE(std::fabs(c[i] - reference[i]), 2.0 * static_cast<double>(k) * eps * magnitude[i])
        << "element " << i << ": " << c[i] << " vs " << reference[i];
  }
}

template <class T>
void check_float_matmul_layouts() {
  constexpr Layout kAll[] = {Layout::kDense, Layout::kTransposed, Layout::kEveryOtherColumn,
                             Layout::kReversedRows, Layout::kBroadcastBatch};
  for (const Layout la : kAll) {
    for (const Layout lb : kAll) check_float_matmul<T>(la, lb, 3, 13, 37, 9);
  }
  // Larger than the BLAS's register blocks, with ragged edges; batched with a shared b (one
  // product of batch * m rows) and with every batch its own.
  check_float_matmul<T>(Layout::kDense, Layout::kDense, 2, 67, 300, 45);
  check_float_matmul<T>(Layout::kDense, Layout::kBroadcastBatch, 3, 67, 300, 45);
  check_float_matmul<T>(Layout::kTransposed, Layout::kTransposed, 2, 45, 129, 67);
  check_float_matmul<T>(Layout::kBroadcastBatch, Layout::kEveryOtherColumn, 4, 33, 70, 65);
  // Degenerate shapes: 1 x 1, a vector times a matrix, a matrix times a vector.
  check_float_matmul<T>(Layout::kDense, Layout::kDense, 1, 1, 1, 1);
  check_float_matmul<T>(Layout::kTransposed, Layout::kTransposed, 2, 1, 1, 1);
  check_float_matmul<T>(Layout::kTransposed, Layout::kDense, 2, 1, 40, 7);
  check_float_matmul<T>(Layout::kEveryOtherColumn, Layout::kTransposed, 2, 7, 40, 1);
  check_float_matmul<T>(Layout::kBroadcastBatch, Layout::kBroadcastBatch, 3, 1, 5, 1);
}

TEST(CpuMatmulTest, FloatMatchesDoubleReferenceForEveryLayout) {
  check_float_matmul_layouts<float>();
  check_float_matmul_layouts<double>();
}

TEST(CpuMatmulTest, FloatHandlesEmptyDimensions) {
  const std::vector<double> none;
  std::vector<double> c(6, kNaN);
  // k == 0 with operands the BLAS would reject as they are (leading dimensions 0).
  kernels().matmul(in(none, {2, 1, 0}, {0, 0, 0}), in(none, {2, 0, 3}, {0, 0, 0}),
                   out(c, {2, 1, 3}));
  expect_values(c, {0, 0, 0, 0, 0, 0});
  const std::vector<float> x(4, 1.0f);
  std::vector<float> untouched{kNaN};
  kernels().matmul(in(x, {1, 0, 4}), in(x, {1, 4, 1}), out(untouched, {1, 0, 1}));
  kernels().matmul(in(x, {1, 1, 4}), in(x, {1, 4, 0}), out(untouched, {1, 1, 0}));
  kernels().matmul(in(x, {0, 1, 4}), in(x, {0, 4, 1}), out(untouched, {0, 1, 1}));
  EXPECT_TRUE(std::isnan(untouched[0]));
  std::vector<float16_t> h(2, float16_t(kNaN));
  const std::vector<float16_t> no_halves;
  kernels().matmul(in(no_halves, {1, 2, 0}), in(no_halves, {1, 0, 1}), out(h, {1, 2, 1}));
  EXPECT_EQ(bits_of(h), (std::vector<uint16_t>{0, 0}));
}

// float16/bfloat16 go through float32: a float32 sum that is exact is rounded once, so the result
// is the exact product rounded to the half type, whatever the layout.
template <class H>
void check_half_matmul() {
  // Row i of a is [1, ..., 1, i] (k terms); b's columns are [1, ..., 1] and [0.5, ..., 0.5, 3].
  // The sums 2048 + i and 1024 + 3i are exact in float32; the half types must round them
  // (float16 keeps 1024 + 3i but not 2049; bfloat16 keeps neither).
  constexpr int64_t kM = 4, kK = 2049, kN = 2;
  std::vector<H> a, bt;  // a dense [M, K]; b stored transposed, [N, K]
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t kk = 0; kk < kK; ++kk) a.emplace_back(kk + 1 < kK ? 1.0f : static_cast<float>(i));
  }
  for (int64_t kk = 0; kk < kK; ++kk) bt.emplace_back(1.0f);
  for (int64_t kk = 0; kk < kK; ++kk) bt.emplace_back(kk + 1 < kK ? 0.5f : 3.0f);
  std::vector<uint16_t> expected;
  for (int64_t i = 0; i < kM; ++i) {
    expected.push_back(H(2048.0f + static_cast<float>(i)).bits);
    expected.push_back(H(1024.0f + 3.0f * static_cast<float>(i)).bits);
  }
  std::vector<H> c(kM * kN);
  kernels().matmul(in(a, {1, kM, kK}), in(bt, {1, kK, kN}, {0, 1, kK}), out(c, {1, kM, kN}));
  EXPECT_EQ(bits_of(c), expected);
  // The same product with a transposed view of a transposed copy of a: packed differently, same
  // bits.
  std::vector<H> at(a.size());
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t kk = 0; kk < kK; ++kk) at[kk * kM + i] = a[i * kK + kk];
  }
  std::fill(c.begin(), c.end(), H(0.0f));
  kernels().matmul(in(at, {1, kM, kK}, {0, 1, kM}), in(bt, {1, kK, kN}, {0, 1, kK}),
                   out(c, {1, kM, kN}));
  EXPECT_EQ(bits_of(c), expected);
}

TEST(CpuMatmulTest, HalfGoesThroughFloat32) {
  check_half_matmul<float16_t>();
  check_half_matmul<bfloat16_t>();
}

TEST(CpuMatmulTest, IntegerProductsStayExact) {
  // Large values whose products and sums wrap: the result is the product modulo 2^32.
  constexpr int64_t kM = 20, kK = 70, kN = 30;
  std::vector<int32_t> a, b;
  uint32_t seed = 5;
  for (int64_t i = 0; i < kM * kK + kK * kN; ++i) {
    seed = seed * 1664525u + 1013904223u;
    (i < kM * kK ? a : b).push_back(static_cast<int32_t>(seed));
  }
  std::vector<int32_t> expected;
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      uint32_t sum = 0;
      for (int64_t kk = 0; kk < kK; ++kk) {
        sum += static_cast<uint32_t>(a[i * kK + kk]) * static_cast<uint32_t>(b[kk * kN + j]);
      }
      expected.push_back(static_cast<int32_t>(sum));
    }
  }
  std::vector<int32_t> c(kM * kN);
  kernels().matmul(in(a, {1, kM, kK}), in(b, {1, kK, kN}), out(c, {1, kM, kN}));
  expect_values(c, expected);
}

TEST(CpuMatmulTest, FloatProductsRepeatBitForBitFromConcurrentThreads) {
  // Each device thread calls the BLAS at once with its own operands, so the BLAS must keep no
  // shared scratch between calls (a serial OpenBLAS built without locking got a few percent of
  // these wrong), and its order is fixed: every thread's products repeat its first one's bits.
  constexpr int kThreads = 8, kReps = 300;
  const auto product = [](const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                          int64_t k, int64_t n) {
    std::vector<float> c(static_cast<size_t>(m * n));
    kernels().matmul(in(a, {1, m, k}), in(b, {1, k, n}), out(c, {1, m, n}));
    std::vector<uint32_t> bits;
    for (const float x : c) bits.push_back(std::bit_cast<uint32_t>(x));
    return bits;
  };
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &product, &mismatches] {
      const auto a = cast_all<float>(uniform_values(256 * 40, 2 * t + 1));
      const auto b = cast_all<float>(uniform_values(40 * 8, 2 * t + 2));
      const auto tall = product(a, b, 256, 8, 1), wide = product(a, b, 1, 40, 8);
      const auto square = product(a, b, 40, 40, 8);
      for (int rep = 0; rep < kReps; ++rep) {
        mismatches[t] += product(a, b, 256, 8, 1) != tall;
        mismatches[t] += product(a, b, 1, 40, 8) != wide;
        mismatches[t] += product(a, b, 40, 40, 8) != square;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0));
}

// ---- threads ----

TEST(CpuKernelsTest, ConcurrentUseFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<float> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &results] {
      std::vector<float> x(10000, static_cast<float>(t));
      std::vector<float> y(100 * 100);
      kernels().matmul(in(x, {1, 100, 100}), in(x, {1, 100, 100}), out(y, {1, 100, 100}));
      std::vector<float> total(1);
      kernels().reduce(ReduceOp::kSum, in(y, {10000}), 1, out(total, {}));
      results[t] = total[0];
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(results[t], 100.0f * t * t * 10000.0f);
}

}  // namespace
}  // namespace spmd::internal
