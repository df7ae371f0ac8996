// SPDX-License-Identifier: Apache-2.0
// complex64 and complex128: conversions, promotion next to the other types, the elementwise ops,
// reductions, matmul and collectives, against values JAX 0.10.2 computes for the same inputs
// (jnp on CPU, complex64), and JAX's errors for the ops complex numbers do not have.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "spmd/spmd.h"

namespace spmd {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Array c64s(const std::vector<c64>& v) { return Array::from_vector(v); }
Array f32s(const std::vector<float>& v) { return Array::from_vector(v); }

// The inputs of the JAX runs: c = [1+2j, 3-1j, -2+0.5j], r = [2, 3, 1] (complex64).
Array c_values() { return c64s({{1, 2}, {3, -1}, {-2, 0.5}}); }
Array r_values() { return c64s({2, 3, 1}); }

// Each part within `tolerance` relative to the larger of |expected| and 1 (JAX's values are
// printed to float32 precision; the library's functions may differ in the last place).
void expect_close(const Array& x, const std::vector<c64>& expected, float tolerance = 2e-6f) {
  ASSERT_EQ(x.dtype(), complex64);
  const std::vector<c64> got = x.to_vector<c64>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float scale = std::max(1.0f, std::abs(expected[i]));
    EXPECT_NEAR(got[i].real(), expected[i].real(), tolerance * scale) << "element " << i;
    EXPECT_NEAR(got[i].imag(), expected[i].imag(), tolerance * scale) << "element " << i;
  }
}

void expect_exact(const Array& x, const std::vector<c64>& expected) {
  ASSERT_EQ(x.dtype(), complex64);
  EXPECT_EQ(x.to_vector<c64>(), expected);
}

TEST(ComplexTest, ConvertsToAndFromTheRealTypes) {
  // Real to complex: zero imaginary part; complex to real: the real part (jnp's astype); to bool:
  // z != 0.
  expect_exact(f32s({1.5f, -2}).astype(complex64), {{1.5f, 0}, {-2, 0}});
  expect_exact(arange(3).astype(complex64), {0, 1, 2});
  EXPECT_EQ(c_values().astype(float32).to_vector<float>(), (std::vector<float>{1, 3, -2}));
  EXPECT_EQ(c_values().astype(int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, -2}));
  EXPECT_EQ(c64s({0, {0, 1}, 1}).astype(bool_).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
  const Array wide = c_values().astype(complex128);
  EXPECT_EQ(wide.to_vector<c128>()[2], c128(-2, 0.5));
  expect_exact(wide.astype(complex64), c_values().to_vector<c64>());
  expect_exact(zeros({2}, complex64), {0, 0});
  expect_exact(full({1}, 2.5, complex64), {2.5f});
}

TEST(ComplexTest, PromotesLikeJax) {
  // jnp.promote_types with x64: ints and float32 join complex64, float64 lifts it to complex128.
  EXPECT_EQ((arange(3) + c_values()).dtype(), complex64);
  EXPECT_EQ((f32s({1, 2, 3}) * c_values()).dtype(), complex64);
  EXPECT_EQ((arange(3).astype(float64) + c_values()).dtype(), complex128);
  EXPECT_EQ((c_values().astype(complex128) + c_values()).dtype(), complex128);
  // A weak scalar keeps the complex type: c + 2 and c + 2.5 stay complex64.
  expect_exact(c_values() + 2, {{3, 2}, {5, -1}, {0, 0.5}});
  expect_exact(c_values() + 2.5, {{3.5f, 2}, {5.5f, -1}, {0.5f, 0.5f}});
}

TEST(ComplexTest, Arithmetic) {
  const Array c = c_values(), r = r_values();
  expect_exact(-c, {{-1, -2}, {-3, 1}, {2, -0.5}});
  expect_exact(c - r, {{-1, 2}, {0, -1}, {-3, 0.5}});
  expect_exact(c * r, {{2, 4}, {9, -3}, {-2, 0.5}});
  expect_close(c / r, {{0.5f, 1}, {1, -0.33333334f}, {-2, 0.5f}});
  expect_exact(square(c), {{-3, 4}, {8, -6}, {3.75f, -2}});
  expect_close(reciprocal(c), {{0.2f, -0.4f}, {0.3f, 0.10000001f}, {-0.47058824f, -0.11764706f}});
  // Integral exponents are exact (lax.integer_pow for c ** 2 in JAX; its power(c, 2+0j) through
  // exp(b log a) gives -3.0000005+3.9999998j, spmd keeps the exact value there too).
  expect_exact(power(c, 2), square(c).to_vector<c64>());
  expect_exact(power(c, r.astype(complex64) * 0 + 2), square(c).to_vector<c64>());
  expect_close(power(c64s({{1, 1}}), -2), {{0, -0.5f}});
  // A non-integral exponent: exp(b log a).
  expect_close(power(c64s({{0, 1}}), 0.5), {{0.70710677f, 0.70710677f}});
}

TEST(ComplexTest, PartsAbsAndAngle) {
  const Array c = c_values();
  const Array magnitude = abs(c);
  EXPECT_EQ(magnitude.dtype(), float32);
  EXPECT_THAT(magnitude.to_vector<float>(),
              ::testing::Pointwise(::testing::FloatNear(1e-6f),
                                   std::vector<float>{2.236068f, 3.1622777f, 2.0615528f}));
  EXPECT_EQ(real(c).to_vector<float>(), (std::vector<float>{1, 3, -2}));
  EXPECT_EQ(imag(c).to_vector<float>(), (std::vector<float>{2, -1, 0.5f}));
  expect_exact(conj(c), {{1, -2}, {3, 1}, {-2, -0.5f}});
  EXPECT_THAT(angle(c).to_vector<float>(),
              ::testing::Pointwise(::testing::FloatNear(1e-6f),
                                   std::vector<float>{1.1071488f, -0.32175055f, 2.896614f}));
  EXPECT_EQ(abs(c.astype(complex128)).dtype(), float64);
  // Real inputs: real and conj are the array, imag zeros, angle atan2(0, x) (int32 -> float32).
  const Array ints = Array::from_vector<int32_t>({-1, 1});
  EXPECT_EQ(real(ints).dtype(), int32);
  EXPECT_EQ(imag(ints).to_vector<int32_t>(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(conj(ints).to_vector<int32_t>(), (std::vector<int32_t>{-1, 1}));
  EXPECT_EQ(angle(ints).dtype(), float32);
  EXPECT_EQ(angle(f32s({-1, 1, -0.0f})).to_vector<float>(),
            (std::vector<float>{std::numbers::pi_v<float>, 0, std::numbers::pi_v<float>}));
}

TEST(ComplexTest, TranscendentalFunctionsMatchJax) {
  const Array c = c_values();
  expect_close(exp(c),
               {{-1.1312044f, 2.4717267f}, {10.852262f, -16.901396f}, {0.11876788f, 0.06488319f}});
  expect_close(log(c),
               {{0.804719f, 1.1071488f}, {1.1512926f, -0.32175055f}, {0.7234595f, 2.896614f}});
  expect_close(sqrt(c),
               {{1.2720196f, 0.7861514f}, {1.7553173f, -0.28484878f}, {0.17543206f, 1.4250531f}});
  expect_close(sin(c),
               {{3.1657786f, 1.9596009f}, {0.21775953f, 1.1634403f}, {-1.0253474f, -0.21685216f}});
  expect_close(tanh(c),
               {{1.1667362f, -0.2434582f}, {1.002055f, -0.00451714f}, {-0.9799409f, 0.03021599f}});
  expect_close(log1p(c),
               {{1.0397208f, 0.7853982f}, {1.4166067f, -0.24497867f}, {0.11157177f, 2.6779451f}});
  expect_close(expm1(c),
               {{-2.1312044f, 2.4717267f}, {9.852262f, -16.901396f}, {-0.88123214f, 0.06488319f}});
  expect_close(arcsin(c),
               {{0.42707857f, 1.5285709f}, {1.2330952f, -1.8241987f}, {-1.2930421f, 1.3618009f}});
  expect_close(log2(c),
               {{1.160964f, 1.597278f}, {1.660964f, -0.46418792f}, {1.0437315f, 4.1789308f}});
  expect_close(exp2(c),
               {{0.36691394f, 1.9660555f}, {6.153911f, -5.11169f}, {0.23513553f, 0.08491928f}});
  expect_close(sigmoid(c64s({{1, 2}})), {{1.0214155f, 0.40343875f}});
  // Near zero log1p and expm1 keep the digits log(1 + z) and exp(z) - 1 lose.
  const std::vector<c64> tiny = log1p(c64s({{1e-10f, 1e-10f}})).to_vector<c64>();
  EXPECT_FLOAT_EQ(tiny[0].real(), 1e-10f);
  EXPECT_FLOAT_EQ(tiny[0].imag(), 1e-10f);
  EXPECT_FLOAT_EQ(expm1(c64s({{1e-10f, 0}})).to_vector<c64>()[0].real(), 1e-10f);
}

TEST(ComplexTest, SignAndRound) {
  expect_close(
      sign(c_values()),
      {{0.4472136f, 0.8944272f}, {0.94868326f, -0.31622776f}, {-0.97014254f, 0.24253564f}});
  const std::vector<c64> special = sign(c64s({0, {kNaN, 1}})).to_vector<c64>();
  EXPECT_EQ(special[0], c64(0));
  EXPECT_TRUE(std::isnan(special[1].real()) && std::isnan(special[1].imag()));
  // Both parts half to even.
  expect_exact(round(c64s({{0.5f, 1.5f}, {2.5f, -0.5f}})), {{0, 2}, {2, -0.0f}});
}

TEST(ComplexTest, OrderIsLexicographicLikeJax) {
  const Array c = c_values(), r = r_values();
  expect_exact(maximum(c, r), {2, 3, 1});
  expect_exact(minimum(c, r), c.to_vector<c64>());
  EXPECT_EQ(less(c, r).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(greater_equal(c64s({{1, 1}, {1, 2}}), c64s({{1, 1}, {1, 3}})).to_vector<bool>(),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(equal(c, c64s({{1, 2}, {3, 1}, {-2, 0.5f}})).to_vector<bool>(),
            (std::vector<bool>{true, false, true}));
  // A NaN part compares false, so it does not propagate (jnp.maximum/minimum on complex64).
  const Array with_nan = c64s({{1, 1}, {kNaN, 0}, 2, {0, 1}});
  expect_exact(maximum(with_nan, c64s({2, 1, 1, {0, 2}})), {2, 1, 2, {0, 2}});
  const std::vector<c64> low = minimum(c, c64s({{kNaN, 0}, 1, 1})).to_vector<c64>();
  EXPECT_TRUE(std::isnan(low[0].real()));
  EXPECT_EQ(low[1], c64(1));
  EXPECT_EQ(low[2], c64(-2, 0.5f));
  EXPECT_EQ(max(c).item<c64>(), c64(3, -1));
  EXPECT_EQ(min(c).item<c64>(), c64(-2, 0.5f));
  EXPECT_EQ(max(with_nan).item<c64>(), c64(2));
}

TEST(ComplexTest, Reductions) {
  const Array c = c_values();
  EXPECT_EQ(sum(c).item<c64>(), c64(2, 1.5f));
  EXPECT_EQ(prod(c).item<c64>(), c64(-12.5f, -7.5f));
  expect_close(mean(c).reshape({1}), {{0.6666667f, 0.5f}});
  EXPECT_EQ(sum(c.astype(complex128)).dtype(), complex128);
  EXPECT_TRUE(any(c).item<bool>());
  EXPECT_FALSE(all(c64s({1, 0})).item<bool>());
  // Pairwise summation as for floats: 10,000 ones sum exactly in both parts.
  EXPECT_EQ(sum(full({10000}, 1, complex64) * c64s({{1, 1}})).item<c64>(), c64(10000, 10000));
  const Array grid = c64s({{1, 1}, {2, 0}, {0, 3}, {4, 4}}).reshape({2, 2});
  expect_exact(sum(grid, 0), {{1, 4}, {6, 4}});
  expect_exact(sum(grid, 1), {{3, 1}, {4, 7}});
}

TEST(ComplexTest, MatmulTransposedAndBatched) {
  const Array c = c_values(), r = r_values();
  expect_exact(
      matmul(c.reshape({3, 1}), r.reshape({1, 3})),
      {{2, 4}, {3, 6}, {1, 2}, {6, -2}, {9, -3}, {3, -1}, {-4, 1}, {-6, 1.5f}, {-2, 0.5f}});
  // [2,3] @ [3,2] with a transposed operand (a strided view gemm reads transposed, without
  // conjugating), against the sums written out.
  const Array a = (arange(6).astype(complex64) + c64s({{0, 1}})).reshape({2, 3});
  const Array b = (arange(6).astype(complex64) * c64s({{1, -1}})).reshape({2, 3});
  const std::vector<c64> av = a.to_vector<c64>(), bv = b.to_vector<c64>();
  std::vector<c64> expected(4);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) expected[i * 2 + j] += av[i * 3 + k] * bv[j * 3 + k];
    }
  }
  expect_exact(matmul(a, b.transpose()), expected);
  expect_exact(matmul(a.astype(complex128), b.transpose().astype(complex128)).astype(complex64),
               expected);
}

TEST(ComplexTest, WhereIsNanAndPrinting) {
  expect_exact(where(Array::from_vector<bool>({true, false, true}), c_values(), 1.0),
               {{1, 2}, 1, {-2, 0.5f}});
  const Array special = c64s({{0, kNaN}, {kInf, 0}, {1, 1}});
  EXPECT_EQ(isnan(special).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(isinf(special).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(isfinite(special).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  // NumPy's element form.
  EXPECT_EQ(c64s({{1, 2}, {0.1f, -1}}).reshape({1, 2}).str(), "[[1.+2.j, 0.1-1.j]]");
  EXPECT_EQ(c64s({{kNaN, -0.0f}}).str(), "[nan-0.j]");
  EXPECT_EQ(type_string(complex128, {2}), "c128[2]");
}

TEST(ComplexTest, RejectsWhatJaxRejects) {
  const Array c = c_values();
  EXPECT_THAT([&] { (void)floor(c); },
              ThrowsMessage<TypeError>(
                  "floor does not accept dtype complex64. Accepted dtypes are subtypes of "
                  "floating."));
  EXPECT_THAT([&] { (void)ceil(c); }, ThrowsMessage<TypeError>(HasSubstr("ceil does not accept")));
  EXPECT_THAT([&] { (void)erf(c); }, ThrowsMessage<TypeError>(HasSubstr("erf does not accept")));
  EXPECT_THAT([&] { (void)cbrt(c); }, ThrowsMessage<TypeError>(HasSubstr("cbrt does not accept")));
  EXPECT_THAT([&] { (void)erf_inv(c); },
              ThrowsMessage<TypeError>(HasSubstr("erf_inv does not accept")));
  EXPECT_THAT([&] { (void)floor_divide(c, c); },
              ThrowsMessage<TypeError>("floor_divide does not support complex-valued inputs"));
  EXPECT_THAT([&] { (void)remainder(c, c); },
              ThrowsMessage<TypeError>("rem does not accept dtype complex64 at position 0. "
                                       "Accepted dtypes at position 0 are subtypes of integer, "
                                       "floating."));
  EXPECT_THAT([&] { (void)bitwise_and(arange(3), c); },
              ThrowsMessage<TypeError>(HasSubstr("and does not accept dtype complex64 at "
                                                 "position 1")));
  EXPECT_THAT([&] { (void)bitwise_not(c); },
              ThrowsMessage<TypeError>("not does not accept dtype complex64. Accepted dtypes are "
                                       "subtypes of integer, bool."));
  EXPECT_THAT([&] { (void)argmax(c); },
              ThrowsMessage<TypeError>("gt does not accept dtype complex64 at position 0. "
                                       "Accepted dtypes at position 0 are subtypes of integer, "
                                       "floating, bool."));
  EXPECT_THAT([&] { (void)argmin(c); },
              ThrowsMessage<TypeError>(HasSubstr("lt does not accept dtype complex64")));
  EXPECT_THAT([&] { (void)clip(c, 0, 1); },
              ThrowsMessage<ValueError>(HasSubstr("Clip received a complex value")));
  EXPECT_THAT(
      [&] {
        (void)clip(f32s({1, 2, 3}), c, c);
      },
      ThrowsMessage<ValueError>(HasSubstr("Complex values have no ordering")));
  EXPECT_THAT([&] { (void)hypot(c, c); },
              ThrowsMessage<ValueError>(
                  HasSubstr("jnp.hypot is not well defined for complex-valued inputs")));
  // Deliberate differences (JAX accepts these for complex; NumPy and spmd do not).
  EXPECT_THAT([&] { (void)arctan2(c, c); },
              ThrowsMessage<TypeError>(HasSubstr("atan2 does not accept dtype complex64")));
  EXPECT_THAT([&] { (void)logaddexp(c, c); },
              ThrowsMessage<TypeError>(HasSubstr("logaddexp does not accept dtype complex64")));
}

TEST(ComplexTest, CollectivesSumBothParts) {
  // shard_map over 2 devices of [1+2j, 3-1j, -2+0.5j, 4+4j], as the JAX run.
  const Mesh mesh = make_mesh({2}, {"i"});
  const Array x = c64s({{1, 2}, {3, -1}, {-2, 0.5f}, {4, 4}});
  const auto run = [&](auto body, PartitionSpec out) {
    return shard_map(body, mesh, P("i"), out, {.check_vma = false})(x);
  };
  expect_exact(run([](const Array& v) { return psum(v, "i"); }, P()), {{-1, 2.5f}, {7, 3}});
  expect_exact(run([](const Array& v) { return pmean(v, "i"); }, P()),
               {{-0.5f, 1.25f}, {3.5f, 1.5f}});
  expect_exact(run([](const Array& v) { return all_gather(v, "i", {.tiled = true}); }, P()),
               x.to_vector<c64>());
  expect_exact(run(
                   [](const Array& v) {
                     return psum_scatter(concatenate({v, v}), "i", {.tiled = true});
                   },
                   P("i")),
               {{-1, 2.5f}, {7, 3}, {-1, 2.5f}, {7, 3}});
  expect_exact(run(
                   [](const Array& v) {
                     return ppermute(v, "i", {{0, 1}, {1, 0}});
                   },
                   P("i")),
               {{-2, 0.5f}, {4, 4}, {1, 2}, {3, -1}});
  const Array wide = shard_map([](const Array& v) { return psum(v, "i"); }, mesh, P("i"), P(),
                               {.check_vma = false})(x.astype(complex128));
  EXPECT_EQ(wide.to_vector<c128>(), (std::vector<c128>{{-1, 2.5}, {7, 3}}));
  // XLA has no complex max across devices (JAX: UNIMPLEMENTED at run time).
  EXPECT_THAT([&] { (void)run([](const Array& v) { return pmax(v, "i"); }, P()); },
              ThrowsMessage<TypeError>(HasSubstr("pmax does not accept dtype complex64")));
  EXPECT_THAT([&] { (void)run([](const Array& v) { return pargmin(v, "i"); }, P("i")); },
              ThrowsMessage<TypeError>(HasSubstr("pargmin does not accept dtype complex64")));
}

}  // namespace
}  // namespace spmd
