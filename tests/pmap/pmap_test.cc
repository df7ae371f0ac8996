// SPDX-License-Identifier: Apache-2.0
// pmap conformance: every pmap case of docs/conformance.md (C01-C45) and legacy pmap's errors,
// run against both implementations (the native legacy pmap and the compat shim on shard_map),
// plus nested pmap, donation, and JAX's deprecated helpers.
#include "spmd/pmap.h"

#include <algorithm>
#include <functional>

#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

struct Impl {
  const char* name;
  internal::PmapRunner runner;
};

class Pmap : public ::testing::TestWithParam<Impl> {
 protected:
  template <class F>
  auto pmap(F f, std::string axis = "", PmapOptions options = {}) {
    return internal::make_pmapped(std::move(f), std::move(axis), std::move(options),
                                  GetParam().runner, __FILE__, __LINE__);
  }
};

INSTANTIATE_TEST_SUITE_P(Implementations, Pmap,
                         ::testing::Values(Impl{"legacy", &legacy::run_pmap},
                                           Impl{"compat", &compat::run_pmap}),
                         [](const ::testing::TestParamInfo<Impl>& p) { return p.param.name; });

std::vector<Device> first(int n) {
  std::vector<Device> d = devices();
  return {d.begin(), d.begin() + n};
}

// ---- pmap values (C01-C31) ----

TEST_P(Pmap, C01Square) {
  EXPECT_ARRAY_EQ(pmap([](const Array& x) { return x * x; })(arange(4)), ints({0, 1, 4, 9}));
}

TEST_P(Pmap, C02C03C04Reductions) {
  auto centered = pmap([](const Array& x) { return x - psum(x, "i"); }, "i");
  EXPECT_ARRAY_EQ(centered(farange(8, {4, 2})),
                  floats({-12, -15, -10, -13, -8, -11, -6, -9}, {4, 2}));
  auto ratio = pmap([](const Array& x) { return x / pmean(x, "i"); }, "i");
  EXPECT_ARRAY_EQ(ratio(arange(4, DType::kFloat32)),
                  floats({0.f, 1.f / 1.5f, 2.f / 1.5f, 3.f / 1.5f}));
  auto hi = pmap([](const Array& x) { return pmax(x, "i"); }, "i");
  auto lo = pmap([](const Array& x) { return pmin(x, "i"); }, "i");
  EXPECT_ARRAY_EQ(hi(iarange(8, {4, 2})), ints({6, 7, 6, 7, 6, 7, 6, 7}, {4, 2}));
  EXPECT_ARRAY_EQ(lo(iarange(8, {4, 2})), ints({0, 1, 0, 1, 0, 1, 0, 1}, {4, 2}));
}

TEST_P(Pmap, C05BroadcastArgument) {
  auto f = pmap([](const Array& x, const Array& y) { return std::make_tuple(x + y, y * 2); }, "",
                {.in_axes = {0, std::nullopt}});
  auto [a, b] = f(arange(2, DType::kFloat32), Array::scalar(4.0f));
  EXPECT_ARRAY_EQ(a, floats({4, 5}));
  EXPECT_ARRAY_EQ(b, floats({8, 8}));
}

TEST_P(Pmap, C07InAndOutAxes) {
  auto f = pmap([](const Array& x, const Array& y) { return std::make_tuple(x + y, y * 2); }, "",
                {.in_axes = {1, std::nullopt}, .out_axes = {2, std::nullopt}});
  auto [a, b] = f(iarange(16, {2, 2, 4}), iarange(8, {2, 4}));
  EXPECT_ARRAY_EQ(a, ints({0, 4, 2, 6, 4, 8, 6, 10, 12, 16, 14, 18, 16, 20, 18, 22}, {2, 4, 2}));
  EXPECT_ARRAY_EQ(b, ints({0, 2, 4, 6, 8, 10, 12, 14}, {2, 4}));
}

TEST_P(Pmap, C08UnmappedOutputIsDeviceZeros) {
  std::vector<std::string> warnings;
  WarningHandler previous =
      set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
  auto f = pmap([](const Array& x, const Array& y) { return std::make_tuple(x, y); }, "",
                {.in_axes = {0, std::nullopt}, .out_axes = {std::nullopt, 0}});
  Array x = iarange(8, {4, 2});
  auto [a, b] = f(x, x);
  f(x, x);  // warned once per call site
  set_warning_handler(previous);
  EXPECT_ARRAY_EQ(a, ints({0, 1}));
  EXPECT_ARRAY_EQ(b, stack({x, x, x, x}));
  // Each device still holds its own value, as in JAX.
  EXPECT_ARRAY_EQ(a.addressable_shards()[3].data, ints({6, 7}));
  if (std::string(GetParam().name) == "compat") {
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_THAT(warnings[0], ::testing::HasSubstr("out_axes=nullopt but its value differs"));
  } else {
    EXPECT_TRUE(warnings.empty());
  }
}

TEST_P(Pmap, C09StaticArgument) {
  auto f = pmap([](const Array& x, const std::function<float()>& y) { return x + y(); }, "i");
  std::function<float()> three = [] { return 3.0f; };
  Array x = farange(8, {4, 2});
  EXPECT_ARRAY_EQ(f(x, three), x + 3.0f);
}

TEST_P(Pmap, C11C12C13IndexSizeAndBools) {
  EXPECT_ARRAY_EQ(
      pmap([](const Array& x) { return x + axis_index("i"); }, "i")(ones({4}, DType::kInt32)),
      ints({1, 2, 3, 4}));
  EXPECT_ARRAY_EQ(pmap([](const Array&) { return psum(Array::scalar(1), "i"); }, "i")(arange(4)),
                  ints({4, 4, 4, 4}));
  EXPECT_ARRAY_EQ(
      pmap([](const Array&) { return full({}, axis_size("i"), DType::kInt32); }, "i")(arange(4)),
      ints({4, 4, 4, 4}));
  Array b = Array::from_vector<bool>({true, false});
  EXPECT_ARRAY_EQ(pmap([](const Array& x) { return psum(x, "i"); }, "i")(b), ints({1, 1}));
  EXPECT_ARRAY_EQ(pmap([](const Array& x) { return pmean(x, "i"); }, "i")(b), floats({0.5f, 0.5f}));
}

TEST_P(Pmap, C15C16Permutations) {
  auto shift = pmap([](const Array& x) { return ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}}); }, "i");
  EXPECT_ARRAY_EQ(shift(floats({1, 2, 3, 4})), floats({0, 1, 2, 3}));
  auto shuffle = pmap([](const Array& x) { return pshuffle(x, "i", {3, 0, 1, 2}); }, "i");
  EXPECT_ARRAY_EQ(shuffle(arange(4) * 10), ints({30, 0, 10, 20}));
}

TEST_P(Pmap, C17C18C19AllGather) {
  Array x = iarange(8, {4, 2});
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return all_gather(b, "i"); }, "i")(x),
                  stack({x, x, x, x}));
  Array flat = arange(8);
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return all_gather(b, "i", {.tiled = true}); }, "i")(x),
                  stack({flat, flat, flat, flat}));
  Array y = iarange(12, {4, 3});
  Array yt = transpose(y);
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return all_gather(b, "i", {.axis = -1}); }, "i")(y),
                  stack({yt, yt, yt, yt}));
}

TEST_P(Pmap, C21C22C24C26ScatterAndGroups) {
  Array x = iarange(16, {4, 4});
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return psum_scatter(b, "i"); }, "i")(x),
                  ints({24, 28, 32, 36}));
  EXPECT_ARRAY_EQ(
      pmap([](const Array& b) { return psum_scatter(b, "i", {.tiled = true}); }, "i")(x),
      ints({24, 28, 32, 36}, {4, 1}));
  auto grouped = pmap(
      [](const Array& b) {
        return psum(b, "i", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      "i");
  EXPECT_ARRAY_EQ(grouped(arange(4)), ints({1, 1, 5, 5}));
  auto constant = pmap(
      [](const Array& b) {
        return b -
               psum(Array::scalar(2.0f), "i", {.axis_index_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}}});
      },
      "i");
  Array y = farange(32, {8, 4});
  EXPECT_ARRAY_EQ(constant(y), y - 8.0f);
}

TEST_P(Pmap, C27C29AllToAll) {
  Array x = iarange(16, {4, 4});
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return all_to_all(b, "i", 0, 0); }, "i")(x),
                  transpose(x));
  Array z = iarange(32, {4, 2, 4});
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return pswapaxes(b, "i", 1); }, "i")(z),
                  swapaxes(z, 0, 2));
}

TEST_P(Pmap, C31ExplicitDevices) {
  std::vector<Device> all = devices();
  auto f1 = pmap([](const Array& x) { return x / psum(x, "i"); }, "i", {.devices = first(6)});
  Array x = arange(6, DType::kFloat32);
  EXPECT_ARRAY_EQ(f1(x), x / 15.0f);
  auto f2 = pmap([](const Array& v) { return psum(v * v, "i"); }, "i",
                 {.devices = std::vector<Device>{all[6], all[7]}});
  Array y = f2(floats({2, 3}));
  EXPECT_ARRAY_EQ(y, floats({13, 13}));
  EXPECT_EQ(y.addressable_shards()[0].device.id, 6);
}

TEST_P(Pmap, InputsOnOtherDevicesAreMoved) {
  std::vector<Device> all = devices();
  Mesh elsewhere({all[4], all[5], all[6], all[7]}, {4}, {"k"});
  Array x = device_put(iarange(8, {4, 2}), NamedSharding(elsewhere, P("k")));
  Array y = pmap([](const Array& v) { return v + 1; })(x);
  EXPECT_ARRAY_EQ(y, iarange(8, {4, 2}) + 1);
  EXPECT_EQ(y.addressable_shards()[0].device.id, 0);
}

TEST_P(Pmap, NegativeAxesAreNormalised) {
  auto f = pmap([](const Array& x) { return x * 2; }, "", {.in_axes = {-1}, .out_axes = {-1}});
  Array x = iarange(8, {2, 4});
  EXPECT_ARRAY_EQ(f(x), x * 2);
}

// ---- nested pmap ----

TEST_P(Pmap, C37NestedPmap) {
  auto inner = pmap([](const Array& y) { return y * 2; });
  auto outer = pmap([&](const Array& x) { return inner(x); });
  Array x = farange(80, {4, 2, 10});
  for (int call = 0; call < 2; ++call) EXPECT_ARRAY_EQ(outer(x), x * 2.0f);  // discovery, cached
  expect_error<ValueError>(
      [&] {
        outer(ones({8, 2, 10}));
      },
      {"requires 16 logical devices, but only 8"});
}

TEST_P(Pmap, NestedAxisSwapAndCollectivesOverBothAxes) {
  // testNestedPmapAxisSwap: pmap(pmap(id, in_axes=1, out_axes=0))(A) == A.transpose(0, 2, 1).
  auto swap_inner = pmap([](const Array& y) { return y; }, "j", {.in_axes = {1}, .out_axes = {0}});
  auto swap = pmap([&](const Array& x) { return swap_inner(x); }, "i");
  Array a = iarange(24, {2, 4, 3});
  EXPECT_ARRAY_EQ(swap(a), transpose(a, {0, 2, 1}));

  auto sums_inner = pmap(
      [](const Array& y) {
        return stack({psum(y, "i"), psum(y, "j"), psum(y, {"i", "j"}), axis_index({"i", "j"})});
      },
      "j");
  auto sums = pmap([&](const Array& x) { return sums_inner(x) + psum(x, "i"); }, "i");
  // Device (i, j) holds y = x[i, j] = 4i + j. The inner result for row i is [j][c] with columns
  // psum over i (2j + 4), over j (16i + 6), over both (28) and the position (4i + j); the outer
  // body adds psum(x[i], "i") = [4, 6, 8, 10] to every row.
  std::vector<int32_t> expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int32_t v : {2 * j + 4 + 4, 16 * i + 6 + 6, 28 + 8, 4 * i + j + 10}) {
        expected.push_back(v);
      }
    }
  }
  EXPECT_ARRAY_EQ(sums(iarange(8, {2, 4})), ints(expected, {2, 4, 4}));
}

TEST_P(Pmap, NestedWithOuterDevicesCoversTheGrid) {
  // The outer pmap's devices are the whole 2 x 4 grid (outer axis major), learnt on the first call.
  std::vector<Device> reversed = devices();
  std::reverse(reversed.begin(), reversed.end());
  auto body = [](const Array& y) { return y * 10 + axis_index({"i", "j"}) + psum(y, "i"); };
  auto on_reversed = pmap(pmap(body, "j"), "i", {.devices = reversed});
  auto on_default = pmap(pmap(body, "j"), "i");
  Array x = iarange(8, {2, 4});
  for (int call = 0; call < 2; ++call) {  // discovery, then cached levels
    Array y = on_reversed(x);
    EXPECT_ARRAY_EQ(y, on_default(x));
    EXPECT_EQ(y.addressable_shards()[0].device.id, reversed[0].id);
  }
  auto too_few = pmap(pmap(body, "j"), "i", {.devices = first(4)});
  for (int call = 0; call < 2; ++call) {
    expect_error<ValueError>([&] { too_few(x); },
                             {"pmapped function requires 8 local devices to run due to nested "
                              "pmapped or other parallel functions, but only 4 are available."});
  }
}

TEST_P(Pmap, NestedErrors) {
  auto inner_devices = pmap([](const Array& y) { return y; }, "j", {.devices = first(2)});
  auto outer = pmap([&](const Array& x) { return inner_devices(x); }, "i");
  expect_error<ValueError>(
      [&] {
        outer(iarange(8, {4, 2}));
      },
      {"Nested pmap with explicit devices argument."});
  auto inner = pmap([](const Array& y) { return psum(y, "i"); }, "j");
  auto outer_j = pmap([&](const Array& x) { return psum(x, "j") + inner(x); }, "i");
  expect_error<NameError>([&] { outer_j(iarange(8, {4, 2})); }, {"unbound axis name: j"});
}

// ---- vmap of pmap (JAX's batching rule; docs/conformance.md V06) ----

TEST_P(Pmap, V06CollectivesWithVmapAroundPmap) {
  // VmapPmapCollectivesTest.testCollectivesWithVmap, the (vmap, pmap) third: the body reduces
  // over the vmapped axis and the pmap's at once; it must equal (pmap, pmap) and (vmap, vmap).
  using Collective = Array (*)(const Array&, AxisNames, ReduceOptions);
  for (Collective collective :
       {Collective(psum), Collective(pmean), Collective(pmax), Collective(pmin)}) {
    auto body = [collective](const Array& x, const Array& y) {
      return x + collective(matmul(x, y), {"i", "j"}, {});
    };
    // Integer values: every sum is exact, whatever order the axes are reduced in.
    Array x = farange(2 * 4 * 3 * 3, {2, 4, 3, 3});
    Array by_pmaps = pmap(pmap(body, "j"), "i")(x, x);
    Array by_vmaps =
        vmap(vmap(body, {0}, {0}, {.axis_name = "j"}), {0}, {0}, {.axis_name = "i"})(x, x);
    Array mixed = vmap(pmap(body, "j"), {0}, {0}, {.axis_name = "i"})(x, x);
    EXPECT_ARRAY_EQ(mixed, by_pmaps);
    EXPECT_ARRAY_EQ(mixed, by_vmaps);
  }
}

TEST_P(Pmap, V06VmapOfPmapPlacesBothAxes) {
  // The batch dimension at vmap's in_axes/out_axes, the pmap's at its own (counted without the
  // batch), as vmap(vmap(...)) places them; the body names both axes.
  auto body = [](const Array& v) { return v * 10 + axis_index("b") * 100 + axis_index("p"); };
  Array x = farange(3 * 4 * 2, {2, 4, 3});  // batch of 3 at axis 2, pmap over 4 at axis 1
  auto mixed =
      vmap(pmap(body, "p", {.in_axes = {1}, .out_axes = {0}}), {2}, {1}, {.axis_name = "b"});
  auto reference = vmap(vmap(body, {1}, {0}, {.axis_name = "p"}), {2}, {1}, {.axis_name = "b"});
  EXPECT_ARRAY_EQ(mixed(x), reference(x));
  EXPECT_EQ(mixed(x).shape(), (Shape{4, 3, 2}));
  // Negative axes need the ranks of the call: refused with a message that says so.
  expect_error<NotImplementedError>(
      [&] { vmap(pmap(body, "p", {.in_axes = {-1}}), {0}, {0}, {.axis_name = "b"}); },
      {"negative in_axes entry", "write the non-negative axis"});
}

// ---- pmap errors (C32-C45; legacy texts in both implementations) ----

TEST_P(Pmap, C32C33TooFewDevices) {
  auto f = pmap([](const Array& x) { return 2 * x; });
  expect_error<ValueError>(
      [&] { f(arange(9)); },
      {"compiling computation that requires 9 logical devices, but only 8 XLA devices are "
       "available (num_replicas=9)"});
  expect_error<ValueError>([&] { f(arange(16)); }, {"requires 16 logical devices"});
}

TEST_P(Pmap, C35EmptyDevices) {
  expect_error<ValueError>(
      [&] { pmap([](const Array& x) { return x; }, "", {.devices = std::vector<Device>{}}); },
      {"'devices' argument to pmap must be non-empty, or None."});
}

TEST_P(Pmap, C36UnboundAxis) {
  auto f = pmap([](const Array& x) { return psum(x, "batch"); }, "i");
  expect_error<NameError>([&] { f(arange(4).reshape({4, 1})); }, {"unbound axis name: batch"});
}

TEST_P(Pmap, C38C44AxesNotAPrefix) {
  auto f = pmap([](const Array& x, const Array&) { return x; }, "", {.in_axes = {0, 0, 0}});
  expect_error<ValueError>([&] { f(arange(2), arange(2)); },
                           {"pytree structure error", "pmap in_axes"});
  auto g = pmap([](const Array& x) { return std::make_tuple(x, x); }, "", {.out_axes = {0, 0, 0}});
  expect_error<ValueError>(
      [&] { g(arange(2)); },
      {"pytree structure error: different lengths of tuple at key path", "pmap out_axes"});
}

TEST_P(Pmap, C42C43C45SizeErrors) {
  auto sized = pmap([](const Array& x) { return x; }, "", {.axis_size = 3});
  expect_error<ValueError>([&] { sized(arange(4)); },
                           {"Specified axis_size 3 doesn't match received axis_size 4."});
  auto unmapped = pmap([](const Array& x) { return x; }, "", {.in_axes = {std::nullopt}});
  expect_error<ValueError>([&] { unmapped(ones({4})); },
                           {"pmap must have at least one non-None value in in_axes"});
  auto all_devices = pmap([](const Array& x) { return x; }, "", {.devices = devices()});
  for (int call = 0; call < 2; ++call) {  // the first call learns there is no inner pmap
    expect_error<ValueError>(
        [&] { all_devices(ones({1})); },
        {"Leading axis size of input to pmapped function must equal the number of local devices "
         "passed to pmap. Got axis_size=1, num_local_devices=8."});
  }
}

TEST_P(Pmap, InconsistentSizesAndBadAxes) {
  auto f = pmap([](const Array& x, const Array& y) { return x + y; });
  expect_error<ValueError>([&] { f(arange(8), arange(7)); },
                           {"pmap got inconsistent sizes for array axes to be mapped",
                            "axis 0 of args[1] of type int32[7]"});
  auto g = pmap([](const Array& x) { return x; }, "", {.in_axes = {2}});
  expect_error<ValueError>([&] { g(arange(4)); },
                           {"pmap was requested to map its argument along axis 2"});
  auto h = pmap([](const Array& x) { return x; }, "", {.out_axes = {3}});
  expect_error<ValueError>(
      [&] { h(arange(4)); },
      {"pmap out_axes[0] is 3: axis 3 is out of bounds for array of dimension 1"});
}

// ---- donation ----

TEST_P(Pmap, DonatedArgumentsAreConsumed) {
  auto f = pmap([](const Array& x, const Array& y) { return x + y; }, "", {.donate_argnums = {0}});
  Array x = arange(4), y = arange(4);
  EXPECT_ARRAY_EQ(f(x, y), arange(4) * 2);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_FALSE(y.is_deleted());
  expect_error<ValueError>([&] { x.to_vector<int32_t>(); }, {"has been deleted", "donated"});
  auto bad = pmap([](const Array& a, int) { return a; }, "", {.donate_argnums = {1}});
  Array z = arange(4);
  expect_error<ValueError>([&] { bad(z, 3); }, {"not the position of an Array argument"});
  EXPECT_FALSE(z.is_deleted());
}

// ---- deprecated helpers ----

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(PmapHelpers, DevicePutReplicatedAndSharded) {
  Array r = device_put_replicated(ints({1, 2}), first(4));
  EXPECT_EQ(r.shape(), (Shape{4, 2}));
  EXPECT_ARRAY_EQ(r.addressable_shards()[3].data, ints({1, 2}, {1, 2}));
  Array s = device_put_sharded({ints({1}), ints({2}), ints({3})}, first(3));
  EXPECT_ARRAY_EQ(s, ints({1, 2, 3}, {3, 1}));
  EXPECT_EQ(s.addressable_shards()[2].device.id, 2);
  expect_error<ValueError>([] { device_put_sharded({ints({1})}, first(2)); },
                           {"got 1 arrays for 2 devices"});
}

TEST(PmapHelpers, PvaryIsPcastToVarying) {
  auto f = shard_map([](const Array& b) { return pvary(b, "i"); }, mesh1(4), P(), P("i"));
  EXPECT_ARRAY_EQ(f(ints({5})), ints({5, 5, 5, 5}));
}
#pragma GCC diagnostic pop

// C39: in_axes entries are ints or nullopt; floats and bools do not convert (JAX: TypeError).
static_assert(std::is_convertible_v<int, MapAxis> &&
              std::is_convertible_v<std::nullopt_t, MapAxis>);
static_assert(!std::is_convertible_v<double, MapAxis> && !std::is_convertible_v<bool, MapAxis>);

}  // namespace
}  // namespace spmd
