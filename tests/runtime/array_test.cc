// SPDX-License-Identifier: Apache-2.0
// Unit tests for spmd/array.h: construction, host transfer, shape methods, shards, device_put
// and text formatting.
#include "spmd/array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "spmd/collectives.h"
#include "spmd/device.h"
#include "spmd/errors.h"
#include "spmd/mesh.h"
#include "spmd/ops.h"
#include "spmd/partition_spec.h"
#include "spmd/shard_map.h"
#include "spmd/sharding.h"
#include "thread_cache.h"

namespace spmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

using Ints = std::vector<int32_t>;
using Range = std::pair<int64_t, int64_t>;

// Values 0..n-1 as an int32 array of `shape`.
Array iota(const Shape& shape) { return arange(shape_size(shape)).reshape(shape); }

Device dev(int id) { return devices()[static_cast<size_t>(id)]; }

// ---- construction and host transfer ----

TEST(ArrayTest, FromVectorEveryDType) {
  Array b = Array::from_vector<bool>({true, false, true});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));

  Array i32 = Array::from_vector<int32_t>({-1, 2, 2147483647});
  EXPECT_EQ(i32.dtype(), DType::kInt32);
  EXPECT_THAT(i32.to_vector<int32_t>(), ElementsAre(-1, 2, 2147483647));

  Array i64 = Array::from_vector<int64_t>({int64_t{1} << 40, -3});
  EXPECT_EQ(i64.dtype(), DType::kInt64);
  EXPECT_THAT(i64.to_vector<int64_t>(), ElementsAre(int64_t{1} << 40, -3));

  Array u32 = Array::from_vector<uint32_t>({0u, 4294967295u});
  EXPECT_EQ(u32.dtype(), DType::kUInt32);
  EXPECT_THAT(u32.to_vector<uint32_t>(), ElementsAre(0u, 4294967295u));

  Array f16 = Array::from_vector<float16_t>({float16_t(1.5f), float16_t(-2.0f)});
  EXPECT_EQ(f16.dtype(), DType::kFloat16);
  EXPECT_THAT(f16.to_vector<float>(), ElementsAre(1.5f, -2.0f));
  EXPECT_EQ(f16.to_vector<float16_t>()[0].bits, 0x3e00);

  Array bf16 = Array::from_vector<bfloat16_t>({bfloat16_t(0.5f), bfloat16_t(-3.0f)});
  EXPECT_EQ(bf16.dtype(), DType::kBFloat16);
  EXPECT_THAT(bf16.to_vector<float>(), ElementsAre(0.5f, -3.0f));
  EXPECT_EQ(bf16.to_vector<bfloat16_t>()[1].bits, 0xc040);

  Array f32 = Array::from_vector<float>({0.25f, -1.5f});
  EXPECT_EQ(f32.dtype(), DType::kFloat32);
  EXPECT_THAT(f32.to_vector<float>(), ElementsAre(0.25f, -1.5f));

  Array f64 = Array::from_vector<double>({0.1, 1e300});
  EXPECT_EQ(f64.dtype(), DType::kFloat64);
  EXPECT_THAT(f64.to_vector<double>(), ElementsAre(0.1, 1e300));
}

TEST(ArrayTest, FromVectorShapes) {
  Array x = Array::from_vector<int32_t>({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(x.shape(), (Shape{6}));
  EXPECT_EQ(x.ndim(), 1);
  EXPECT_EQ(x.size(), 6);
  Array m = Array::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.ndim(), 2);
  EXPECT_THAT(m.to_vector<int32_t>(), ElementsAre(1, 2, 3, 4, 5, 6));

  Array s = Array::from_vector<float>({7.0f}, Shape{});
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.item<float>(), 7.0f);
  Array t = Array::scalar<int64_t>(-9);
  EXPECT_EQ(t.shape(), Shape{});
  EXPECT_EQ(t.dtype(), DType::kInt64);
  EXPECT_EQ(t.item<int64_t>(), -9);

  Array e = Array::from_vector<float>({}, Shape{0, 3});
  EXPECT_EQ(e.size(), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
}

TEST(ArrayTest, FromVectorCountMismatch) {
  EXPECT_THAT(
      [] {
        Array::from_vector<int32_t>({1, 2, 3}, Shape{2, 2});
      },
      ThrowsMessage<ValueError>(HasSubstr("got 3 values for shape (2, 2)")));
  EXPECT_NO_THROW(Array::from_vector<float>({1.0f}, Shape{}));
  EXPECT_THROW(Array::from_vector<int32_t>({}, Shape{}), ValueError);
  EXPECT_THROW(Array::from_vector<int32_t>({}, Shape{-1}), ValueError);
}

TEST(ArrayTest, ToVectorConverts) {
  Array f = Array::from_vector<float>({2.75f, -2.75f, 0.0f});
  EXPECT_THAT(f.to_vector<int32_t>(), ElementsAre(2, -2, 0));  // truncation toward zero
  EXPECT_THAT(f.to_vector<double>(), ElementsAre(2.75, -2.75, 0.0));
  EXPECT_EQ(f.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  Array i = Array::from_vector<int32_t>({-1, 0, 3});
  EXPECT_THAT(i.to_vector<float>(), ElementsAre(-1.0f, 0.0f, 3.0f));
  EXPECT_THAT(i.to_vector<int64_t>(), ElementsAre(-1, 0, 3));
  EXPECT_THAT(i.to_vector<uint32_t>(), ElementsAre(4294967295u, 0u, 3u));  // wraps
  EXPECT_EQ(i.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  Array b = Array::from_vector<bool>({true, false});
  EXPECT_THAT(b.to_vector<int32_t>(), ElementsAre(1, 0));
  EXPECT_THAT(b.to_vector<float>(), ElementsAre(1.0f, 0.0f));
  EXPECT_EQ(Array::from_vector<double>({1.0 / 3}).to_vector<float>()[0], 1.0f / 3);
}

TEST(ArrayTest, Item) {
  EXPECT_EQ(Array::from_vector<int32_t>({5}, Shape{1, 1}).item<int32_t>(), 5);
  EXPECT_EQ(Array::scalar<bool>(true).item<bool>(), true);
  EXPECT_EQ(Array::scalar<float>(2.5f).item<double>(), 2.5);
  EXPECT_THAT([] { arange(2).item<int32_t>(); },
              ThrowsMessage<ValueError>(HasSubstr("item() needs an array with exactly one "
                                                  "element, got i32[2]")));
  EXPECT_THROW(zeros({0}).item<float>(), ValueError);
}

// ---- shape methods ----

TEST(ArrayTest, Reshape) {
  Array x = iota({2, 3});
  Array r = x.reshape({3, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_THAT(r.to_vector<int32_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(x.reshape({-1}).shape(), (Shape{6}));
  EXPECT_EQ(x.reshape({-1, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(x.reshape({1, -1, 1}).shape(), (Shape{1, 6, 1}));
  EXPECT_EQ(arange(1).reshape({}).shape(), Shape{});
  EXPECT_EQ(zeros({0, 4}).reshape({-1}).shape(), (Shape{0}));
  EXPECT_THAT(
      [&] {
        x.reshape({4, 2});
      },
      ThrowsMessage<ValueError>(
          HasSubstr("cannot reshape array of shape (2, 3) (size 6) into shape (4, 2)")));
  EXPECT_THAT(
      [&] {
        x.reshape({-1, 4});
      },
      ThrowsMessage<ValueError>(
          HasSubstr("cannot reshape array of shape (2, 3) (size 6) into shape (-1, 4)")));
  EXPECT_THAT(
      [&] {
        x.reshape({-1, -1});
      },
      ThrowsMessage<ValueError>(HasSubstr("can only specify one unknown dimension (-1)")));
  EXPECT_THAT(
      [&] {
        x.reshape({-2, -3});
      },
      ThrowsMessage<ValueError>(HasSubstr(
          "reshape new shape must have every element be nonnegative, got (-2, -3): negative "
          "dimensions are not allowed")));
}

TEST(ArrayTest, Transpose) {
  Array x = iota({2, 3});
  Array t = x.transpose();
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_THAT(t.to_vector<int32_t>(), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(x.transpose({0, 1}).to_vector<int32_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
  Array y = iota({2, 3, 4});
  Array p = y.transpose({1, 2, 0});
  EXPECT_EQ(p.shape(), (Shape{3, 4, 2}));
  // p[i, j, k] == y[k, i, j] == 12k + 4i + j.
  EXPECT_THAT(p[1][2].to_vector<int32_t>(), ElementsAre(6, 18));
  EXPECT_EQ(y.transpose({-1, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(y.transpose().shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(y.transpose().reshape({-1}).to_vector<int32_t>()[1], 12);
  EXPECT_EQ(Array::scalar<float>(1.0f).transpose().shape(), Shape{});
  EXPECT_THAT(
      [&] {
        x.transpose({0, 0});
      },
      ThrowsMessage<ValueError>(HasSubstr("got permutation (0, 0) for operand shape (2, 3)")));
  EXPECT_THAT([&] { x.transpose({-1}); },
              ThrowsMessage<ValueError>(HasSubstr("got permutation (-1,)")));
  for (const std::vector<int>& bad :
       std::vector<std::vector<int>>{{0}, {0, 0}, {0, 2}, {1, 0, 2}}) {
    EXPECT_THAT([&] { x.transpose(bad); },
                ThrowsMessage<ValueError>(HasSubstr("isn't a permutation of operand dimensions")))
        << testing::PrintToString(bad);
  }
}

TEST(ArrayTest, Astype) {
  Array x = Array::from_vector<float>({1.5f, -1.5f, 0.0f, 300.0f});
  Array i = x.astype(DType::kInt32);
  EXPECT_EQ(i.dtype(), DType::kInt32);
  EXPECT_THAT(i.to_vector<int32_t>(), ElementsAre(1, -1, 0, 300));
  EXPECT_EQ(x.astype(DType::kBool).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  EXPECT_THAT(x.astype(DType::kBFloat16).to_vector<float>(),
              ElementsAre(1.5f, -1.5f, 0.0f, 300.0f));
  EXPECT_THAT(x.astype(DType::kFloat64).to_vector<double>(), ElementsAre(1.5, -1.5, 0.0, 300.0));
  EXPECT_EQ(x.astype(DType::kFloat32).dtype(), DType::kFloat32);
  EXPECT_EQ(x.astype(DType::kUInt32).shape(), (Shape{4}));
}

TEST(ArrayTest, IndexFirstDimension) {
  Array x = iota({3, 2});
  EXPECT_EQ(x[0].shape(), (Shape{2}));
  EXPECT_THAT(x[1].to_vector<int32_t>(), ElementsAre(2, 3));
  EXPECT_THAT(x[-1].to_vector<int32_t>(), ElementsAre(4, 5));
  EXPECT_THAT(x[-3].to_vector<int32_t>(), ElementsAre(0, 1));
  EXPECT_EQ(x[2][1].shape(), Shape{});
  EXPECT_EQ(x[2][1].item<int32_t>(), 5);
  EXPECT_THAT(
      [&] { (void)x[3]; },
      ThrowsMessage<IndexError>(HasSubstr("index 3 is out of bounds for axis 0 with size 3")));
  EXPECT_THROW(x[-4], IndexError);
  EXPECT_THAT([] { (void)Array::scalar<int32_t>(1)[0]; },
              ThrowsMessage<IndexError>(HasSubstr("Too many indices: array is 0-dimensional")));
}

// ---- shards, device_put ----

TEST(ArrayTest, SingleDeviceShards) {
  Array x = iota({2, 3});
  EXPECT_FALSE(x.sharding().is_named());
  EXPECT_THAT(x.sharding().devices(), ElementsAre(dev(0)));
  std::vector<Shard> shards = x.addressable_shards();
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].device, dev(0));
  EXPECT_THAT(shards[0].index, ElementsAre(Range{0, 2}, Range{0, 3}));
  EXPECT_TRUE(array_equal(shards[0].data, x));
}

TEST(ArrayTest, DevicePutOneDimMesh) {
  Mesh mesh = make_mesh({4}, {"i"});
  Array x = iota({8, 3});
  Array y = device_put(x, NamedSharding(mesh, P("i")));
  EXPECT_TRUE(y.sharding().is_named());
  EXPECT_EQ(y.sharding().named().spec(), P("i"));
  EXPECT_EQ(y.shape(), (Shape{8, 3}));
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_TRUE(array_equal(y, x));
  std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(shards[r].device, dev(r));
    EXPECT_THAT(shards[r].index, ElementsAre(Range{2 * r, 2 * r + 2}, Range{0, 3}));
    EXPECT_EQ(shards[r].data.shape(), (Shape{2, 3}));
    EXPECT_EQ(shards[r].data.to_vector<int32_t>(),
              (Ints{6 * r, 6 * r + 1, 6 * r + 2, 6 * r + 3, 6 * r + 4, 6 * r + 5}));
  }
  // Ops on a sharded array see its global value.
  EXPECT_EQ(sum(y).item<int32_t>(), 276);
  EXPECT_THAT(y[7].to_vector<int32_t>(), ElementsAre(21, 22, 23));
  // Replicated: every device holds everything.
  Array r = device_put(x, NamedSharding(mesh, P()));
  for (const Shard& s : r.addressable_shards()) {
    EXPECT_THAT(s.index, ElementsAre(Range{0, 8}, Range{0, 3}));
    EXPECT_TRUE(array_equal(s.data, x));
  }
  // Splitting the second dimension.
  Array c = device_put(iota({3, 8}), NamedSharding(mesh, P(None, "i")));
  EXPECT_THAT(c.addressable_shards()[1].index, ElementsAre(Range{0, 3}, Range{2, 4}));
  EXPECT_THAT(c.addressable_shards()[1].data.to_vector<int32_t>(),
              ElementsAre(2, 3, 10, 11, 18, 19));
  EXPECT_TRUE(array_equal(c, iota({3, 8})));
}

TEST(ArrayTest, DevicePutTwoDimMesh) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  Array x = iota({8, 4});
  Array y = device_put(x, NamedSharding(mesh, P("x", "y")));
  std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    int64_t i = r / 2, j = r % 2;
    EXPECT_EQ(shards[r].device, dev(r));
    EXPECT_THAT(shards[r].index, ElementsAre(Range{2 * i, 2 * i + 2}, Range{2 * j, 2 * j + 2}));
    int32_t v = static_cast<int32_t>(8 * i + 2 * j);
    EXPECT_EQ(shards[r].data.to_vector<int32_t>(), (Ints{v, v + 1, v + 4, v + 5}));
  }
  EXPECT_TRUE(array_equal(y, x));

  // A tuple entry splits over x*y, x major.
  Array t = device_put(arange(16), NamedSharding(mesh, P({"x", "y"})));
  for (int r = 0; r < 8; ++r) {
    EXPECT_THAT(t.addressable_shards()[r].index, ElementsAre(Range{2 * r, 2 * r + 2}));
    EXPECT_EQ(t.addressable_shards()[r].data.to_vector<int32_t>(), (Ints{2 * r, 2 * r + 1}));
  }
  Array t2 = device_put(arange(16), NamedSharding(mesh, P({"y", "x"})));
  // Device r sits at (x, y) = (r / 2, r % 2); block = y * 4 + x.
  EXPECT_THAT(t2.addressable_shards()[1].index, ElementsAre(Range{8, 10}));
  EXPECT_THAT(t2.addressable_shards()[2].index, ElementsAre(Range{2, 4}));
  EXPECT_TRUE(array_equal(t2, arange(16)));

  // Unmentioned mesh axes replicate: devices that differ only in y hold the same rows.
  Array u = device_put(x, NamedSharding(mesh, P("x")));
  for (int r = 0; r < 8; ++r) {
    int64_t i = r / 2;
    EXPECT_THAT(u.addressable_shards()[r].index, ElementsAre(Range{2 * i, 2 * i + 2}, Range{0, 4}));
  }
  EXPECT_TRUE(array_equal(u.addressable_shards()[2].data, u.addressable_shards()[3].data));
  Array v = device_put(x, NamedSharding(mesh, P(None, "y")));
  EXPECT_THAT(v.addressable_shards()[5].index, ElementsAre(Range{0, 8}, Range{2, 4}));
  EXPECT_TRUE(array_equal(v, x));

  // Resharding a sharded array.
  Array w = device_put(y, NamedSharding(mesh, P("y", "x")));
  EXPECT_TRUE(array_equal(w, x));
  EXPECT_THAT(w.addressable_shards()[1].index, ElementsAre(Range{4, 8}, Range{0, 1}));
}

TEST(ArrayTest, DevicePutErrors) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  EXPECT_THAT([&] { device_put(arange(6), NamedSharding(mesh, P("x"))); },
              ThrowsMessage<ValueError>(HasSubstr("does not evenly divide")));
  EXPECT_THAT(
      [&] {
        device_put(arange(12), NamedSharding(mesh, P({"x", "y"})));
      },
      ThrowsMessage<ValueError>(HasSubstr("does not evenly divide")));
  EXPECT_THAT([&] { device_put(arange(8), NamedSharding(mesh, P("x", "y"))); },
              ThrowsMessage<ValueError>(HasSubstr("may not be longer than the array's rank")));
  EXPECT_THROW(device_put(arange(8), NamedSharding(mesh, P("z"))), ValueError);
}

TEST(ArrayTest, DevicePutToDevice) {
  Array x = iota({2, 3});
  Array y = device_put(x, dev(3));
  EXPECT_THAT(y.sharding().devices(), ElementsAre(dev(3)));
  EXPECT_EQ(y.addressable_shards()[0].device, dev(3));
  EXPECT_TRUE(array_equal(y, x));
  Array z = device_put(x, dev(0));
  EXPECT_THAT(z.sharding().devices(), ElementsAre(dev(0)));
  EXPECT_TRUE(array_equal(z, x));
  // Gathering a sharded array onto one device.
  Array s = device_put(iota({8, 2}), NamedSharding(make_mesh({8}, {"i"}), P("i")));
  Array g = device_put(s, dev(5));
  EXPECT_FALSE(g.sharding().is_named());
  ASSERT_EQ(g.addressable_shards().size(), 1u);
  EXPECT_EQ(g.addressable_shards()[0].device, dev(5));
  EXPECT_THAT(g.addressable_shards()[0].index, ElementsAre(Range{0, 8}, Range{0, 2}));
  EXPECT_TRUE(array_equal(g, iota({8, 2})));
}

// ---- formatting, validity ----

TEST(ArrayTest, Str) {
  EXPECT_EQ(arange(3).str(), "[0, 1, 2]");
  EXPECT_EQ(Array::from_vector<int64_t>({-5, int64_t{1} << 40}).str(), "[-5, 1099511627776]");
  EXPECT_EQ(Array::from_vector<uint32_t>({4294967295u}).str(), "[4294967295]");
  EXPECT_EQ(Array::from_vector<float>({1.0f, 2.5f, -0.0f}).str(), "[1., 2.5, -0.]");
  EXPECT_EQ(Array::from_vector<double>({0.1, 3.0}).str(), "[0.1, 3.]");
  EXPECT_EQ(Array::from_vector<bfloat16_t>({bfloat16_t(2.0f), bfloat16_t(0.5f)}).str(),
            "[2., 0.5]");
  // 16-bit floats in their own shortest round-trip form.
  EXPECT_EQ(Array::from_vector<bfloat16_t>({bfloat16_t(0.1f), bfloat16_t(-3.3f)}).str(),
            "[0.1, -3.3]");
  EXPECT_EQ(
      Array::from_vector<float16_t>({float16_t(0.1f), float16_t(65504.0f), float16_t(1e-7f)}).str(),
      "[0.1, 65500., 1e-07]");
  EXPECT_EQ(Array::from_vector<bool>({true, false}).str(), "[True, False]");
  EXPECT_EQ(iota({2, 2}).str(), "[[0, 1],\n [2, 3]]");
  EXPECT_EQ(iota({2, 2, 2}).str(), "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
  EXPECT_EQ(Array::scalar<int32_t>(7).str(), "7");
  EXPECT_EQ(Array::scalar<bool>(false).str(), "False");
  EXPECT_EQ(zeros({0}).str(), "[]");
  std::ostringstream os;
  os << iota({1, 2});
  EXPECT_EQ(os.str(), "[[0, 1]]");
}

TEST(ArrayTest, InvalidArray) {
  Array a;
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(a.is_deleted());
  const auto invalid = ThrowsMessage<ValueError>(HasSubstr("invalid (default-constructed)"));
  EXPECT_THAT([&] { (void)a.shape(); }, invalid);
  EXPECT_THAT([&] { (void)a.dtype(); }, invalid);
  EXPECT_THAT([&] { (void)a.size(); }, invalid);
  EXPECT_THAT([&] { a.to_vector<float>(); }, invalid);
  EXPECT_THAT([&] { a.str(); }, invalid);
  EXPECT_THAT([&] { a.addressable_shards(); }, invalid);
  EXPECT_THAT([&] { (void)(a + 1); }, invalid);
  a = arange(2);
  EXPECT_TRUE(a.valid());
  EXPECT_FALSE(a.is_deleted());
}

TEST(ArrayTest, CopiesShareValue) {
  Array x = arange(4);
  Array y = x;
  EXPECT_TRUE(array_equal(x, y));
  Array z = x + 1;  // a new array; x is unchanged
  EXPECT_THAT(x.to_vector<int32_t>(), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(z.to_vector<int32_t>(), ElementsAre(1, 2, 3, 4));
}

TEST(ArrayTest, RecycledStorageTakesEachNewArraysShapeAndDtype) {
  // Single-device arrays reuse the impl and buffer of arrays dropped on the same thread: every
  // new array must read as itself whatever rank, dtype and size came before it.
  Array kept = arange(6).reshape({2, 3});  // shares its buffer with a dropped arange
  for (int round = 0; round < 3; ++round) {
    Array a = arange(16, DType::kFloat32) * 2.0f;
    EXPECT_EQ(a.shape(), Shape({16}));
    EXPECT_FLOAT_EQ(a.to_vector<float>()[15], 30.0f);
    Array b = zeros({2, 2, 2}, DType::kInt8) + 1;
    EXPECT_EQ(b.shape(), Shape({2, 2, 2}));
    EXPECT_EQ(b.dtype(), DType::kInt8);
    EXPECT_THAT(b.addressable_shards()[0].index,
                ElementsAre(Range{0, 2}, Range{0, 2}, Range{0, 2}));
    Array c = full({}, 7.0, DType::kFloat64) + 0.5;
    EXPECT_EQ(c.ndim(), 0);
    EXPECT_DOUBLE_EQ(c.item<double>(), 7.5);
  }
  EXPECT_THAT(kept.to_vector<int32_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(ArrayTest, ADonatedArraysStorageComesBackUsable) {
  Mesh mesh = make_mesh({2}, {"i"});
  auto f = shard_map([](const Array& x) { return x + 1; }, mesh, P("i"), P("i"),
                     {.donate_argnums = {0}});
  for (int round = 0; round < 3; ++round) {
    Array x = arange(4) + 0;  // a single-device array, as every op's result
    Array y = f(x);
    EXPECT_THROW(x.shape(), ValueError);  // donated
    x = Array();  // its impl goes back to the thread's cache, marked deleted
    Array z = arange(4) + 10;
    EXPECT_THAT(z.to_vector<int32_t>(), ElementsAre(10, 11, 12, 13));
    EXPECT_THAT(y.to_vector<int32_t>(), ElementsAre(1, 2, 3, 4));
  }
}

struct CachedItem {
  int value;
  const void* home;
};
std::atomic<int> items_disposed{0};
void dispose_item(CachedItem* p) {
  ++items_disposed;
  delete p;
}

TEST(ThreadCacheTest, KeepsUpToItsCapacityPerThreadAndDisposesAtExit) {
  using Cache = internal::ThreadCache<CachedItem, 2, dispose_item>;
  std::thread([] {
    EXPECT_EQ(Cache::take(), nullptr);
    auto* a = new CachedItem{1, Cache::home()};
    auto* b = new CachedItem{2, Cache::home()};
    auto* c = new CachedItem{3, Cache::home()};
    EXPECT_TRUE(Cache::give(a, a->home));
    EXPECT_TRUE(Cache::give(b, b->home));
    EXPECT_FALSE(Cache::give(c, c->home));  // full: the caller keeps it
    delete c;
    EXPECT_EQ(Cache::take_if([](const CachedItem& i) { return i.value == 1; }), a);
    EXPECT_EQ(Cache::take_if([](const CachedItem& i) { return i.value == 9; }), nullptr);
    EXPECT_TRUE(Cache::give(a, a->home));
    std::thread([] { EXPECT_EQ(Cache::take(), nullptr); }).join();  // per thread
  }).join();
  EXPECT_EQ(items_disposed.load(), 2);  // a and b, at the first thread's exit
}

TEST(ThreadCacheTest, RefusesObjectsAnotherLiveThreadMade) {
  using Cache = internal::ThreadCache<CachedItem, 4, dispose_item>;
  std::atomic<CachedItem*> made{nullptr};
  std::atomic<bool> checked{false};
  std::thread maker([&] {
    made = new CachedItem{1, Cache::home()};
    while (!checked) std::this_thread::yield();  // alive: its home stays its own
  });
  std::thread([&] {
    while (made.load() == nullptr) std::this_thread::yield();
    // Kept by the thread that made it only: its memory stays in that thread's malloc arena.
    EXPECT_FALSE(Cache::give(made.load(), made.load()->home));
    auto* own = new CachedItem{2, Cache::home()};
    EXPECT_TRUE(Cache::give(own, own->home));
    EXPECT_EQ(Cache::take(), own);
    delete own;
    checked = true;
  }).join();
  maker.join();
  delete made.load();
}

// A block that shard_map hands a device is that device's array, even where it shares the input's
// memory with the other devices' blocks.
TEST(ShardMapBlocks, ABlockSharingTheInputsMemoryIsOnItsDevice) {
  Mesh mesh = make_mesh({2}, {"i"}, std::vector<Device>{Device{2}, Device{5}});  // neither owns x
  std::vector<Device> seen(2);
  auto f = shard_map(
      [&](const Array& b) {
        seen[axis_index("i").item<int32_t>()] = b.addressable_shards()[0].device;
        return b.reshape({2, 2}).reshape({4}) * 2;
      },
      mesh, P("i"), P("i"));
  Array y = f(arange(8, float32));
  EXPECT_EQ(seen[0], mesh.devices()[0]);
  EXPECT_EQ(seen[1], mesh.devices()[1]);
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(0, 2, 4, 6, 8, 10, 12, 14));
}

}  // namespace
}  // namespace spmd
