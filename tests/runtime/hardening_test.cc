// SPDX-License-Identifier: Apache-2.0
// Bad input at the API boundary: every bad value gets a named spmd error naming the argument and
// the value, never a crash, a phantom device, silently wrong numbers or a std:: exception. One
// block per kind of value (docs/design.md, "Faults"; runtime/src/checks.h).
#include <climits>
#include <cmath>
#include <limits>

#include "spmd/pmap.h"
#include "spmd/random.h"
#include "spmd/testing.h"
#include "test_backend/test_backend.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

constexpr int64_t k2to33 = int64_t{1} << 33;
constexpr int64_t k2to31 = int64_t{1} << 31;
constexpr int64_t k2to62 = int64_t{1} << 62;
constexpr int64_t k2to32 = int64_t{1} << 32;

// ---- shapes and extents ----

TEST(Shapes, NegativeExtentsAreValueErrorsNamingTheArgument) {
  expect_error<ValueError>(
      [] {
        zeros({-3, -4}).str();
      },
      {"zeros shape must have every element be nonnegative, got (-3, -4)",
       "negative dimensions are not allowed"});
  expect_error<ValueError>([] { ones({-1}).size(); }, {"ones shape", "got (-1,)"});
  expect_error<ValueError>([] { full({2, -1}, 1.0); }, {"full shape", "got (2, -1)"});
  expect_error<ValueError>(
      [] {
        broadcast_to(arange(2), {-1, 2});
      },
      {"broadcast_to shape", "got (-1, 2)"});
  expect_error<ValueError>(
      [] {
        Array::from_vector<float>({}, Shape{-2, 0});
      },
      {"Array::from_vector shape", "got (-2, 0)"});
  expect_error<ValueError>([] { random::uniform(random::PRNGKey(0), {-5}); },
                           {"uniform shape", "got (-5,)"});
  expect_error<ValueError>([] { random::bits(random::PRNGKey(0), {3, -1}); }, {"bits shape"});
  expect_error<ValueError>([] { random::split(random::PRNGKey(0), -1); }, {"num must be >= 0"});
  NamedSharding s(mesh1(2), P("i"));
  expect_error<ValueError>([&] { s.shard_shape({-4}); },
                           {"NamedSharding::shard_shape global_shape", "got (-4,)"});
  EXPECT_EQ(shape_size({0, 3}), 0);
  expect_error<ValueError>([] { shape_size({4, -1}); }, {"shape must have every element"});
}

TEST(Shapes, ElementCountsThatOverflowInt64AreValueErrors) {
  // Both used to give an array of size 0.
  expect_error<ValueError>(
      [] {
        zeros({k2to33, k2to31});
      },
      {"array is too big: zeros shape (8589934592, 2147483648)",
       "more elements than fit in int64"});
  expect_error<ValueError>(
      [] {
        zeros({4, k2to62});
      },
      {"array is too big", "(4, 4611686018427387904)"});
  // The element count fits but the bytes do not.
  expect_error<ValueError>(
      [] { zeros({k2to62}, DType::kFloat64); },
      {"array is too big", "8 bytes", "larger than the maximum possible size"});
  expect_error<ValueError>(
      [] {
        Array::from_vector<float>({}, Shape{k2to32, k2to32, k2to32});
      },
      {"Array::from_vector shape", "more elements than fit in int64"});
  expect_error<ValueError>([] { random::split(random::PRNGKey(0), k2to62 + 1); },
                           {"array is too big", "split"});
  expect_error<ValueError>([] { shape_size({k2to33, k2to33}); }, {"array is too big"});
  // A zero extent makes a shape empty, but its nonzero extents must still multiply within int64
  // (as NumPy): strides are products of trailing extents.
  EXPECT_EQ(zeros({k2to31, 0, k2to31}, DType::kBool).size(), 0);
  expect_error<ValueError>(
      [] {
        zeros({k2to62, 0, k2to62});
      },
      {"array is too big: zeros shape (4611686018427387904, 0, 4611686018427387904)",
       "nonzero extents overflows"});
  expect_error<ValueError>(
      [] {
        zeros({0, k2to62}, DType::kFloat64);
      },
      {"array is too big", "spans 4611686018427387904 elements of 8 bytes"});
}

// Found by tests/fuzz/shapes_fuzz.cc: a zero extent hid the overflow of the extents behind it, and
// the strides of the result overflowed (UBSan: signed integer overflow in dense_strides).
TEST(Shapes, ZeroExtentDoesNotHideAnOverflowFromBroadcastOrReshape) {
  expect_error<ValueError>(
      [] {
        broadcast_to(full({}, 1.0), {0, k2to62, 5});
      },
      {"broadcast_to shape (0, 4611686018427387904, 5)", "array is too big"});
  expect_error<ValueError>(
      [] {
        zeros({0}).reshape({0, k2to62, 5});
      },
      {"reshape new shape", "array is too big"});
  EXPECT_EQ(broadcast_to(full({}, 1.0), {0, 4, 5}).shape(), (Shape{0, 4, 5}));
}

TEST(Shapes, ReshapeChecksItsNewShape) {
  Array x = arange(6);
  expect_error<ValueError>(
      [&] {
        x.reshape({k2to33, k2to33, -1});
      },
      {"reshape new shape", "more elements than fit in int64"});
  expect_error<ValueError>(
      [&] {
        x.reshape({-1, -1});
      },
      {"can only specify one unknown dimension (-1)"});
  expect_error<ValueError>([&] { zeros({0}).reshape({0, -1}); }, {"cannot reshape array"});
  EXPECT_ARRAY_EQ(x.reshape({-1, 2}), iarange(6, {3, 2}));
}

TEST(Shapes, ConcatenatingEmptyArraysWithHugeExtentsIsAValueError) {
  Array e = zeros({k2to62, 0}, DType::kBool);
  expect_error<ValueError>(
      [&] {
        concatenate({e, e, e, e}, 0);
      },
      {"array is too big", "concatenating along dimension 0"});
}

TEST(Shapes, ArangeAndSliceArithmeticDoesNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(arange(kMax - 2, kMax, 1, DType::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{kMax - 2, kMax - 1}));
  EXPECT_EQ(arange(kMin, kMax, kMax, DType::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{kMin, -1, kMax - 1}));
  EXPECT_EQ(arange(0, 5, kMax).to_vector<int32_t>(), std::vector<int32_t>{0});
  expect_error<ValueError>([] { arange(kMin, kMax, 1); },
                           {"array is too big", "more than fit in int64"});
  Array x = arange(10);
  EXPECT_ARRAY_EQ(slice(x, {0}, {10}, {kMax}), ints({0}));
  EXPECT_ARRAY_EQ(slice(x, {kMax}, {kMin}, {kMin}), ints({9}));
  EXPECT_ARRAY_EQ(slice(x, {kMin}, {kMax}, {3}), ints({0, 3, 6, 9}));
  EXPECT_EQ(slice(x, {kMax}, {kMin}, {1}).size(), 0);
}

TEST(Shapes, MeshSizesThatOverflowAreValueErrors) {
  // Used to be accepted as a mesh of size 0.
  expect_error<ValueError>(
      [] {
        make_mesh({k2to32, k2to32}, {"a", "b"});
      },
      {"make_mesh axis sizes (4294967296, 4294967296) multiply to more "
       "devices than fit in int64"});
  expect_error<ValueError>(
      [] {
        Mesh(devices(), {k2to32, k2to32}, {"a", "b"});
      },
      {"Mesh axis sizes"});
  expect_error<ValueError>(
      [] {
        make_mesh({-2, -4}, {"a", "b"});
      },
      {"make_mesh axis sizes must be positive, got (-2, -4)"});
  expect_error<ValueError>([] { make_mesh({16}, {"i"}); }, {"Number of devices 8 must be >="});
}

// ---- axes and positions ----

TEST(Axes, MeshPositionsOutsideTheMeshAreIndexErrors) {
  Mesh mesh = mesh2(2, 4);
  EXPECT_EQ(mesh.coords(5), (std::vector<int64_t>{1, 1}));
  expect_error<IndexError>([&] { mesh.coords(8); }, {"position 8 is out of range"});
  expect_error<IndexError>([&] { mesh.coords(-1); }, {"position -1"});
  expect_error<IndexError>([&] { mesh.linear_index({1}); }, {"coordinates (1,) are not"});
  expect_error<IndexError>([&] { mesh.linear_index({0, 4}); }, {"(0, 4)"});
  EXPECT_EQ(mesh.linear_index({1, 3}), 7);
}

// ---- devices ----

TEST(Devices, UnknownDevicesInAMeshAreValueErrors) {
  std::vector<Device> d = devices();
  // Used to run a body on a phantom cpu:99 (and start a worker thread for it).
  expect_error<ValueError>(
      [&] {
        Mesh({d[0], Device{99}}, {2}, {"i"});
      },
      {"Mesh devices holds cpu:99, which is not a device of this runtime",
       "platform 'cpu' has 8 devices, with ids 0 to 7"});
  // Used to crash in the executor.
  expect_error<ValueError>([&] { Mesh({Device{-1}, d[1]}, {2}, {"i"}); }, {"holds cpu:-1"});
  constexpr Platform kTpu{"tpu"};
  expect_error<ValueError>(
      [&] {
        Mesh({Device{0, kTpu}}, {1}, {"i"});
      },
      {"holds tpu:0, a device of platform 'tpu', which is not in use",
       "the platforms in use are: cpu, test"});
  expect_error<ValueError>(
      [&] {
        Mesh({Device{0, Platform::kCpu, 1}}, {1}, {"i"});
      },
      {"cpu:0 of process 1"});
  expect_error<ValueError>(
      [&] {
        make_mesh({2}, {"i"}, std::vector<Device>{d[3], Device{8}});
      },
      {"holds cpu:8"});
  expect_error<ValueError>(
      [&] {
        Mesh({d[2], d[2]}, {2}, {"i"});
      },
      {"Mesh devices must be distinct, but cpu:2 appears twice"});
  // Devices of two platforms with the same id are distinct.
  Device test0{0, kTestPlatform};
  EXPECT_EQ(Mesh({d[0], test0}, {2}, {"i"}).size(), 2);
}

TEST(Devices, UnknownDevicesForPmapAndDevicePutAreValueErrors) {
  auto f = legacy::pmap([](const Array& x) { return x * 2; }, "i",
                        {.devices = std::vector<Device>{Device{0}, Device{99}}});
  expect_error<ValueError>([&] { f(arange(2)); }, {"pmap's devices holds cpu:99"});
  auto g = compat::pmap([](const Array& x) { return x * 2; }, "i",
                        {.devices = std::vector<Device>{Device{-1}, Device{1}}});
  expect_error<ValueError>([&] { g(arange(2)); }, {"pmap's devices holds cpu:-1"});
  expect_error<ValueError>([] { device_put(arange(4), Device{99}); },
                           {"device_put's device holds cpu:99"});
  EXPECT_ARRAY_EQ(device_put(arange(4), Device{7}), arange(4));
}

TEST(Devices, ACollectiveOverTwoPlatformsIsAValueError) {
  Mesh mixed({devices()[0], Device{1, kTestPlatform}}, {2}, {"i"});
  auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mixed, P("i"), P());
  expect_error<ValueError>([&] { f(arange(4)); },
                           {"runs over cpu:0 and test:1, devices of two platforms"});
  // Without a collective the mesh is fine: each body runs on its own device.
  auto g = shard_map([](const Array& b) { return b + 1; }, mixed, P("i"), P("i"));
  EXPECT_ARRAY_EQ(g(arange(4)), arange(4) + 1);
}

// ---- permutations, groups and other collective parameters ----

TEST(CollectiveParameters, PermutationsAndGroupsAreChecked) {
  Mesh mesh = mesh1(4);
  auto run = [&](auto body) {
    return shard_map(body, mesh, P("i"), P("i"), {.check_vma = false})(arange(8));
  };
  expect_error<ValueError>([&] { run([](const Array& b) {
                                   return ppermute(b, "i", {{0, 4}});
                                 }); },
                           {"ppermute perm indices must be in range [0, 4)"});
  expect_error<ValueError>(
      [&] { run([](const Array& b) {
              return pshuffle(b, "i", {0, 1, 2, 4});
            }); },
      {"`perm` does not represent a permutation: [0, 1, 2, 4]"});
  expect_error<ValueError>([&] { run([](const Array& b) { return pbroadcast(b, "i", -1); }); },
                           {"pbroadcast source -1 is out of range"});
  // An empty group used to make a communicator over no devices.
  expect_error<ValueError>(
      [&] {
        run([](const Array& b) {
          return psum(b, "i", {.axis_index_groups = {{0, 1}, {}, {2, 3}}});
        });
      },
      {"axis_index_groups must not contain an empty group", "[[0, 1], [], [2, 3]]"});
  expect_error<ValueError>([&] { run([](const Array& b) { return all_to_all(b, "i", 0, 1); }); },
                           {"all_to_all concat_axis 1 is out of bounds for array of dimension 1"});
  expect_error<ValueError>(
      [&] { run([](const Array& b) { return all_gather(b, "i", {.axis = INT_MIN}); }); },
      {"all_gather axis -2147483648 is out of bounds"});
}

// ---- memory and threads ----

TEST(Resources, HugeArraysAreResourceExhaustedSayingWhatWasAsked) {
  // Used to throw a bare std::bad_alloc.
  expect_error<ResourceExhausted>([] { zeros({1'000'000'000'000'000}); },
                                  {"RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                                   "4000000000000000 bytes",
                                   "on cpu:0", "(an array of float32[1000000000000000])"});
  expect_error<ResourceExhausted>(
      [] { random::normal(random::PRNGKey(0), {1'000'000'000'000'000}); }, {"RESOURCE_EXHAUSTED"});
  // Inside a body, the device is recorded; the test backend shows nothing leaks.
  const long live = test_backend_live_buffers();
  Mesh mesh = make_mesh({4}, {"i"}, devices(kTestPlatform.name()));
  auto f = shard_map(
      [](const Array& b) {
        Array kept = b * 2;
        if (axis_index("i").item<int32_t>() == 2) return zeros({1'000'000'000'000'000}) + kept[0];
        return psum(kept, "i");
      },
      mesh, P("i"), P("i"), {.check_vma = false});
  try {
    f(arange(8));
    ADD_FAILURE() << "expected ResourceExhausted";
  } catch (const ResourceExhausted& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[on test:2] RESOURCE_EXHAUSTED"));
    ASSERT_TRUE(e.device().has_value());
    EXPECT_EQ(*e.device(), (Device{2, kTestPlatform}));
  }
  EXPECT_EQ(test_backend_live_buffers(), live);
}

TEST(Resources, DeviceCountsHaveABound) {
  expect_error<ValueError>([] { initialize({.cpu_devices = 100000}); },
                           {"InitOptions::cpu_devices must be a whole number from 1 to 4096 (one "
                            "host thread per device), got 100000"});
  expect_error<ValueError>([] { initialize({.cpu_devices = -3}); }, {"got -3"});
}

// ---- timeouts ----

TEST(Timeouts, CollectiveTimeoutsAreCheckedLikeInitialize) {
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e300}) {
    auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(2), P("i"), P(),
                       {.collective_timeout_s = bad});
    expect_error<ValueError>([&] { f(arange(4)); },
                             {"ShardMapOptions::collective_timeout_s must be a positive number "
                              "of seconds, at most 1e+09"});
    expect_error<ValueError>([&] { initialize({.cpu_devices = 8, .collective_timeout_s = bad}); },
                             {"InitOptions::collective_timeout_s must be a positive number"});
  }
  auto ok = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(2), P("i"), P(),
                      {.collective_timeout_s = 1e9});
  EXPECT_ARRAY_EQ(ok(arange(4)), ints({2, 4}));
}

// ---- errors outside the spmd::Error family ----

TEST(Escapes, NullNamesAreTypeErrors) {
  // Used to throw std::logic_error from std::string's constructor.
  expect_error<TypeError>([] { P(nullptr, "i"); }, {"got a null const char*", "spmd::None"});
  auto f = shard_map([](const Array& b) { return psum(b, nullptr); }, mesh1(2), P("i"), P("i"),
                     {.check_vma = false});
  expect_error<TypeError>([&] { f(arange(2)); }, {"axis names must be strings"});
}

TEST(Escapes, NamedShardingOfASingleDeviceArrayIsATypeError) {
  // Used to throw std::bad_optional_access.
  Array x = arange(4);
  EXPECT_FALSE(x.sharding().is_named());
  expect_error<TypeError>([&] { x.sharding().named(); },
                          {"SingleDeviceSharding(cpu:0) is not a NamedSharding", "is_named()"});
}

TEST(Escapes, SideBySideOutputsOutOfRangeIsAnIndexError) {
  testing::SideBySide r;
  r.add("one", arange(2));
  EXPECT_EQ(r.outputs(0).size(), 1u);
  expect_error<IndexError>([&] { r.outputs(1); }, {"path 1 is out of range for 1 paths"});
}

// ---- pmap ----

TEST(Pmap, NoArrayArgumentGetsLegacyJaxsMessage) {
  auto legacy = legacy::pmap([](int k) { return arange(k); }, "i");
  auto compat = compat::pmap([](int k) { return arange(k); }, "i");
  expect_error<ValueError>([&] { legacy(3); },
                           {"pmap wrapped function must be passed at least one argument "
                            "containing an array"});
  expect_error<ValueError>([&] { compat(3); },
                           {"pmap wrapped function must be passed at least one argument "
                            "containing an array"});
  // Arrays that are all unmapped keep the in_axes message.
  auto unmapped = legacy::pmap([](const Array& x) { return x; }, "i", {.in_axes = {std::nullopt}});
  expect_error<ValueError>([&] { unmapped(arange(4)); },
                           {"pmap must have at least one non-None value in in_axes"});
}

// Found by tests/fuzz/sharding_fuzz.cc: the message's "rank should be at least" negated INT_MIN.
TEST(Pmap, InAxesAtTheIntLimitsAreValueErrors) {
  auto identity = [](const Array& x) { return x; };
  for (int k : {INT_MIN, INT_MAX}) {
    const std::string axis = "map its argument along axis " + std::to_string(k);
    expect_error<ValueError>([&] { legacy::pmap(identity, "i", {.in_axes = {k}})(arange(4)); },
                             {axis, "rank should be at least 2147483648, but is only 1"});
    expect_error<ValueError>([&] { compat::pmap(identity, "i", {.in_axes = {k}})(arange(4)); },
                             {axis, "rank should be at least 2147483648, but is only 1"});
  }
}

}  // namespace
}  // namespace spmd
