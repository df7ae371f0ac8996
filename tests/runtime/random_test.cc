// SPDX-License-Identifier: Apache-2.0
// Unit tests for spmd/random.h: the Array wrappers over the bit-exact threefry PRNG. Reference
// words come from jax.random (as pinned in threefry_test.cc); everything else is checked against
// the internal functions of random/threefry.h, which threefry_test.cc verifies against JAX.
#include "spmd/random.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "random/threefry.h"
#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd {
namespace {

namespace prng = spmd::internal::prng;
namespace rnd = spmd::random;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

using Words = std::vector<uint32_t>;

prng::Key key_of(const Array& key) {
  Words w = key.to_vector<uint32_t>();
  return prng::Key{w[0], w[1]};
}

// The bit patterns of a float32 array.
Words f32_words(const Array& a) {
  Words out;
  for (float v : a.to_vector<float>()) out.push_back(std::bit_cast<uint32_t>(v));
  return out;
}
template <class T>
Words words(const std::vector<T>& v) {
  Words out;
  for (T x : v) out.push_back(std::bit_cast<uint32_t>(x));
  return out;
}

TEST(RandomTest, PRNGKey) {
  Array k = rnd::PRNGKey(0);
  EXPECT_EQ(k.dtype(), DType::kUInt32);
  EXPECT_EQ(k.shape(), (Shape{2}));
  EXPECT_THAT(k.to_vector<uint32_t>(), ElementsAre(0u, 0u));
  EXPECT_THAT(rnd::PRNGKey(42).to_vector<uint32_t>(), ElementsAre(0u, 42u));
  EXPECT_THAT(rnd::PRNGKey(-1).to_vector<uint32_t>(), ElementsAre(0u, 0xffffffffu));
  EXPECT_THAT(rnd::PRNGKey((int64_t{1} << 32) + 5).to_vector<uint32_t>(), ElementsAre(0u, 5u));
}

TEST(RandomTest, Split) {
  Array keys = rnd::split(rnd::PRNGKey(0));
  EXPECT_EQ(keys.dtype(), DType::kUInt32);
  EXPECT_EQ(keys.shape(), (Shape{2, 2}));
  EXPECT_THAT(keys.to_vector<uint32_t>(),
              ElementsAre(0x6b200159u, 0x99ba4efeu, 0x375f238fu, 0xcddb151du));
  EXPECT_THAT(rnd::split(rnd::PRNGKey(42), 2).to_vector<uint32_t>(),
              ElementsAre(0x6d3e048fu, 0x1022172du, 0x03d7b32du, 0xadd083f4u));
  Array five = rnd::split(rnd::PRNGKey(0), 5);
  EXPECT_EQ(five.shape(), (Shape{5, 2}));
  EXPECT_EQ(five.to_vector<uint32_t>(), prng::split(prng::seed(0), 5));
  EXPECT_THAT(five[4].to_vector<uint32_t>(), ElementsAre(0x883ffec1u, 0x19dbc576u));
  EXPECT_EQ(rnd::split(rnd::PRNGKey(3), 1).shape(), (Shape{1, 2}));
  EXPECT_EQ(rnd::split(rnd::PRNGKey(3), 0).shape(), (Shape{0, 2}));
  // A row of split is itself a key.
  Array again = rnd::split(keys[1], 3);
  EXPECT_EQ(again.to_vector<uint32_t>(), prng::split(prng::Key{0x375f238fu, 0xcddb151du}, 3));
  EXPECT_THAT([] { rnd::split(rnd::PRNGKey(0), -1); },
              ThrowsMessage<ValueError>(HasSubstr("num must be >= 0")));
}

TEST(RandomTest, FoldIn) {
  Array k0 = rnd::PRNGKey(0), k42 = rnd::PRNGKey(42);
  Array f = rnd::fold_in(k0, 7);
  EXPECT_EQ(f.dtype(), DType::kUInt32);
  EXPECT_EQ(f.shape(), (Shape{2}));
  EXPECT_THAT(f.to_vector<uint32_t>(), ElementsAre(0xa1ef7a4du, 0x116eb6b3u));
  EXPECT_THAT(rnd::fold_in(k0, 1).to_vector<uint32_t>(), ElementsAre(0x375f238fu, 0xcddb151du));
  EXPECT_THAT(rnd::fold_in(k42, 0x80000000u).to_vector<uint32_t>(),
              ElementsAre(0xbda28b29u, 0x84d904a5u));
  // Array data: any scalar integer array, converted like jnp.uint32(data).
  EXPECT_TRUE(array_equal(rnd::fold_in(k0, Array::scalar<int32_t>(7)), f));
  EXPECT_TRUE(array_equal(rnd::fold_in(k0, Array::scalar<uint32_t>(7u)), f));
  EXPECT_TRUE(array_equal(rnd::fold_in(k0, Array::scalar<int64_t>(7)), f));
  EXPECT_TRUE(
      array_equal(rnd::fold_in(k42, Array::scalar<int32_t>(-1)), rnd::fold_in(k42, 0xffffffffu)));
  EXPECT_TRUE(array_equal(rnd::fold_in(k0, Array::scalar<bool>(true)), rnd::fold_in(k0, 1)));
  EXPECT_TRUE(array_equal(rnd::fold_in(k0, arange(4)[3]), rnd::fold_in(k0, 3)));
  EXPECT_THAT([&] { rnd::fold_in(k0, Array::scalar<float>(1.0f)); },
              ThrowsMessage<TypeError>(HasSubstr("fold_in data must be a scalar integer array")));
  EXPECT_THAT([&] { rnd::fold_in(k0, arange(2)); },
              ThrowsMessage<TypeError>(HasSubstr("got i32[2]")));
  EXPECT_THAT([&] { rnd::fold_in(k0, arange(7, 8)); },  // like JAX: a scalar, not shape (1,)
              ThrowsMessage<TypeError>(HasSubstr("got i32[1]")));
}

TEST(RandomTest, Bits) {
  Array b = rnd::bits(rnd::PRNGKey(0), {3});
  EXPECT_EQ(b.dtype(), DType::kUInt32);
  EXPECT_EQ(b.shape(), (Shape{3}));
  EXPECT_THAT(b.to_vector<uint32_t>(), ElementsAre(0xf29a4fa7u, 0xfa843692u, 0x55110e28u));
  EXPECT_THAT(rnd::bits(rnd::PRNGKey(42), {1}).to_vector<uint32_t>(), ElementsAre(0x7d1c13a2u));
  Array big = rnd::bits(rnd::PRNGKey(42), {10, 100});
  EXPECT_EQ(big.shape(), (Shape{10, 100}));
  EXPECT_EQ(big.to_vector<uint32_t>(), prng::random_bits(prng::seed(42), 1000));
  EXPECT_EQ(big[9].to_vector<uint32_t>()[99], 0x5dc2d15au);
  Array s = rnd::bits(rnd::PRNGKey(0), {});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.item<uint32_t>(), 0xf29a4fa7u);
  EXPECT_EQ(rnd::bits(rnd::PRNGKey(0), {0, 4}).size(), 0);
}

TEST(RandomTest, Uniform) {
  Array k0 = rnd::PRNGKey(0);
  Array u = rnd::uniform(k0, {7});
  EXPECT_EQ(u.dtype(), DType::kFloat32);
  EXPECT_EQ(u.shape(), (Shape{7}));
  EXPECT_THAT(f32_words(u), ElementsAre(0x3f729a4eu, 0x3f7a8436u, 0x3eaa221cu, 0x3eeff550u,
                                        0x3f11e43au, 0x3e2979a0u, 0x3e9ed1d4u));
  EXPECT_THAT(f32_words(rnd::uniform(k0, {7}, DType::kFloat32, -2.0, 3.0)),
              ElementsAre(0x402f40e2u, 0x40392544u, 0xbead5574u, 0x3eafca90u, 0x3f597522u,
                          0xbf9613fcu, 0xbee5e6dcu));
  Array s = rnd::uniform(rnd::PRNGKey(42));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), DType::kFloat32);
  EXPECT_EQ(std::bit_cast<uint32_t>(s.item<float>()), 0x3efa3824u);

  Array many = rnd::uniform(k0, {1001}, DType::kFloat32, -2.0, 3.0);
  EXPECT_EQ(many.to_vector<float>(), prng::uniform_f32(prng::seed(0), 1001, -2.0f, 3.0f));
  EXPECT_TRUE(all(many >= -2.0).item<bool>());
  EXPECT_TRUE(all(many < 3.0).item<bool>());
  EXPECT_EQ(f32_words(many)[1000], 0x400dd54eu);
  Array unit = rnd::uniform(rnd::PRNGKey(5), {1000});
  EXPECT_TRUE(all(logical_and(unit >= 0.0, unit < 1.0)).item<bool>());

  Array d = rnd::uniform(k0, {1001}, DType::kFloat64, -2.0, 3.0);
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_EQ(d.shape(), (Shape{1001}));
  EXPECT_EQ(d.to_vector<double>(), prng::uniform_f64(prng::seed(0), 1001, -2.0, 3.0));
  EXPECT_EQ(std::bit_cast<uint64_t>(d.to_vector<double>()[0]), 0x3fb7a006c000a340u);
  EXPECT_EQ(rnd::uniform(k0, {3}, DType::kFloat64).to_vector<double>(),
            prng::uniform_f64(prng::seed(0), 3));
}

TEST(RandomTest, Normal) {
  Array z = rnd::normal(rnd::PRNGKey(42), {7});
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(z.shape(), (Shape{7}));
  EXPECT_THAT(f32_words(z), ElementsAre(0xbce7df15u, 0x3eef2be8u, 0x3e976661u, 0x3e1d3b24u,
                                        0xbdfe04ebu, 0x3e5e211au, 0xbfb86eb9u));
  Array s = rnd::normal(rnd::PRNGKey(0));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(std::bit_cast<uint32_t>(s.item<float>()), 0x3fcfb2bdu);
  Array k = rnd::fold_in(rnd::PRNGKey(1), 3);
  EXPECT_EQ(words(rnd::normal(k, {50}).to_vector<float>()),
            words(prng::normal_f32(prng::fold_in(prng::seed(1), 3), 50)));
  EXPECT_EQ(rnd::normal(k, {0}).size(), 0);
}

TEST(RandomTest, SamplesDependOnlyOnElementCount) {
  Array key = rnd::fold_in(rnd::PRNGKey(0), 11);
  EXPECT_TRUE(array_equal(rnd::bits(key, {2, 3}), rnd::bits(key, {6}).reshape({2, 3})));
  EXPECT_TRUE(array_equal(rnd::uniform(key, {2, 3}), rnd::uniform(key, {6}).reshape({2, 3})));
  EXPECT_TRUE(array_equal(rnd::uniform(key, {2, 3}, DType::kFloat64, 1.0, 2.0),
                          rnd::uniform(key, {6}, DType::kFloat64, 1.0, 2.0).reshape({2, 3})));
  EXPECT_TRUE(array_equal(rnd::normal(key, {2, 3}), rnd::normal(key, {6}).reshape({2, 3})));
  EXPECT_TRUE(array_equal(rnd::normal(key, {3, 1, 2}), rnd::normal(key, {6}).reshape({3, 1, 2})));
}

TEST(RandomTest, WrappersMatchInternalFunctions) {
  for (int64_t seed : {0, 1, 42, -7}) {
    SCOPED_TRACE(seed);
    Array key = rnd::PRNGKey(seed);
    prng::Key k = prng::seed(seed);
    EXPECT_EQ(key_of(key), k);
    EXPECT_EQ(key_of(rnd::fold_in(key, 99)), prng::fold_in(k, 99));
    EXPECT_EQ(rnd::split(key, 4).to_vector<uint32_t>(), prng::split(k, 4));
    EXPECT_EQ(rnd::bits(key, {17}).to_vector<uint32_t>(), prng::random_bits(k, 17));
    EXPECT_EQ(words(rnd::uniform(key, {17}, DType::kFloat32, 0.5, 4.0).to_vector<float>()),
              words(prng::uniform_f32(k, 17, 0.5f, 4.0f)));
    EXPECT_EQ(words(rnd::normal(key, {17}).to_vector<float>()), words(prng::normal_f32(k, 17)));
  }
}

TEST(RandomTest, Errors) {
  const auto bad_key = ThrowsMessage<TypeError>(HasSubstr("expects a raw uint32[2] key"));
  Array i32_key = Array::from_vector<int32_t>({0, 0});
  Array long_key = Array::from_vector<uint32_t>({0, 0, 0});
  Array keys = rnd::split(rnd::PRNGKey(0), 2);
  EXPECT_THAT([&] { rnd::split(i32_key); }, bad_key);
  EXPECT_THAT([&] { rnd::fold_in(long_key, 1); }, bad_key);
  EXPECT_THAT([&] { rnd::fold_in(keys, Array::scalar<int32_t>(1)); }, bad_key);
  EXPECT_THAT([&] { rnd::bits(keys, {2}); }, bad_key);
  EXPECT_THAT([&] { rnd::uniform(i32_key, {2}); }, bad_key);
  EXPECT_THAT([&] { rnd::normal(long_key, {2}); }, bad_key);
  EXPECT_THAT([&] { rnd::uniform(keys); }, ThrowsMessage<TypeError>(HasSubstr("got u32[2,2]")));

  Array key = rnd::PRNGKey(0);
  EXPECT_THAT(
      [&] { rnd::uniform(key, {2}, DType::kInt32); },
      ThrowsMessage<NotImplementedError>(HasSubstr("uniform supports float32 and float64")));
  EXPECT_THROW(rnd::uniform(key, {2}, DType::kFloat16), NotImplementedError);
  EXPECT_THROW(rnd::uniform(key, {2}, DType::kBFloat16), NotImplementedError);
  EXPECT_THAT([&] { rnd::normal(key, {2}, DType::kFloat64); },
              ThrowsMessage<NotImplementedError>(HasSubstr("normal supports float32")));
  EXPECT_THROW(rnd::normal(key, {2}, DType::kFloat16), NotImplementedError);
}

}  // namespace
}  // namespace spmd
