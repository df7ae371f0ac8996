// SPDX-License-Identifier: Apache-2.0
// The backend seam, run over every platform: the CPU backend, the test backend of test_backend/
// (registered from outside the library) and the CUDA backend (skipped, saying why, without 8 CUDA
// devices). Both run shard_map on 1-D and 2-D meshes,
// device_put and host reads, both pmap implementations (nested pmap included) and the fault
// model (a device error, mismatched collectives, a stuck device), and a call after a failed one
// returns the right value. The collectives themselves run over both backends in
// tests/runtime/collectives_test.cc. Test-backend-only cases check that communicators outlive
// calls, that an aborted communicator is not reused, and that nothing leaks.
#include <chrono>
#include <thread>

#include "spmd/pmap.h"
#include "test_backend/test_backend.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int position() { return axis_index("i").item<int32_t>(); }

class Backend : public ::testing::TestWithParam<Platform> {
 protected:
  void SetUp() override {
    const std::string reason = platform_unavailable(GetParam(), 8);
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
  std::vector<Device> pool() const { return devices(GetParam().name()); }
  Mesh mesh(Shape sizes, std::vector<std::string> names) const {
    return make_mesh(std::move(sizes), std::move(names), pool());
  }
  // Every shard of `a` lives on a device of this backend.
  void expect_on_platform(const Array& a) const {
    for (const Shard& s : a.addressable_shards()) EXPECT_EQ(s.device.platform, GetParam());
  }
  std::string name(int id) const {
    return std::string(GetParam().name()) + ":" + std::to_string(id);
  }
};

INSTANTIATE_TEST_SUITE_P(Platforms, Backend,
                         ::testing::Values(Platform::kCpu, testing::kTestPlatform, Platform::kCuda),
                         [](const ::testing::TestParamInfo<Platform>& p) {
                           return std::string(p.param.name());
                         });

TEST_P(Backend, DevicesBelongToThePlatform) {
  std::vector<Device> d = pool();
  ASSERT_EQ(d.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(d[i].platform, GetParam());
    EXPECT_EQ(d[i].id, i);
    EXPECT_EQ(d[i].str(), name(i));
  }
  EXPECT_EQ(device_count(GetParam().name()), 8);
}

TEST_P(Backend, ShardMapOnATwoDimensionalMesh) {
  // Blocks of f32[1,2] over a 2x4 mesh; psum over 'y' sums the four blocks of each row.
  auto f = shard_map([](const Array& b) { return psum(b, "y") * (axis_index("x") + 1); },
                     mesh({2, 4}, {"x", "y"}), P("x", "y"), P("x"));
  Array out = f(farange(16, {2, 8}));
  EXPECT_ARRAY_EQ(out, floats({12, 16, 88, 96}, {2, 2}));
  expect_on_platform(out);
}

TEST_P(Backend, DevicePutAndHostReads) {
  Array x = device_put(iarange(16, {8, 2}), NamedSharding(mesh({8}, {"i"}), P("i")));
  expect_on_platform(x);
  EXPECT_EQ(x.to_vector<int32_t>(), iarange(16, {8, 2}).to_vector<int32_t>());
  // A block already on its device is used in place; the body's result comes back whole.
  auto twice =
      shard_map([](const Array& b) { return b * 2; }, x.sharding().named().mesh(), P("i"), P("i"));
  EXPECT_ARRAY_EQ(twice(x), iarange(16, {8, 2}) * 2);
}

TEST_P(Backend, BodiesReadArraysOfOtherPlatforms) {
  Array w = arange(2);  // on the default platform's first device
  auto f = shard_map([&](const Array& b) { return b + w; }, mesh({4}, {"i"}), P("i"), P("i"));
  Array out = f(arange(8));
  EXPECT_ARRAY_EQ(out, ints({0, 2, 2, 4, 4, 6, 6, 8}));
  expect_on_platform(out);
}

TEST_P(Backend, BothPmapImplementations) {
  std::vector<Device> all = pool();
  PmapOptions on_four{.devices = std::vector<Device>(all.begin(), all.begin() + 4)};
  auto legacy = legacy::pmap([](const Array& x) { return x - psum(x, "i"); }, "i", on_four);
  auto compat = compat::pmap([](const Array& x) { return x - psum(x, "i"); }, "i", on_four);
  Array expected = floats({-12, -15, -10, -13, -8, -11, -6, -9}, {4, 2});
  EXPECT_ARRAY_EQ(legacy(farange(8, {4, 2})), expected);
  EXPECT_ARRAY_EQ(compat(farange(8, {4, 2})), expected);
  expect_on_platform(compat(farange(8, {4, 2})));
}

TEST_P(Backend, NestedPmapOnBothImplementations) {
  PmapOptions all{.devices = pool()};
  auto body = [](const Array& x) { return psum(x, "i") + psum(x, "j") * 10; };
  auto legacy = legacy::pmap(legacy::pmap(body, "j"), "i", all);
  auto compat = compat::pmap(compat::pmap(body, "j"), "i", all);
  Array x = iarange(8, {2, 4});
  // psum over i adds the two rows; psum over j adds a row's four values.
  Array expected = ints({64, 66, 68, 70, 224, 226, 228, 230}, {2, 4});
  EXPECT_ARRAY_EQ(legacy(x), expected);
  EXPECT_ARRAY_EQ(compat(x), expected);
}

TEST_P(Backend, DeviceErrorReleasesTheOthersAndTheNextCallWorks) {
  auto start = Clock::now();
  auto bad = shard_map(
      [](const Array& b) {
        if (position() == 3) throw std::runtime_error("bad shard");
        return psum(b, "i");
      },
      mesh({8}, {"i"}), P("i"), P());
  expect_error<DeviceError>([&] { bad(arange(16)); }, {"[on " + name(3) + "]", "bad shard"});
  EXPECT_LT(seconds_since(start), 5.0);
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh({8}, {"i"}), P("i"), P());
  EXPECT_ARRAY_EQ(good(arange(16)), ints({56, 64}));
}

TEST_P(Backend, MismatchedCollectivesAreReported) {
  auto f = shard_map([](const Array& b) { return position() == 0 ? psum(b, "i") : pmax(b, "i"); },
                     mesh({4}, {"i"}), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { f(arange(8)); },
                                   {"ran different collectives at collective #1"});
  auto skip = shard_map([](const Array& b) { return position() == 2 ? b : psum(b, "i"); },
                        mesh({4}, {"i"}), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { skip(arange(8)); }, {name(2) + " returned from the body"});
}

TEST_P(Backend, StuckDeviceTimesOutNamingIt) {
  // Position 1's body is held after collective #1 unless the calling thread runs it (a caller held
  // in a body cannot return before it does: the documented limit), so the call is retried until a
  // worker thread ran it.
  Holder holder;
  auto f = shard_map(
      [&](const Array& b) {
        Array s = psum(b, "i");
        if (position() == 1) holder.hold_unless_on_caller();
        return psum(s, "i");
      },
      mesh({4}, {"i"}), P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 0.3});
  double elapsed = 0;
  for (int attempt = 0; attempt < 20 && !holder.held; ++attempt) {
    auto start = Clock::now();
    try {
      f(arange(8));
    } catch (const CollectiveTimeout& e) {
      elapsed = seconds_since(start);
      EXPECT_THAT(e.what(), ::testing::HasSubstr("did not complete within 0.3 s"));
      EXPECT_THAT(e.what(),
                  ::testing::HasSubstr(name(1) + " is running user code after collective #1"));
    }
  }
  ASSERT_TRUE(holder.held) << name(1) << "'s body ran on the calling thread in every attempt";
  EXPECT_GE(elapsed, 0.3);
  EXPECT_LT(elapsed, 3.0);  // the caller did not wait for the held body (held up to 10 s)
  // The held body's device is quarantined until the body returns, then usable again.
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh({4}, {"i"}), P("i"),
                        P("i"), {.check_vma = false});
  expect_error<DeviceUnavailable>([&] { good(arange(8)); },
                                  {"UNAVAILABLE: " + name(1) + " is quarantined"});
  holder.release = true;
  EXPECT_ARRAY_EQ(when_available([&] { return good(arange(8)); }),
                  ints({12, 16, 12, 16, 12, 16, 12, 16}));
}

Array psum_on(const Mesh& mesh) {
  return shard_map([](const Array& b) { return psum(b, "i"); }, mesh, P("i"), P())(arange(8));
}

TEST(TestBackend, CommunicatorsOutliveCalls) {
  std::vector<Device> d = devices(kTestPlatform.name());
  // A member set no other test uses: devices 7, 5, 3, 1 in that order.
  auto fresh_mesh = [&] { return Mesh({d[7], d[5], d[3], d[1]}, {4}, {"i"}); };
  long before = test_backend_handles_made();
  EXPECT_ARRAY_EQ(psum_on(fresh_mesh()), ints({12, 16}));
  EXPECT_EQ(test_backend_handles_made() - before, 4);  // one handle per rank
  // A new Mesh object over the same devices: the pooled communicator serves it.
  EXPECT_ARRAY_EQ(psum_on(fresh_mesh()), ints({12, 16}));
  EXPECT_EQ(test_backend_handles_made() - before, 4);
}

TEST(TestBackend, CollectivesOverTheSameDevicesShareCommunicators) {
  std::vector<Device> d = devices(kTestPlatform.name());
  // A member set no other test uses: devices 1, 3, 5, 7 in that order. A call keeps the
  // communicators of a collective's groups together with their layout for the next call over the
  // same axes; another collective over the same devices takes them from there.
  const std::vector<Device> members{d[1], d[3], d[5], d[7]};
  auto line = [&] { return Mesh(members, {4}, {"i"}); };
  auto square = shard_map(
      [](const Array& b) {
        return psum(b, {"a", "b"});
      },
      Mesh(members, {2, 2}, {"a", "b"}), P({"a", "b"}), P());
  long before = test_backend_handles_made();
  EXPECT_ARRAY_EQ(psum_on(line()), ints({12, 16}));
  EXPECT_EQ(test_backend_handles_made() - before, 4);
  for (int k = 0; k < 3; ++k) {
    EXPECT_ARRAY_EQ(square(arange(8)), ints({12, 16}));
    EXPECT_ARRAY_EQ(psum_on(line()), ints({12, 16}));
  }
  EXPECT_EQ(test_backend_handles_made() - before, 4);
}

TEST(TestBackend, AnAbortedCommunicatorIsNotReused) {
  std::vector<Device> d = devices(kTestPlatform.name());
  Mesh mesh({d[6], d[4], d[2], d[0]}, {4}, {"i"});
  EXPECT_ARRAY_EQ(psum_on(mesh), ints({12, 16}));
  long before = test_backend_handles_made();
  auto bad = shard_map(
      [](const Array& b) {
        Array s = psum(b, "i");
        if (position() == 0) throw std::runtime_error("after the first psum");
        return psum(s, "i");
      },
      mesh, P("i"), P());
  EXPECT_THROW(bad(arange(8)), DeviceError);
  EXPECT_EQ(test_backend_handles_made(), before);  // the pooled one served the failed call
  EXPECT_ARRAY_EQ(psum_on(mesh), ints({12, 16}));
  EXPECT_EQ(test_backend_handles_made() - before, 4);  // ... and was replaced after it
}

TEST(TestBackend, NothingLeaks) {
  long before = test_backend_live_buffers();
  {
    Mesh mesh = make_mesh({8}, {"i"}, devices(kTestPlatform.name()));
    Array x = device_put(arange(64), NamedSharding(mesh, P("i")));
    auto f = shard_map([](const Array& b) { return all_gather(b, "i", {.tiled = true}) * 2; }, mesh,
                       P("i"), P(), {.check_vma = false});
    for (int k = 0; k < 5; ++k) EXPECT_EQ(f(x).to_vector<int32_t>()[63], 126);
  }
  EXPECT_EQ(test_backend_live_buffers(), before);
}

TEST(Registry, PlatformsNotInUseAreNamed) {
  expect_error<ValueError>([] { devices("tpu"); }, {"'tpu' is not in use", "cpu, test"});
  EXPECT_EQ(default_backend(), "cpu");
}

}  // namespace
}  // namespace spmd
