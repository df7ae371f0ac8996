// SPDX-License-Identifier: Apache-2.0
// Unit tests for spmd/ops.h: constructors, elementwise ops with broadcasting and JAX promotion
// (weak scalars included), reductions, linear algebra and shape manipulation.
#include "spmd/ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "spmd/errors.h"
#include "spmd/shard_map.h"

namespace spmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr DType kB = DType::kBool, kI32 = DType::kInt32, kI64 = DType::kInt64,
                kU32 = DType::kUInt32, kF16 = DType::kFloat16, kBF16 = DType::kBFloat16,
                kF32 = DType::kFloat32, kF64 = DType::kFloat64;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Array i32(const std::vector<int32_t>& v, std::optional<Shape> s = std::nullopt) {
  return Array::from_vector(v, std::move(s));
}
Array f32(const std::vector<float>& v, std::optional<Shape> s = std::nullopt) {
  return Array::from_vector(v, std::move(s));
}
Array bools(const std::vector<bool>& v) { return Array::from_vector(v); }
// Values 0..n-1 as an int32 array of `shape`.
Array iota(const Shape& shape) { return arange(shape_size(shape)).reshape(shape); }

// `a` has exactly this dtype, shape and values (NaN matches NaN; the sign of zero is ignored).
testing::AssertionResult Is(const Array& a, DType dtype, const Shape& shape,
                            const std::vector<double>& want) {
  if (a.dtype() != dtype || a.shape() != shape) {
    return testing::AssertionFailure()
           << "got " << type_string(a.dtype(), a.shape()) << ", want " << type_string(dtype, shape);
  }
  std::vector<double> got = a.to_vector<double>();
  if (got.size() != want.size()) return testing::AssertionFailure() << "size mismatch";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && !(std::isnan(got[i]) && std::isnan(want[i]))) {
      return testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", want " << want[i] << "\nin " << a.str();
    }
  }
  return testing::AssertionSuccess();
}

// ---- constructors ----

TEST(OpsTest, Arange) {
  EXPECT_TRUE(Is(arange(5), kI32, {5}, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(Is(arange(0), kI32, {0}, {}));
  EXPECT_TRUE(Is(arange(-3), kI32, {0}, {}));
  EXPECT_TRUE(Is(arange(3, kF32), kF32, {3}, {0, 1, 2}));
  EXPECT_TRUE(Is(arange(2, kI64), kI64, {2}, {0, 1}));
  EXPECT_TRUE(Is(arange(2, 7), kI32, {5}, {2, 3, 4, 5, 6}));
  EXPECT_TRUE(Is(arange(0, 10, 3), kI32, {4}, {0, 3, 6, 9}));
  EXPECT_TRUE(Is(arange(0, 9, 3), kI32, {3}, {0, 3, 6}));
  EXPECT_TRUE(Is(arange(10, 0, -3), kI32, {4}, {10, 7, 4, 1}));
  EXPECT_TRUE(Is(arange(-1, -4, -1), kI32, {3}, {-1, -2, -3}));
  EXPECT_TRUE(Is(arange(5, 2), kI32, {0}, {}));
  EXPECT_TRUE(Is(arange(2, 5, -1), kI32, {0}, {}));
  EXPECT_TRUE(Is(arange(-2, 2, 2, kF64), kF64, {2}, {-2, 0}));
  EXPECT_THAT([] { arange(0, 5, 0); },
              ThrowsMessage<ValueError>(HasSubstr("step must not be zero")));
}

TEST(OpsTest, FilledConstructors) {
  EXPECT_TRUE(Is(zeros({2, 3}), kF32, {2, 3}, {0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(Is(zeros({2}, kI32), kI32, {2}, {0, 0}));
  EXPECT_TRUE(Is(zeros({}), kF32, {}, {0}));
  EXPECT_TRUE(Is(zeros({0, 2}), kF32, {0, 2}, {}));
  EXPECT_TRUE(Is(ones({3}, kB), kB, {3}, {1, 1, 1}));
  EXPECT_TRUE(Is(ones({2}, kBF16), kBF16, {2}, {1, 1}));
  EXPECT_TRUE(Is(full({2}, 2.5), kF32, {2}, {2.5, 2.5}));
  EXPECT_TRUE(Is(full({2}, 7, kI64), kI64, {2}, {7, 7}));
  EXPECT_TRUE(Is(full({2}, 2.75, kI32), kI32, {2}, {2, 2}));
  EXPECT_TRUE(Is(full({}, -1.5, kF16), kF16, {}, {-1.5}));
  EXPECT_TRUE(Is(full({1}, 4294967295.0, kU32), kU32, {1}, {4294967295.0}));
  Array x = i32({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_TRUE(Is(zeros_like(x), kI32, {2, 2}, {0, 0, 0, 0}));
  EXPECT_TRUE(Is(ones_like(x.astype(kBF16)), kBF16, {2, 2}, {1, 1, 1, 1}));
  EXPECT_TRUE(Is(full_like(x, -2.0), kI32, {2, 2}, {-2, -2, -2, -2}));
  EXPECT_TRUE(Is(full_like(f32({1}), 0.25), kF32, {1}, {0.25}));
}

// ---- elementwise ----

TEST(OpsTest, UnaryOps) {
  struct Case {
    const char* name;
    std::function<Array(const Array&)> op;
    Array in;
    DType dtype;
    std::vector<double> want;
  };
  const Array fl = f32({-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.25f});
  const std::vector<Case> cases = {
      {"neg i32", [](const Array& x) { return -x; }, i32({1, -2, 0}), kI32, {-1, 2, 0}},
      {"neg f32", [](const Array& x) { return -x; }, fl, kF32, {1.5, 0.5, -0.5, -1.5, -2.5, -2.25}},
      {"neg u32", [](const Array& x) { return -x; }, arange(2, kU32), kU32, {0, 4294967295.0}},
      {"not bool", [](const Array& x) { return !x; }, bools({true, false}), kB, {0, 1}},
      {"not i32", [](const Array& x) { return !x; }, i32({0, 3}), kB, {1, 0}},
      {"exp", [](const Array& x) { return exp(x); }, f32({0, -INFINITY}), kF32, {1, 0}},
      {"exp i32", [](const Array& x) { return exp(x); }, i32({0}), kF32, {1}},
      {"exp f16", [](const Array& x) { return exp(x); }, f32({0}).astype(kF16), kF16, {1}},
      {"log", [](const Array& x) { return log(x); }, f32({1, 0, -1}), kF32, {0, -kInf, kNaN}},
      {"log i64", [](const Array& x) { return log(x); }, arange(1, 2, 1, kI64), kF64, {0}},
      {"sqrt", [](const Array& x) { return sqrt(x); }, f32({4, 2.25, -1}), kF32, {2, 1.5, kNaN}},
      {"sqrt i32", [](const Array& x) { return sqrt(x); }, i32({16, 0}), kF32, {4, 0}},
      {"sqrt bool", [](const Array& x) { return sqrt(x); }, bools({true}), kF32, {1}},
      {"tanh",
       [](const Array& x) { return tanh(x); },
       f32({0, INFINITY, -INFINITY}),
       kF32,
       {0, 1, -1}},
      {"abs i32",
       [](const Array& x) { return abs(x); },
       i32({-3, 0, 4, INT32_MIN}),
       kI32,
       {3, 0, 4, INT32_MIN}},
      {"abs f32", [](const Array& x) { return abs(x); }, fl, kF32, {1.5, 0.5, 0.5, 1.5, 2.5, 2.25}},
      {"abs bf16", [](const Array& x) { return abs(x); }, f32({-2}).astype(kBF16), kBF16, {2}},
      {"sign i32", [](const Array& x) { return sign(x); }, i32({-5, 0, 7}), kI32, {-1, 0, 1}},
      {"sign f32",
       [](const Array& x) { return sign(x); },
       f32({-2.5, 0, 3, NAN}),
       kF32,
       {-1, 0, 1, kNaN}},
      {"sign u32", [](const Array& x) { return sign(x); }, arange(0, 6, 5, kU32), kU32, {0, 1}},
      {"floor", [](const Array& x) { return floor(x); }, fl, kF32, {-2, -1, 0, 1, 2, 2}},
      {"floor i32", [](const Array& x) { return floor(x); }, i32({-3, 4}), kI32, {-3, 4}},
      {"ceil", [](const Array& x) { return ceil(x); }, fl, kF32, {-1, 0, 1, 2, 3, 3}},
      {"ceil i32", [](const Array& x) { return ceil(x); }, i32({-3}), kI32, {-3}},
      {"round", [](const Array& x) { return round(x); }, fl, kF32, {-2, 0, 0, 2, 2, 2}},
      {"round f64",
       [](const Array& x) { return round(x); },
       Array::from_vector<double>({3.5, -2.5, 2.6}),
       kF64,
       {4, -2, 3}},
      {"round i32", [](const Array& x) { return round(x); }, i32({7}), kI32, {7}},
      {"square i32", [](const Array& x) { return square(x); }, i32({-3, 4}), kI32, {9, 16}},
      {"square bool", [](const Array& x) { return square(x); }, bools({true, false}), kI32, {1, 0}},
      {"square f32",
       [](const Array& x) { return square(x); },
       fl,
       kF32,
       {2.25, 0.25, 0.25, 2.25, 6.25, 5.0625}},
      {"erf_inv",
       [](const Array& x) { return erf_inv(x); },
       f32({0, 1, -1, 2}),
       kF32,
       {0, kInf, -kInf, kNaN}},
      {"erf_inv i32", [](const Array& x) { return erf_inv(x); }, i32({0}), kF32, {0}},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(Is(c.op(c.in), c.dtype, c.in.shape(), c.want)) << c.name;
  }
  EXPECT_THAT([] { (void)-bools({true}); }, ThrowsMessage<TypeError>(HasSubstr("use operator!")));
  EXPECT_THAT([] { sign(bools({true})); },
              ThrowsMessage<TypeError>(HasSubstr("sign does not accept dtype bool")));
  // Unary ops keep the shape.
  EXPECT_EQ(exp(zeros({2, 3})).shape(), (Shape{2, 3}));
  EXPECT_EQ(square(Array::scalar<float>(3.0f)).item<float>(), 9.0f);
  // erf_inv is the inverse of erf.
  std::vector<float> y = erf_inv(f32({0.5f, -0.25f, 0.9f})).to_vector<float>();
  EXPECT_NEAR(std::erf(y[0]), 0.5, 1e-6);
  EXPECT_NEAR(std::erf(y[1]), -0.25, 1e-6);
  EXPECT_NEAR(std::erf(y[2]), 0.9, 1e-6);
  EXPECT_NEAR(std::erf(erf_inv(Array::scalar<double>(0.75)).item<double>()), 0.75, 1e-15);
}

// The math library's functions: each element is the C library's result in the array's precision
// (float16/bfloat16 compute in float32 and round once), integers and bools compute in float32.
TEST(OpsTest, LibraryMathOps) {
  struct Case {
    const char* name;
    Array (*op)(const Array&);
    double (*ref)(double);
    float (*ref32)(float);
  };
  const std::vector<Case> cases = {
      {"sin", sin, std::sin, std::sin},
      {"cos", cos, std::cos, std::cos},
      {"tan", tan, std::tan, std::tan},
      {"arcsin", arcsin, std::asin, std::asin},
      {"arccos", arccos, std::acos, std::acos},
      {"arctan", arctan, std::atan, std::atan},
      {"sinh", sinh, std::sinh, std::sinh},
      {"cosh", cosh, std::cosh, std::cosh},
      {"arcsinh", arcsinh, std::asinh, std::asinh},
      {"arccosh", arccosh, std::acosh, std::acosh},
      {"arctanh", arctanh, std::atanh, std::atanh},
      {"log1p", log1p, std::log1p, std::log1p},
      {"expm1", expm1, std::expm1, std::expm1},
      {"log2", log2, std::log2, std::log2},
      {"log10", log10, std::log10, std::log10},
      {"exp2", exp2, std::exp2, std::exp2},
      {"erf", erf, std::erf, std::erf},
  };
  const std::vector<double> xs = {-2.5, -0.75, -1e-9, 0.0, 0.3, 0.999, 1.0, 1.5, 3.0, 40.0};
  std::vector<float> xs32(xs.begin(), xs.end());
  for (const Case& c : cases) {
    std::vector<double> got64 = c.op(Array::from_vector<double>(xs)).to_vector<double>();
    std::vector<float> got32 = c.op(f32(xs32)).to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want64 = c.ref(xs[i]);
      const float want32 = c.ref32(xs32[i]);
      // Bitwise, NaN (outside the domain) included.
      EXPECT_TRUE(want64 == got64[i] || (std::isnan(want64) && std::isnan(got64[i])))
          << c.name << "(" << xs[i] << ") f64: " << got64[i] << " != " << want64;
      EXPECT_TRUE(want32 == got32[i] || (std::isnan(want32) && std::isnan(got32[i])))
          << c.name << "(" << xs[i] << ") f32: " << got32[i] << " != " << want32;
    }
    EXPECT_EQ(c.op(i32({1, 2})).dtype(), kF32) << c.name;
    EXPECT_EQ(c.op(bools({true})).dtype(), kF32) << c.name;
    Array half = c.op(f32({0.5f}).astype(kF16));
    EXPECT_EQ(half.dtype(), kF16) << c.name;
    const float got_half = half.astype(kF32).item<float>();
    const float want_half = f32({c.ref32(0.5f)}).astype(kF16).astype(kF32).item<float>();
    EXPECT_TRUE(got_half == want_half || (std::isnan(got_half) && std::isnan(want_half)))
        << c.name << " f16: " << got_half << " != " << want_half;
    EXPECT_EQ(c.op(zeros({2, 3})).shape(), (Shape{2, 3})) << c.name;
  }
}

TEST(OpsTest, ClipIsMinimumOfMaximum) {
  const Array x = f32({-3, -1, 0, 2, 5, NAN});
  EXPECT_TRUE(Is(clip(x, -1, 2), kF32, {6}, {-1, -1, 0, 2, 2, kNaN}));
  EXPECT_TRUE(Is(clip(x, std::nullopt, 0), kF32, {6}, {-3, -1, 0, 0, 0, kNaN}));
  EXPECT_TRUE(Is(clip(x, 1, std::nullopt), kF32, {6}, {1, 1, 1, 2, 5, kNaN}));
  // A lower bound above the upper one gives the upper one (jnp.clip: minimum(maximum(x, lo), hi)).
  EXPECT_TRUE(Is(clip(x, 3, 1), kF32, {6}, {1, 1, 1, 1, 1, kNaN}));
  // Integers stay integers with weak bounds; array bounds broadcast and promote.
  EXPECT_TRUE(Is(clip(i32({-5, 5}), 0, 3), kI32, {2}, {0, 3}));
  EXPECT_TRUE(Is(clip(i32({-5, 5, 9}), f32({0}), f32({4, 4, 8})), kF32, {3}, {0, 4, 8}));
}

TEST(OpsTest, BinaryOps) {
  struct Case {
    std::string name;
    std::function<Array(const Array&, const Array&)> op;
    Array a, b;
    DType dtype;
    std::vector<double> want;
  };
  const Array p = i32({7, -7, 7, -7}), q = i32({2, 2, -2, -2});
  const Array fp = f32({7.5, -7.5, 7.5, -7.5}), fq = f32({2, 2, -2, -2});
#define OP(f) [](const Array& a, const Array& b) { return f(a, b); }
  const std::vector<Case> cases = {
      {"add", OP(add), p, q, kI32, {9, -5, 5, -9}},
      {"subtract", OP(subtract), p, q, kI32, {5, -9, 9, -5}},
      {"multiply", OP(multiply), p, q, kI32, {14, -14, -14, 14}},
      {"add wraps", OP(add), i32({INT32_MAX}), i32({1}), kI32, {INT32_MIN}},
      {"divide i32", OP(divide), p, q, kF32, {3.5, -3.5, -3.5, 3.5}},
      {"divide by 0", OP(divide), i32({1, -1, 0}), i32({0, 0, 0}), kF32, {kInf, -kInf, kNaN}},
      {"divide f16", OP(divide), f32({3}).astype(kF16), f32({2}).astype(kF16), kF16, {1.5}},
      {"divide i64", OP(divide), arange(3, 4, 1, kI64), i32({2}), kF64, {1.5}},
      {"floor_divide i32", OP(floor_divide), p, q, kI32, {3, -4, -4, 3}},
      {"floor_divide f32", OP(floor_divide), fp, fq, kF32, {3, -4, -4, 3}},
      {"floor_divide i32 by 0", OP(floor_divide), i32({7, -7, 0}), i32({0}), kI32, {0, 0, 0}},
      {"remainder i32 by 0", OP(remainder), i32({7, -7, 0}), i32({0}), kI32, {0, 0, 0}},
      {"remainder i32", OP(remainder), p, i32({3, 3, -3, -3}), kI32, {1, 2, -2, -1}},
      {"remainder f32",
       OP(remainder),
       f32({5.5, -5.5, 5.5, -5.5}),
       fq,
       kF32,
       {1.5, 0.5, -0.5, -1.5}},
      {"power i32", OP(power), i32({2, 3, -2, 5}), i32({10, 3, 3, 0}), kI32, {1024, 27, -8, 1}},
      {"power f32", OP(power), f32({4, 2, -3}), f32({0.5, -1, 2}), kF32, {2, 0.5, 9}},
      {"maximum", OP(maximum), i32({1, 5, 3}), i32({4, 2, 3}), kI32, {4, 5, 3}},
      {"minimum", OP(minimum), i32({1, 5, 3}), i32({4, 2, 3}), kI32, {1, 2, 3}},
      {"maximum nan", OP(maximum), f32({NAN, 1}), f32({1, NAN}), kF32, {kNaN, kNaN}},
      {"minimum nan", OP(minimum), f32({NAN, 1, -0.5}), f32({1, NAN, 2}), kF32, {kNaN, kNaN, -0.5}},
      {"maximum promotes", OP(maximum), i32({1, 5}), f32({1.5, 2}), kF32, {1.5, 5}},
      {"logical_and",
       OP(logical_and),
       bools({true, true, false, false}),
       bools({true, false, true, false}),
       kB,
       {1, 0, 0, 0}},
      {"logical_or",
       OP(logical_or),
       bools({true, true, false, false}),
       bools({true, false, true, false}),
       kB,
       {1, 1, 1, 0}},
      {"logical_and i32", OP(logical_and), i32({0, 1, 2}), i32({3, 0, 4}), kB, {0, 0, 1}},
      {"logical_or f32", OP(logical_or), f32({0, 0.5, 0}), f32({0, 0, -1}), kB, {0, 1, 1}},
      {"equal", OP(equal), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {1, 0, 0}},
      {"not_equal", OP(not_equal), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {0, 1, 1}},
      {"less", OP(less), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {0, 1, 0}},
      {"less_equal", OP(less_equal), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {1, 1, 0}},
      {"greater", OP(greater), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {0, 0, 1}},
      {"greater_equal", OP(greater_equal), i32({1, 2, 3}), f32({1, 2.5, 2}), kB, {1, 0, 1}},
      {"equal nan", OP(equal), f32({NAN}), f32({NAN}), kB, {0}},
      {"less u32 vs i32", OP(less), arange(0, 1, 1, kU32), i32({-1}), kB, {0}},
      // Promotion between array dtypes.
      {"add i32 f16", OP(add), i32({1}), f32({0.5}).astype(kF16), kF16, {1.5}},
      {"add f16 bf16", OP(add), f32({1}).astype(kF16), f32({2}).astype(kBF16), kF32, {3}},
      {"add u32 i32", OP(add), arange(2, 3, 1, kU32), i32({-3}), kI64, {-1}},
      {"add bool bool", OP(add), bools({true}), bools({true}), kB, {1}},
      {"add f32 f64 scalar", OP(add), f32({0.5}), Array::scalar<double>(1.0), kF64, {1.5}},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(Is(c.op(c.a, c.b), c.dtype, c.a.shape(), c.want)) << c.name;
  }
#undef OP
}

TEST(OpsTest, Broadcasting) {
  Array m = iota({2, 3});
  EXPECT_TRUE(Is(m + i32({10, 20, 30}), kI32, {2, 3}, {10, 21, 32, 13, 24, 35}));
  EXPECT_TRUE(Is(m * i32({1, -1}, Shape{2, 1}), kI32, {2, 3}, {0, 1, 2, -3, -4, -5}));
  EXPECT_TRUE(Is(i32({1, 2, 3}, Shape{3, 1}) - i32({0, 10}, Shape{1, 2}), kI32, {3, 2},
                 {1, -9, 2, -8, 3, -7}));
  EXPECT_TRUE(Is(m - Array::scalar<int32_t>(1), kI32, {2, 3}, {-1, 0, 1, 2, 3, 4}));
  EXPECT_TRUE(Is(i32({5}) > m, kB, {2, 3}, {1, 1, 1, 1, 1, 0}));
  EXPECT_TRUE(Is(add(zeros({0, 3}), f32({1, 2, 3})), kF32, {0, 3}, {}));
  EXPECT_TRUE(Is(add(iota({2, 1, 3}), iota({4, 1})), kI32, {2, 4, 3},
                 {0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5, 3, 4, 5, 4, 5, 6, 5, 6, 7, 6, 7, 8}));
  EXPECT_THAT(
      [&] {
        add(m, i32({1, 2}));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("Incompatible shapes for broadcasting: shapes=[(2, 3), (2,)]")));
  EXPECT_THAT(
      [&] {
        (void)(iota({2, 3, 4}) < iota({3, 3}));
      },
      ThrowsMessage<ValueError>(HasSubstr("Incompatible shapes for broadcasting")));
}

// The operators reuse one scalar array per thread, device and dtype (scalar_operand): results
// stay independent of later operators, nested ones included, on several devices at once.
TEST(OpsTest, WeakScalarOperandsDoNotLeakBetweenResults) {
  const Array x = f32({1, 2});
  const Array twice = x * 2.0f;
  const Array thrice = x * 3.0f;
  const Array mixed = (2.0f * x + x * 5.0f) * 10.0f - 1.0f;
  EXPECT_TRUE(Is(twice, kF32, {2}, {2, 4}));
  EXPECT_TRUE(Is(thrice, kF32, {2}, {3, 6}));
  EXPECT_TRUE(Is(mixed, kF32, {2}, {69, 139}));
  EXPECT_TRUE(Is(clip(x, 1.5f, 1.75f), kF32, {2}, {1.5, 1.75}));
  EXPECT_TRUE(Is(where(x > 1.5f, 7.0f, x * 9.0f), kF32, {2}, {9, 7}));
  // The same value again reuses the array as it is; -0.0 is another value than 0.0.
  EXPECT_TRUE(Is(x * 2.0f, kF32, {2}, {2, 4}));
  EXPECT_FALSE(std::signbit((x * 0.0f).to_vector<float>()[0]));
  EXPECT_TRUE(std::signbit((x * -0.0f).to_vector<float>()[0]));
  // The same literal bits of another kind, or next to another dtype, are another scalar: int32
  // * 2 stays int32, int32 * 2.0f is float32.
  const Array i = arange(2);
  EXPECT_TRUE(Is(i * 2, kI32, {2}, {0, 2}));
  EXPECT_TRUE(Is(i * 2.0f, kF32, {2}, {0, 2}));
  EXPECT_TRUE(Is(i * 2, kI32, {2}, {0, 2}));
  EXPECT_TRUE(Is(x * 2, kF32, {2}, {2, 4}));
  auto body = shard_map(
      [](const Array& b) {
        const Array first = b * 2;
        const Array second = b * 3 + 1;
        return first * 100 + second;
      },
      make_mesh({4}, {"i"}), P("i"), P("i"));
  EXPECT_TRUE(Is(body(arange(8)), kI32, {8}, {1, 204, 407, 610, 813, 1016, 1219, 1422}));
}

// Views of more dimensions than the kernels keep inline take the heap path.
TEST(OpsTest, HighRankArraysComputeLikeLowRankOnes) {
  const Shape shape{2, 1, 2, 1, 2, 1, 2, 1, 2};
  const Array x = arange(32).reshape(shape);
  EXPECT_TRUE(array_equal((x * 2 + x).reshape({32}), arange(32) * 3));
  EXPECT_TRUE(array_equal(sum(x, {0, 2, 4}).reshape({4}), sum(arange(32).reshape({8, 4}), 0)));
  const Array t = transpose(x);
  EXPECT_EQ(t.shape(), (Shape{2, 1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_TRUE(array_equal(transpose(t), x));
}

TEST(OpsTest, WeakScalars) {
  Array x = i32({1, 2, 3});
  EXPECT_TRUE(Is(x + 2, kI32, {3}, {3, 4, 5}));
  EXPECT_TRUE(Is(2 + x, kI32, {3}, {3, 4, 5}));
  EXPECT_TRUE(Is(x * 0.5, kF32, {3}, {0.5, 1, 1.5}));
  EXPECT_TRUE(Is(0.5f * x, kF32, {3}, {0.5, 1, 1.5}));
  EXPECT_TRUE(Is(10 - x, kI32, {3}, {9, 8, 7}));
  EXPECT_TRUE(Is(x - 10, kI32, {3}, {-9, -8, -7}));
  EXPECT_TRUE(Is(x / 2, kF32, {3}, {0.5, 1, 1.5}));
  EXPECT_TRUE(Is(6 / x, kF32, {3}, {6, 3, 2}));
  EXPECT_TRUE(Is(x % 2, kI32, {3}, {1, 0, 1}));
  EXPECT_TRUE(Is(-7 % x, kI32, {3}, {0, 1, 2}));
  EXPECT_TRUE(Is(x + int64_t{4}, kI32, {3}, {5, 6, 7}));  // C++ int64 literal is still weak
  Array b = f32({1.5f, 2.5f}).astype(kBF16);
  EXPECT_TRUE(Is(b + 2.0, kBF16, {2}, {3.5, 4.5}));
  EXPECT_TRUE(Is(2.0 * b, kBF16, {2}, {3, 5}));
  EXPECT_TRUE(Is(f32({1.5f}).astype(kF16) * 2, kF16, {1}, {3}));
  EXPECT_TRUE(Is(f32({1.5f}) + 1.0, kF32, {1}, {2.5}));  // a double literal keeps float32
  EXPECT_TRUE(Is(Array::from_vector<double>({1.5}) + 1.0f, kF64, {1}, {2.5}));
  EXPECT_TRUE(Is(bools({true, false}) + 1, kI32, {2}, {2, 1}));
  EXPECT_TRUE(Is(bools({true, false}) * 1.5, kF32, {2}, {1.5, 0}));
  EXPECT_TRUE(Is(arange(2, kU32) + 1, kU32, {2}, {1, 2}));
  EXPECT_TRUE(Is(arange(2, kI64) * 3, kI64, {2}, {0, 3}));
  // An integer literal wraps into uint32 like in JAX (it does not saturate to 0).
  EXPECT_TRUE(Is(arange(3, kU32) + (-1), kU32, {3}, {4294967295.0, 0, 1}));
  EXPECT_TRUE(Is(-2 * arange(2, kU32), kU32, {2}, {0, 4294967294.0}));
  EXPECT_TRUE(Is(maximum(arange(2, kU32), -1), kU32, {2}, {4294967295.0, 4294967295.0}));
  EXPECT_TRUE(Is(x == 2, kB, {3}, {0, 1, 0}));
  EXPECT_TRUE(Is(x != 2, kB, {3}, {1, 0, 1}));
  EXPECT_TRUE(Is(x < 2.5, kB, {3}, {1, 1, 0}));
  EXPECT_TRUE(Is(x <= 2, kB, {3}, {1, 1, 0}));
  EXPECT_TRUE(Is(x > 1, kB, {3}, {0, 1, 1}));
  EXPECT_TRUE(Is(x >= 3, kB, {3}, {0, 0, 1}));
  EXPECT_TRUE(Is(2 < x, kB, {3}, {0, 0, 1}));
  EXPECT_TRUE(Is(maximum(x, 2), kI32, {3}, {2, 2, 3}));
  EXPECT_TRUE(Is(minimum(x, 2), kI32, {3}, {1, 2, 2}));
  EXPECT_TRUE(Is(minimum(x, 2.5), kF32, {3}, {1, 2, 2.5}));
  EXPECT_TRUE(Is(power(x, 2), kI32, {3}, {1, 4, 9}));
  EXPECT_TRUE(Is(power(i32({4, 9}), 0.5), kF32, {2}, {2, 3}));
  EXPECT_TRUE(Is(power(b, 2), kBF16, {2}, {2.25, 6.25}));
  EXPECT_TRUE(Is(weak_scalar(3, x), kI32, {}, {3}));
  EXPECT_TRUE(Is(weak_scalar(0.5, x), kF32, {}, {0.5}));
  EXPECT_TRUE(Is(weak_scalar(2, b), kBF16, {}, {2}));
  EXPECT_TRUE(Is(weak_scalar(1, bools({true})), kI32, {}, {1}));
  // A bool literal takes the array's dtype, as in JAX.
  EXPECT_TRUE(Is(bools({true, false}) + true, kB, {2}, {1, 1}));
  EXPECT_TRUE(Is(x + true, kI32, {3}, {2, 3, 4}));
  // An integer literal that does not fit int32 is an error, not a silent wrap.
  EXPECT_THROW(x + (int64_t{1} << 40), ValueError);
}

TEST(OpsTest, Where) {
  Array cond = bools({true, false, true});
  Array a = i32({1, 2, 3}), b = i32({-1, -2, -3});
  EXPECT_TRUE(Is(where(cond, a, b), kI32, {3}, {1, -2, 3}));
  EXPECT_TRUE(Is(where(cond, a, f32({0.5, 0.5, 0.5})), kF32, {3}, {1, 0.5, 3}));
  EXPECT_TRUE(Is(where(cond, a, 0), kI32, {3}, {1, 0, 3}));
  EXPECT_TRUE(Is(where(cond, a, 0.5), kF32, {3}, {1, 0.5, 3}));
  EXPECT_TRUE(Is(where(cond, -1, b), kI32, {3}, {-1, -2, -1}));
  EXPECT_TRUE(Is(where(cond, 2.5, b), kF32, {3}, {2.5, -2, 2.5}));
  // cond, a and b broadcast together.
  EXPECT_TRUE(
      Is(where(cond, iota({2, 3}), Array::scalar<int32_t>(9)), kI32, {2, 3}, {0, 9, 2, 3, 9, 5}));
  EXPECT_TRUE(Is(where(bools({true, false}).reshape({2, 1}), i32({1, 2, 3}), 0), kI32, {2, 3},
                 {1, 2, 3, 0, 0, 0}));
  EXPECT_TRUE(Is(where(iota({3}) > 0, a, b), kI32, {3}, {-1, 2, 3}));
  EXPECT_THAT(
      [&] {
        where(cond, iota({2, 2}), b);
      },
      ThrowsMessage<ValueError>(HasSubstr("Incompatible shapes for broadcasting")));
}

// ---- reductions ----

TEST(OpsTest, SumAxes) {
  Array x = iota({2, 3, 4});
  EXPECT_TRUE(Is(sum(x), kI32, {}, {276}));
  EXPECT_TRUE(Is(sum(x, {}, true), kI32, {1, 1, 1}, {276}));
  EXPECT_TRUE(Is(sum(x, 0), kI32, {3, 4}, {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
  EXPECT_TRUE(Is(sum(x, -1), kI32, {2, 3}, {6, 22, 38, 54, 70, 86}));
  EXPECT_TRUE(Is(sum(x, 2), kI32, {2, 3}, {6, 22, 38, 54, 70, 86}));
  EXPECT_TRUE(Is(sum(x, {0, 2}), kI32, {3}, {60, 92, 124}));
  EXPECT_TRUE(Is(sum(x, {-1, 0}), kI32, {3}, {60, 92, 124}));
  EXPECT_TRUE(Is(sum(x, {0, 1, 2}), kI32, {}, {276}));
  EXPECT_TRUE(Is(sum(x, 1, true), kI32, {2, 1, 4}, {12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_TRUE(Is(sum(x, {0, 2}, true), kI32, {1, 3, 1}, {60, 92, 124}));
  EXPECT_TRUE(Is(sum(iota({2, 2}), std::vector<int>{}), kI32, {2, 2}, {0, 1, 2, 3}));
  EXPECT_TRUE(Is(sum(Array::scalar<float>(2.5f)), kF32, {}, {2.5}));
  EXPECT_THAT(
      [&] {
        sum(x, {0, -3});
      },
      ThrowsMessage<ValueError>(HasSubstr("duplicate value in 'axis'")));
  EXPECT_THAT(
      [&] { sum(x, 3); },
      ThrowsMessage<ValueError>(HasSubstr("axis 3 is out of bounds for array of dimension 3")));
  EXPECT_THAT([&] { mean(x, -4); }, ThrowsMessage<ValueError>(HasSubstr("out of bounds")));
}

TEST(OpsTest, SumProdDTypes) {
  EXPECT_TRUE(Is(sum(bools({true, false, true, true})), kI32, {}, {3}));
  EXPECT_TRUE(Is(sum(arange(4, kU32)), kU32, {}, {6}));
  EXPECT_TRUE(Is(sum(arange(4, kI64)), kI64, {}, {6}));
  EXPECT_TRUE(Is(sum(f32({0.5, 1.5, -4}).astype(kF16)), kF16, {}, {-2}));
  EXPECT_TRUE(Is(sum(f32({0.25, 0.5})), kF32, {}, {0.75}));
  EXPECT_TRUE(Is(sum(zeros({0})), kF32, {}, {0}));
  EXPECT_TRUE(Is(sum(zeros({2, 0}), 1), kF32, {2}, {0, 0}));
  EXPECT_TRUE(Is(prod(i32({1, 2, 3, 4})), kI32, {}, {24}));
  EXPECT_TRUE(Is(prod(iota({2, 3}) + 1, 1), kI32, {2}, {6, 120}));
  EXPECT_TRUE(Is(prod(iota({2, 3}) + 1, 0, true), kI32, {1, 3}, {4, 10, 18}));
  EXPECT_TRUE(Is(prod(f32({0.5, -4})), kF32, {}, {-2}));
  EXPECT_TRUE(Is(prod(bools({true, true})), kI32, {}, {1}));
  EXPECT_TRUE(Is(prod(zeros({0}, kI32)), kI32, {}, {1}));
}

TEST(OpsTest, Mean) {
  Array x = iota({2, 3});
  EXPECT_TRUE(Is(mean(x), kF32, {}, {2.5}));
  EXPECT_TRUE(Is(mean(x, 1), kF32, {2}, {1, 4}));
  EXPECT_TRUE(Is(mean(x, 0), kF32, {3}, {1.5, 2.5, 3.5}));
  EXPECT_TRUE(Is(mean(x, -1, true), kF32, {2, 1}, {1, 4}));
  EXPECT_TRUE(Is(mean(iota({2, 3, 4}), {0, 2}), kF32, {3}, {7.5, 11.5, 15.5}));
  EXPECT_TRUE(Is(mean(bools({true, false, false, false})), kF32, {}, {0.25}));
  EXPECT_TRUE(Is(mean(arange(4, kI64)), kF64, {}, {1.5}));
  EXPECT_TRUE(Is(mean(f32({1, 2}).astype(kBF16)), kBF16, {}, {1.5}));
  EXPECT_TRUE(Is(mean(Array::from_vector<double>({0.5, 1})), kF64, {}, {0.75}));
  EXPECT_TRUE(Is(mean(zeros({0})), kF32, {}, {kNaN}));
}

TEST(OpsTest, MaxMinAnyAll) {
  Array x = i32({3, 1, 4, 1, 5, 9}, Shape{2, 3});
  EXPECT_TRUE(Is(max(x), kI32, {}, {9}));
  EXPECT_TRUE(Is(min(x), kI32, {}, {1}));
  EXPECT_TRUE(Is(max(x, 0), kI32, {3}, {3, 5, 9}));
  EXPECT_TRUE(Is(min(x, 1), kI32, {2}, {1, 1}));
  EXPECT_TRUE(Is(max(x, -1, true), kI32, {2, 1}, {4, 9}));
  EXPECT_TRUE(Is(min(x, {0, 1}, true), kI32, {1, 1}, {1}));
  EXPECT_TRUE(Is(max(f32({-INFINITY, -2})), kF32, {}, {-2}));
  EXPECT_TRUE(Is(max(f32({1, NAN, 3})), kF32, {}, {kNaN}));
  EXPECT_TRUE(Is(min(f32({1, NAN, 3})), kF32, {}, {kNaN}));
  EXPECT_TRUE(Is(max(bools({false, true})), kB, {}, {1}));
  EXPECT_TRUE(Is(min(arange(3, kU32)), kU32, {}, {0}));
  EXPECT_TRUE(Is(max(f32({0.5, -1.5}).astype(kF16)), kF16, {}, {0.5}));
  EXPECT_TRUE(Is(max(zeros({0, 3}), 1), kF32, {0}, {}));  // nothing is reduced over size 0
  EXPECT_THAT([] { max(zeros({0})); },
              ThrowsMessage<ValueError>(
                  HasSubstr("zero-size array to reduction operation max which has no identity")));
  EXPECT_THAT(
      [] {
        min(zeros({2, 0}), 1);
      },
      ThrowsMessage<ValueError>(HasSubstr("reduction operation min")));

  Array b = bools({false, true, false, false, false, false});
  EXPECT_TRUE(Is(any(b), kB, {}, {1}));
  EXPECT_TRUE(Is(all(b), kB, {}, {0}));
  EXPECT_TRUE(Is(any(b.reshape({2, 3}), 1), kB, {2}, {1, 0}));
  EXPECT_TRUE(Is(all(!b.reshape({2, 3}), 1, true), kB, {2, 1}, {0, 1}));
  EXPECT_TRUE(Is(any(iota({2, 3}), 1), kB, {2}, {1, 1}));
  EXPECT_TRUE(Is(all(iota({2, 3}), 1), kB, {2}, {0, 1}));
  EXPECT_TRUE(Is(all(f32({NAN, 0.5})), kB, {}, {1}));
  EXPECT_TRUE(Is(any(zeros({0})), kB, {}, {0}));
  EXPECT_TRUE(Is(all(zeros({0})), kB, {}, {1}));
}

TEST(OpsTest, ArgMaxArgMin) {
  EXPECT_TRUE(Is(argmax(i32({1, 3, 3, 2})), kI32, {}, {1}));  // first index on ties
  EXPECT_TRUE(Is(argmin(i32({2, 1, 1, 5})), kI32, {}, {1}));
  Array m = i32({1, 5, 5, 7, 0, 7}, Shape{2, 3});
  EXPECT_TRUE(Is(argmax(m), kI32, {}, {3}));
  EXPECT_TRUE(Is(argmin(m), kI32, {}, {4}));
  EXPECT_TRUE(Is(argmax(m, 1), kI32, {2}, {1, 0}));
  EXPECT_TRUE(Is(argmax(m, 0), kI32, {3}, {1, 0, 1}));
  EXPECT_TRUE(Is(argmin(m, 1), kI32, {2}, {0, 1}));
  EXPECT_TRUE(Is(argmin(m, -2), kI32, {3}, {0, 1, 0}));
  EXPECT_TRUE(Is(argmax(m, 1, true), kI32, {2, 1}, {1, 0}));
  EXPECT_TRUE(Is(argmax(m, std::nullopt, true), kI32, {1, 1}, {3}));
  EXPECT_TRUE(Is(argmax(f32({1, NAN, 3, NAN})), kI32, {}, {1}));
  EXPECT_TRUE(Is(argmin(f32({1, -0.5, NAN})), kI32, {}, {2}));
  EXPECT_TRUE(Is(argmax(bools({false, true, true})), kI32, {}, {1}));
  EXPECT_TRUE(Is(argmin(iota({2, 3, 4}) * -1, 2), kI32, {2, 3}, {3, 3, 3, 3, 3, 3}));
  EXPECT_TRUE(Is(argmax(zeros({0, 3}), 1), kI32, {0}, {}));
  EXPECT_THAT([] { argmax(zeros({0})); },
              ThrowsMessage<ValueError>(HasSubstr("attempt to get argmax of an empty sequence")));
  EXPECT_THAT(
      [] {
        argmin(zeros({2, 0}), 1);
      },
      ThrowsMessage<ValueError>(HasSubstr("attempt to get argmin of an empty sequence")));
  EXPECT_THROW(argmax(m, 2), ValueError);
}

// ---- linear algebra ----

TEST(OpsTest, Matmul) {
  Array a = iota({2, 3}), b = iota({3, 2});
  EXPECT_TRUE(Is(matmul(a, b), kI32, {2, 2}, {10, 13, 28, 40}));
  EXPECT_TRUE(Is(matmul(i32({1, 2, 3}), i32({4, 5, 6})), kI32, {}, {32}));
  EXPECT_TRUE(Is(matmul(a, i32({1, 1, 1})), kI32, {2}, {3, 12}));
  EXPECT_TRUE(Is(matmul(i32({1, 1}), a), kI32, {3}, {3, 5, 7}));
  EXPECT_TRUE(Is(matmul(a, f32({0.5, 0.5, 0.5})), kF32, {2}, {1.5, 6}));
  EXPECT_TRUE(Is(matmul(a.astype(kF16), b.astype(kF16)), kF16, {2, 2}, {10, 13, 28, 40}));
  EXPECT_TRUE(Is(matmul(iota({2, 2, 3}), b), kI32, {2, 2, 2}, {10, 13, 28, 40, 46, 67, 64, 94}));
  EXPECT_TRUE(Is(matmul(zeros({2, 0}), zeros({0, 3})), kF32, {2, 3}, {0, 0, 0, 0, 0, 0}));
  // Batch dimensions broadcast: out[i, j] = A[i, 0] @ B[j].
  Array A = iota({2, 1, 2, 3}), B = iota({3, 3, 2}) - 5;
  Array out = matmul(A, B);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 2, 2}));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(array_equal(out[i][j], matmul(A[i][0], B[j])));
  }
  Array bt = matmul(B, iota({2, 1}));  // (3,3,2) @ (2,1)
  ASSERT_EQ(bt.shape(), (Shape{3, 3, 1}));
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(array_equal(bt[j], matmul(B[j], iota({2, 1}))));
  // A 1-D operand next to a batch.
  Array v = i32({1, -1, 2});
  Array vb = matmul(v, B);
  ASSERT_EQ(vb.shape(), (Shape{3, 2}));
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(array_equal(vb[j], matmul(v, B[j])));
  Array bv = matmul(iota({2, 2, 3}), v);
  EXPECT_TRUE(Is(bv, kI32, {2, 2}, {3, 9, 15, 21}));

  EXPECT_THAT([&] { matmul(a, a); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "dot_general requires contracting dimensions to have the same shape, got (3,) "
                  "and (2,)")));
  EXPECT_THAT(
      [&] {
        matmul(i32({1, 2}), i32({1, 2, 3}));
      },
      ThrowsMessage<ValueError>(HasSubstr("dot_general requires contracting dimensions")));
  EXPECT_THROW(matmul(Array::scalar<int32_t>(2), a), ValueError);
  EXPECT_THAT(
      [&] {
        matmul(iota({2, 2, 2}), iota({3, 2, 2}));
      },
      ThrowsMessage<ValueError>(HasSubstr("Incompatible shapes for broadcasting")));
}

TEST(OpsTest, FloatMatmulOfViewsMatchesTheIntegerProduct) {
  // Small integers keep every float sum exact, so the BLAS path (transposed views read in place,
  // sliced and reversed ones packed, batches broadcast) must give the integer kernel's values.
  Array x = iota({6, 8}) - 20, y = iota({8, 10}) % 7 - 3;
  const auto check = [](const Array& a, const Array& b) {
    const Array exact = matmul(a, b);
    for (const DType dt : {kF32, kF64}) {
      EXPECT_TRUE(array_equal(matmul(a.astype(dt), b.astype(dt)), exact.astype(dt)))
          << dtype_name(dt) << ": " << a.shape().size() << "-D @ " << b.shape().size() << "-D";
    }
  };
  check(x, y);
  check(transpose(y), transpose(x));
  check(slice(x, {0, 0}, {6, 8}, {2, 1}), slice(y, {7, 0}, {-9, 10}, {-1, 3}));
  check(iota({3, 6, 8}) % 5, y);       // b shared by the batch
  check(x, iota({4, 8, 10}) % 9 - 4);  // a shared by the batch
  check(swapaxes(iota({3, 8, 6}), 1, 2), iota({3, 8, 10}) % 3);
}

TEST(OpsTest, Dot) {
  Array a = iota({2, 3}), b = iota({3, 2});
  EXPECT_TRUE(Is(dot(a, b), kI32, {2, 2}, {10, 13, 28, 40}));
  EXPECT_TRUE(Is(dot(i32({1, 2, 3}), i32({4, 5, 6})), kI32, {}, {32}));
  EXPECT_TRUE(Is(dot(a, i32({1, 0, -1})), kI32, {2}, {-2, -2}));
  EXPECT_TRUE(Is(dot(i32({1, 2}), a.astype(kF32)), kF32, {3}, {6, 9, 12}));
  EXPECT_THAT([&] { dot(a, a); },
              ThrowsMessage<ValueError>(HasSubstr("dot_general requires contracting dimensions")));
  EXPECT_THROW(dot(iota({1, 2, 3}), b), NotImplementedError);
}

// ---- shape manipulation ----

TEST(OpsTest, ReshapeTransposeAstype) {
  Array x = iota({2, 3});
  EXPECT_TRUE(Is(reshape(x, {3, -1}), kI32, {3, 2}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(Is(transpose(x), kI32, {3, 2}, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(Is(transpose(x, {1, 0}), kI32, {3, 2}, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(Is(astype(x, kF16), kF16, {2, 3}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(Is(astype(f32({-1.5, 3e9, NAN}), kI32), kI32, {3}, {-1, INT32_MAX, 0}));
  EXPECT_TRUE(Is(astype(i32({-1}), kU32), kU32, {1}, {4294967295.0}));
  EXPECT_THAT([&] { reshape(x, {5}); },
              ThrowsMessage<ValueError>(HasSubstr("cannot reshape array of shape (2, 3)")));
}

TEST(OpsTest, SwapaxesMoveaxis) {
  Array x = iota({2, 3, 4});
  Array s = swapaxes(x, 0, 2);
  EXPECT_EQ(s.shape(), (Shape{4, 3, 2}));
  EXPECT_TRUE(array_equal(s, transpose(x, {2, 1, 0})));
  EXPECT_TRUE(array_equal(swapaxes(x, -1, 1), transpose(x, {0, 2, 1})));
  EXPECT_TRUE(array_equal(swapaxes(x, 1, 1), x));
  EXPECT_TRUE(array_equal(moveaxis(x, 0, -1), transpose(x, {1, 2, 0})));
  EXPECT_TRUE(array_equal(moveaxis(x, -1, 0), transpose(x, {2, 0, 1})));
  EXPECT_TRUE(array_equal(moveaxis(x, 0, 1), transpose(x, {1, 0, 2})));
  EXPECT_TRUE(array_equal(moveaxis(x, 1, 1), x));
  EXPECT_TRUE(Is(moveaxis(iota({2, 3}), 1, 0), kI32, {3, 2}, {0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(swapaxes(x, 0, 3), ValueError);
  EXPECT_THAT([&] { moveaxis(x, -4, 0); }, ThrowsMessage<ValueError>(HasSubstr("out of bounds")));
}

TEST(OpsTest, BroadcastTo) {
  EXPECT_TRUE(Is(broadcast_to(arange(3), {2, 3}), kI32, {2, 3}, {0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(Is(broadcast_to(i32({1, 2}, Shape{2, 1}), {2, 3}), kI32, {2, 3}, {1, 1, 1, 2, 2, 2}));
  EXPECT_TRUE(
      Is(broadcast_to(Array::scalar<float>(1.5f), {2, 2}), kF32, {2, 2}, {1.5, 1.5, 1.5, 1.5}));
  EXPECT_TRUE(Is(broadcast_to(arange(2), {2}), kI32, {2}, {0, 1}));
  EXPECT_TRUE(Is(broadcast_to(arange(1), {0}), kI32, {0}, {}));
  EXPECT_THAT(
      [] {
        broadcast_to(iota({2, 3}), {3});
      },
      ThrowsMessage<ValueError>(HasSubstr("Incompatible shapes for broadcasting")));
  EXPECT_THAT([] { broadcast_to(arange(3), {4}); },
              ThrowsMessage<ValueError>(HasSubstr("Incompatible shapes for broadcasting")));
  EXPECT_THROW(broadcast_to(arange(3), {3, 1}), ValueError);
}

TEST(OpsTest, Concatenate) {
  Array a = iota({2, 2});
  EXPECT_TRUE(Is(concatenate({a, i32({10, 11}, Shape{1, 2})}), kI32, {3, 2}, {0, 1, 2, 3, 10, 11}));
  EXPECT_TRUE(
      Is(concatenate({a, i32({10, 11}, Shape{2, 1})}, 1), kI32, {2, 3}, {0, 1, 10, 2, 3, 11}));
  EXPECT_TRUE(
      Is(concatenate({a, a, zeros({2, 0}, kI32)}, -1), kI32, {2, 4}, {0, 1, 0, 1, 2, 3, 2, 3}));
  EXPECT_TRUE(Is(concatenate({arange(2), f32({0.5})}), kF32, {3}, {0, 1, 0.5}));
  EXPECT_TRUE(Is(concatenate({bools({true}), arange(1, kU32)}), kU32, {2}, {1, 0}));
  EXPECT_TRUE(Is(concatenate({arange(2)}), kI32, {2}, {0, 1}));
  EXPECT_THAT(
      [&] {
        concatenate({a, arange(2)});
      },
      ThrowsMessage<ValueError>(HasSubstr("Cannot concatenate arrays with shapes that "
                                          "differ in dimensions other than the one")));
  EXPECT_THAT(
      [&] {
        concatenate({a, iota({2, 3})}, 0);
      },
      ThrowsMessage<ValueError>(HasSubstr("Cannot concatenate arrays")));
  EXPECT_THAT([] { concatenate({}); },
              ThrowsMessage<ValueError>(HasSubstr("Need at least one array to concatenate")));
  EXPECT_THAT(
      [] { concatenate({Array::scalar<int32_t>(1)}); },
      ThrowsMessage<ValueError>(HasSubstr("Zero-dimensional arrays cannot be concatenated")));
  EXPECT_THROW(concatenate({a, a}, 2), ValueError);
}

TEST(OpsTest, Stack) {
  Array a = arange(3), b = arange(3) + 10;
  EXPECT_TRUE(Is(stack({a, b}), kI32, {2, 3}, {0, 1, 2, 10, 11, 12}));
  EXPECT_TRUE(Is(stack({a, b}, 1), kI32, {3, 2}, {0, 10, 1, 11, 2, 12}));
  EXPECT_TRUE(Is(stack({a, b}, -1), kI32, {3, 2}, {0, 10, 1, 11, 2, 12}));
  EXPECT_TRUE(Is(stack({a, b}, -2), kI32, {2, 3}, {0, 1, 2, 10, 11, 12}));
  EXPECT_TRUE(Is(stack({Array::scalar<float>(1), Array::scalar<float>(2)}), kF32, {2}, {1, 2}));
  EXPECT_TRUE(Is(stack({a, a.astype(kF32) * 0.5}), kF32, {2, 3}, {0, 1, 2, 0, 0.5, 1}));
  EXPECT_THAT(
      [&] {
        stack({a, arange(4)});
      },
      ThrowsMessage<ValueError>(HasSubstr("All input arrays must have the same shape")));
  EXPECT_THAT([] { stack({}); }, ThrowsMessage<ValueError>(HasSubstr("Need at least one array")));
  EXPECT_THROW(stack({a, b}, 2), ValueError);
}

TEST(OpsTest, SqueezeExpandDims) {
  Array x = i32({1, 2}, Shape{1, 2, 1});
  EXPECT_TRUE(Is(squeeze(x), kI32, {2}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(x, std::vector<int>{0}), kI32, {2, 1}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(x, 2), kI32, {1, 2}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(x, std::vector<int>{-1}), kI32, {1, 2}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(x, std::vector<int>{2, 0}), kI32, {2}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(x, std::vector<int>{}), kI32, {1, 2, 1}, {1, 2}));
  EXPECT_TRUE(Is(squeeze(i32({5}, Shape{1, 1})), kI32, {}, {5}));
  EXPECT_TRUE(Is(squeeze(arange(3)), kI32, {3}, {0, 1, 2}));
  EXPECT_THAT([] { squeeze(arange(2), std::vector<int>{0}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("cannot select an axis to squeeze out which has size not equal to "
                            "one, got shape=(2,) and dimensions=(0,)")));
  EXPECT_THAT(
      [] {
        squeeze(iota({2, 1, 3}), std::vector<int>{-1, 1});
      },
      ThrowsMessage<ValueError>(HasSubstr("got shape=(2, 1, 3) and dimensions=(1, 2)")));
  EXPECT_THROW(squeeze(x, std::vector<int>{3}), ValueError);

  Array v = arange(3);
  EXPECT_TRUE(Is(expand_dims(v, 0), kI32, {1, 3}, {0, 1, 2}));
  EXPECT_TRUE(Is(expand_dims(v, 1), kI32, {3, 1}, {0, 1, 2}));
  EXPECT_TRUE(Is(expand_dims(v, -1), kI32, {3, 1}, {0, 1, 2}));
  EXPECT_TRUE(Is(expand_dims(v, -2), kI32, {1, 3}, {0, 1, 2}));
  EXPECT_TRUE(Is(expand_dims(Array::scalar<int32_t>(4), 0), kI32, {1}, {4}));
  EXPECT_EQ(expand_dims(iota({2, 3}), 1).shape(), (Shape{2, 1, 3}));
  EXPECT_THROW(expand_dims(v, 2), ValueError);
  EXPECT_THROW(expand_dims(v, -3), ValueError);
}

TEST(OpsTest, Slice) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Array a = arange(10);
  EXPECT_TRUE(Is(slice(a, {2}, {7}), kI32, {5}, {2, 3, 4, 5, 6}));
  EXPECT_TRUE(Is(slice(a, {1}, {8}, {3}), kI32, {3}, {1, 4, 7}));
  EXPECT_TRUE(Is(slice(a, {-3}, {10}), kI32, {3}, {7, 8, 9}));
  EXPECT_TRUE(Is(slice(a, {0}, {-8}), kI32, {2}, {0, 1}));
  EXPECT_TRUE(Is(slice(a, {-100}, {100}, {4}), kI32, {3}, {0, 4, 8}));
  EXPECT_TRUE(Is(slice(a, {8}, {2}, {-2}), kI32, {3}, {8, 6, 4}));
  EXPECT_TRUE(Is(slice(a, {-1}, {-11}, {-3}), kI32, {4}, {9, 6, 3, 0}));  // a[::-3]
  EXPECT_TRUE(Is(slice(a, {kMax}, {kMin}, {-4}), kI32, {3}, {9, 5, 1}));
  EXPECT_TRUE(Is(slice(a, {100}, {7}, {-1}), kI32, {2}, {9, 8}));
  EXPECT_TRUE(Is(slice(a, {5}, {2}), kI32, {0}, {}));
  EXPECT_TRUE(Is(slice(a, {2}, {5}, {-1}), kI32, {0}, {}));
  EXPECT_TRUE(Is(slice(a, {-1}, {-1}, {-1}), kI32, {0}, {}));
  Array m = iota({3, 4});
  EXPECT_TRUE(Is(slice(m, {1, 1}, {3, 4}, {1, 2}), kI32, {2, 2}, {5, 7, 9, 11}));
  EXPECT_TRUE(Is(slice(m, {1}, {2}), kI32, {1, 4}, {4, 5, 6, 7}));  // trailing dims whole
  EXPECT_TRUE(Is(slice(m, {-1, 0}, {-4, 4}, {-1, 3}), kI32, {3, 2}, {8, 11, 4, 7, 0, 3}));
  EXPECT_TRUE(Is(slice(m, {0, -1}, {3, kMin}, {2, -1}), kI32, {2, 4}, {3, 2, 1, 0, 11, 10, 9, 8}));
  EXPECT_TRUE(Is(slice(m.astype(kF64), {2, 3}, {3, 4}), kF64, {1, 1}, {11}));
  EXPECT_THAT([&] { slice(a, {0}, {5}, {0}); },
              ThrowsMessage<ValueError>(HasSubstr("slice step cannot be zero")));
  EXPECT_THROW(slice(a, {0, 0}, {1, 1}), ValueError);
  EXPECT_THROW(slice(m, {0, 0}, {1}), ValueError);
  EXPECT_THROW(slice(m, {0}, {1}, {1, 1}), ValueError);
}

TEST(OpsTest, Take) {
  Array m = iota({3, 4});
  EXPECT_TRUE(Is(take(m, 1, 0), kI32, {4}, {4, 5, 6, 7}));
  EXPECT_TRUE(Is(take(m, -1, 0), kI32, {4}, {8, 9, 10, 11}));
  EXPECT_TRUE(Is(take(m, -1, 1), kI32, {3}, {3, 7, 11}));
  EXPECT_TRUE(Is(take(m, 2, -1), kI32, {3}, {2, 6, 10}));
  EXPECT_TRUE(Is(take(iota({2, 3, 2}), 1, 1), kI32, {2, 2}, {2, 3, 8, 9}));
  EXPECT_TRUE(Is(take(arange(3), 2, 0), kI32, {}, {2}));
  EXPECT_THAT(
      [&] { take(m, 4, 1); },
      ThrowsMessage<IndexError>(HasSubstr("index 4 is out of bounds for axis 1 with size 4")));
  EXPECT_THROW(take(m, -4, 0), IndexError);
  EXPECT_THROW(take(m, 0, 2), ValueError);
}

TEST(OpsTest, CopyAndArrayEqual) {
  Array m = iota({2, 3});
  Array c = copy(m);
  EXPECT_TRUE(Is(c, kI32, {2, 3}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(Is(copy(m[1]), kI32, {3}, {3, 4, 5}));
  EXPECT_TRUE(Is(copy(bools({true})), kB, {1}, {1}));
  EXPECT_TRUE(array_equal(c, m));
  EXPECT_TRUE(array_equal(m, iota({2, 3})));
  EXPECT_FALSE(array_equal(m, iota({2, 3}) + 1));
  EXPECT_FALSE(array_equal(m, arange(6)));                  // shape differs
  EXPECT_FALSE(array_equal(m, iota({2, 3}).astype(kI64)));  // dtype differs
  EXPECT_TRUE(array_equal(zeros({0}), zeros({0})));
  EXPECT_FALSE(array_equal(zeros({0}), zeros({0}, kI32)));
  EXPECT_TRUE(array_equal(f32({NAN, 1}), f32({NAN, 1})));
  EXPECT_TRUE(array_equal(bools({true, false}), arange(2) < 1));
  EXPECT_TRUE(array_equal(Array::scalar<float>(1), ones({})));
}

// ---- int8, int16, uint8, uint16, uint64 (values from JAX 0.10.2) ----

// Equal dtype, shape and elements, printing both otherwise.
#define EXPECT_SAME(actual, expected) \
  EXPECT_TRUE(array_equal((actual), (expected))) << (actual).str() << " vs " << (expected).str()

TEST(OpsTest, NarrowIntegersWrapLikeJax) {
  auto i8 = [](std::vector<int8_t> v) { return Array::from_vector(v); };
  auto u8 = [](std::vector<uint8_t> v) { return Array::from_vector(v); };
  auto u16 = [](std::vector<uint16_t> v) { return Array::from_vector(v); };
  EXPECT_SAME(i8({100, -128, 127}) + i8({100, -1, 1}), i8({-56, 127, -128}));
  EXPECT_SAME(u8({200, 255, 16}) * u8({200, 255, 16}), u8({64, 1, 0}));
  // 65535 * 65535 overflows C++'s int, which 16-bit operands promote to: computed unsigned.
  EXPECT_SAME(u16({65535, 300}) * u16({65535, 300}), u16({1, 24464}));
  EXPECT_SAME(-Array::from_vector<int16_t>({-32768, 5}), Array::from_vector<int16_t>({-32768, -5}));
  EXPECT_SAME(u8({1, 250}) + 300, u8({45, 38}));  // the literal wraps into uint8
  EXPECT_SAME(i8({0, 1}) + 128, i8({-128, -127}));
  EXPECT_SAME(power(u8({3, 2}), u8({5, 9})), u8({243, 0}));
  EXPECT_SAME(abs(i8({-128, -3})), i8({-128, 3}));
  EXPECT_SAME(floor_divide(i8({7, -7}), i8({2, 2})), i8({3, -4}));
  EXPECT_SAME(Array::from_vector<int16_t>({7, -7}) % Array::from_vector<int16_t>({3, 3}),
              Array::from_vector<int16_t>({1, 2}));
  EXPECT_SAME(maximum(u8({1, 200}), u8({3, 100})), u8({3, 200}));
  Array u64 = Array::from_vector<uint64_t>({18446744073709551615u});
  EXPECT_SAME(u64 + Array::from_vector<uint64_t>({2}), Array::from_vector<uint64_t>({1}));
}

TEST(OpsTest, NarrowIntegerReductionsAndConversions) {
  Array s = sum(Array::from_vector<int8_t>({100, 100, -50}));
  EXPECT_EQ(s.dtype(), int32);  // jnp.sum widens to the default int (int64 with x64 on)
  EXPECT_EQ(s.item<int32_t>(), 150);
  EXPECT_SAME(sum(Array::from_vector<uint16_t>({65535, 65535})), Array::scalar<uint32_t>(131070));
  EXPECT_SAME(prod(Array::from_vector<uint8_t>({200, 200})), Array::scalar<uint32_t>(40000));
  EXPECT_SAME(mean(Array::from_vector<int8_t>({1, 2})), Array::scalar<float>(1.5f));
  EXPECT_SAME(max(Array::from_vector<uint8_t>({3, 250})), Array::scalar<uint8_t>(250));
  EXPECT_EQ(sin(Array::from_vector<int16_t>({1})).dtype(), float32);
  EXPECT_EQ(divide(Array::from_vector<int8_t>({7}), Array::from_vector<int8_t>({2})).item<float>(),
            3.5f);
  Array f = Array::from_vector<float>({300.7f, -300.2f, std::nanf(""), -1.9f});
  EXPECT_SAME(f.astype(int8), Array::from_vector<int8_t>({127, -128, 0, -1}));  // saturates
  EXPECT_SAME(Array::from_vector<float>({300.7f, -3.2f, 255.9f, 1.9f}).astype(uint8),
              Array::from_vector<uint8_t>({255, 0, 255, 1}));
  EXPECT_SAME(Array::from_vector<double>({1e20, -1.0, 3.5}).astype(uint64),
              Array::from_vector<uint64_t>({18446744073709551615u, 0, 3}));
  EXPECT_SAME(Array::from_vector<int32_t>({300, -129}).astype(int8),  // int -> int wraps
              Array::from_vector<int8_t>({44, 127}));
  Array mixed = Array::from_vector<uint64_t>({3}) + Array::from_vector<int64_t>({-1});
  EXPECT_SAME(mixed, Array::from_vector<double>({2.0}));  // uint64 + int64 -> float64
  EXPECT_EQ((Array::from_vector<uint8_t>({1}) + Array::from_vector<int8_t>({1})).dtype(), int16);
}

TEST(OpsTest, NarrowIntegersPrint) {
  EXPECT_EQ(Array::from_vector<int8_t>({-128, 127}).str(), "[-128, 127]");
  EXPECT_EQ(Array::from_vector<uint64_t>({18446744073709551615u, 1}).str(),
            "[18446744073709551615, 1]");  // past int64's range
  EXPECT_EQ(Array::from_vector<uint16_t>({65535}).str(), "[65535]");
}

// ---- the rest of jnp's elementwise ops (values from JAX 0.10.2) ----

TEST(OpsTest, ClassificationCbrtReciprocalSigmoid) {
  const float inf = std::numeric_limits<float>::infinity();
  Array f = Array::from_vector<float>({1.0f, -8.0f, 0.0f, inf, std::nanf("")});
  EXPECT_SAME(cbrt(f), Array::from_vector<float>({1.0f, -2.0f, 0.0f, inf, std::nanf("")}));
  EXPECT_SAME(isnan(f), Array::from_vector<bool>({false, false, false, false, true}));
  EXPECT_SAME(isinf(f), Array::from_vector<bool>({false, false, false, true, false}));
  EXPECT_SAME(isfinite(f), Array::from_vector<bool>({true, true, true, false, false}));
  EXPECT_SAME(isnan(arange(2)), Array::from_vector<bool>({false, false}));
  EXPECT_SAME(isfinite(arange(2)), Array::from_vector<bool>({true, true}));
  EXPECT_SAME(reciprocal(Array::from_vector<float>({2.0f, -4.0f, 0.0f})),
              Array::from_vector<float>({0.5f, -0.25f, inf}));
  EXPECT_SAME(reciprocal(Array::from_vector<int32_t>({2, -1, 0})),
              Array::from_vector<float>({0.5f, -1.0f, inf}));
  // The same bits as jax.nn.sigmoid (XLA's logistic) for these inputs.
  Array s = sigmoid(Array::from_vector<float>({0.5f, -3.0f, 7.0f, 1e-3f}));
  std::vector<float> got = s.to_vector<float>();
  const uint32_t want[] = {1059019135u, 1027752354u, 1065337932u, 1056968802u};
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), want[i]);
  EXPECT_THAT([] { sigmoid(arange(2)); },
              ThrowsMessage<TypeError>(HasSubstr("logistic does not accept dtype int32")));
}

TEST(OpsTest, Arctan2HypotLogaddexp) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_SAME(arctan2(Array::from_vector<float>({1.0f, -1.0f, 0.0f, 0.0f}),
                      Array::from_vector<float>({1.0f, -1.0f, -1.0f, 1.0f})),
              Array::from_vector<float>(
                  {0.7853981852531433f, -2.356194496154785f, 3.1415927410125732f, 0.0f}));
  EXPECT_SAME(arctan2(arange(2, 3), arange(3, 4)), Array::from_vector<float>({0.588002622127533f}));
  EXPECT_SAME(hypot(Array::from_vector<float>({3.0f, 0.0f, inf, 1e30f, -5.0f}),
                    Array::from_vector<float>({4.0f, 0.0f, std::nanf(""), 1e30f, 12.0f})),
              // JAX gives 12.999999 for (-5, 12): XLA:CPU divides by multiplying with the
              // reciprocal; spmd divides correctly rounded, and gets the exact 13.
              Array::from_vector<float>({5.0f, 0.0f, inf, 1.4142135130433894e30f, 13.0f}));
  EXPECT_SAME(
      logaddexp(Array::from_vector<float>({0.0f, inf, -inf, 1.0f, 100.0f}),
                Array::from_vector<float>({0.0f, inf, -inf, 2.0f, 1.0f})),
      Array::from_vector<float>({0.6931471824645996f, inf, -inf, 2.3132617473602295f, 100.0f}));
}

TEST(OpsTest, BitwiseAndLogicalXor) {
  EXPECT_SAME(Array::from_vector<int32_t>({12, -1}) & Array::from_vector<int32_t>({10, 7}),
              Array::from_vector<int32_t>({8, 7}));
  EXPECT_SAME(Array::from_vector<uint8_t>({12, 128}) | Array::from_vector<uint8_t>({3, 1}),
              Array::from_vector<uint8_t>({15, 129}));
  EXPECT_SAME(Array::from_vector<bool>({true, false}) ^ Array::from_vector<bool>({true, true}),
              Array::from_vector<bool>({false, true}));
  EXPECT_SAME(~Array::from_vector<int8_t>({0, 5, -128}), Array::from_vector<int8_t>({-1, -6, 127}));
  EXPECT_SAME(~Array::from_vector<uint16_t>({0, 5}), Array::from_vector<uint16_t>({65535, 65530}));
  EXPECT_SAME(~Array::from_vector<bool>({true, false}), Array::from_vector<bool>({false, true}));
  EXPECT_SAME(
      logical_xor(Array::from_vector<int32_t>({1, 0, 2}), Array::from_vector<int32_t>({1, 1, 0})),
      Array::from_vector<bool>({false, true, true}));
  EXPECT_SAME(logical_not(Array::from_vector<float>({0.0f, 2.0f})),
              Array::from_vector<bool>({true, false}));
  EXPECT_THAT([] { bitwise_and(Array::from_vector<float>({1.0f}), arange(1)); },
              ThrowsMessage<TypeError>(HasSubstr(
                  "and does not accept dtype float32 at position 0. Accepted dtypes at position 0 "
                  "are subtypes of integer, bool.")));
}
}  // namespace
}  // namespace spmd
