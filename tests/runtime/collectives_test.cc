// SPDX-License-Identifier: Apache-2.0
// Collectives: JAX's pmap conformance rows for collectives (run as shard_map over a 1-D mesh with
// pmap's squeeze/expand adapter), every collective's semantics and errors, axis_index_groups,
// check_vma typing, dtypes and determinism. The suite is parameterised over backends so that
// every backend runs the same cases: the CPU backend, the test backend of tests/backends/ and the
// CUDA backend (skipped, saying why, without 8 CUDA devices: run scripts/gpu-check.sh).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>

#include "array_impl.h"
#include "test_backend/test_backend.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

class Collectives : public ::testing::TestWithParam<Platform> {
 protected:
  void SetUp() override {
    const std::string reason = platform_unavailable(GetParam(), 8);
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
  Mesh mesh(Shape sizes, std::vector<std::string> names) {
    return make_mesh(std::move(sizes), std::move(names), devices(GetParam().name()));
  }
  // psum of `n` floats per device over `devices` devices equals the rank-order sum, bit for bit,
  // on every device.
  void check_rank_order_sum(int64_t devices, int64_t n);
  // pmap over n devices of this backend (in_axes = out_axes = 0), as in test_util's pmap_like.
  template <class F>
  auto pmap(F f, int64_t n) {
    return shard_map(
        [f](const Array& x) { return expand_dims(f(squeeze(x, std::vector<int>{0})), 0); },
        mesh({n}, {"i"}), P("i"), P("i"), {.check_vma = false});
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, Collectives,
                         ::testing::Values(Platform::kCpu, testing::kTestPlatform, Platform::kCuda),
                         [](const ::testing::TestParamInfo<Platform>& p) {
                           return std::string(p.param.name());
                         });

// ---- pmap collective cases (C02-C29) ----

TEST_P(Collectives, C02Psum) {
  auto f = pmap([](const Array& x) { return x - psum(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(f(farange(8, {4, 2})), floats({-12, -15, -10, -13, -8, -11, -6, -9}, {4, 2}));
}

TEST_P(Collectives, C03Pmean) {
  auto f = pmap([](const Array& x) { return x / pmean(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(f(arange(4, DType::kFloat32)), floats({0.f, 1.f / 1.5f, 2.f / 1.5f, 3.f / 1.5f}));
  auto g = pmap([](const Array& x) { return pmean(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(g(arange(4, DType::kFloat32)), floats({1.5f, 1.5f, 1.5f, 1.5f}));
}

TEST_P(Collectives, C04PmaxPmin) {
  auto hi = pmap([](const Array& x) { return pmax(x, "i"); }, 4);
  auto lo = pmap([](const Array& x) { return pmin(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(hi(iarange(8, {4, 2})), ints({6, 7, 6, 7, 6, 7, 6, 7}, {4, 2}));
  EXPECT_ARRAY_EQ(lo(iarange(8, {4, 2})), ints({0, 1, 0, 1, 0, 1, 0, 1}, {4, 2}));
}

TEST_P(Collectives, C11AxisIndex) {
  auto f = pmap([](const Array& x) { return x + axis_index("i"); }, 4);
  EXPECT_ARRAY_EQ(f(ones({4}, DType::kInt32)), ints({1, 2, 3, 4}));
}

TEST_P(Collectives, C12AxisSizeAndConstantPsum) {
  auto size = pmap([](const Array&) { return full({}, axis_size("i"), DType::kInt32); }, 4);
  auto constant = pmap([](const Array&) { return psum(Array::scalar(1), "i"); }, 4);
  EXPECT_ARRAY_EQ(size(arange(4)), ints({4, 4, 4, 4}));
  EXPECT_ARRAY_EQ(constant(arange(4)), ints({4, 4, 4, 4}));
}

TEST_P(Collectives, C13BoolPsumAndPmean) {
  Array x = Array::from_vector<bool>({true, false});
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return psum(b, "i"); }, 2)(x), ints({1, 1}));
  EXPECT_ARRAY_EQ(pmap([](const Array& b) { return pmean(b, "i"); }, 2)(x), floats({0.5f, 0.5f}));
}

TEST_P(Collectives, C15PpermuteNonDestinationsGetZeros) {
  auto f = pmap([](const Array& x) { return ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}}); }, 4);
  EXPECT_ARRAY_EQ(f(floats({1, 2, 3, 4})), floats({0, 1, 2, 3}));
}

TEST_P(Collectives, C16Pshuffle) {
  auto f = pmap([](const Array& x) { return pshuffle(x, "i", {3, 0, 1, 2}); }, 4);
  EXPECT_ARRAY_EQ(f(arange(4) * 10), ints({30, 0, 10, 20}));
}

TEST_P(Collectives, PargmaxPargminGiveTheSmallestPositionOfTheExtremum) {
  // Per element over 4 devices: [3, 1], [5, 1], [5, 0], [2, 0] -> max at 1 (tie 1, 2), min at 3.
  Array x = floats({3, 1, 5, 1, 5, 0, 2, 0}, {4, 2});
  auto argmax = pmap([](const Array& b) { return pargmax(b, "i"); }, 4);
  auto argmin = pmap([](const Array& b) { return pargmin(b, "i"); }, 4);
  EXPECT_ARRAY_EQ(argmax(x), ints({1, 0, 1, 0, 1, 0, 1, 0}, {4, 2}));
  EXPECT_ARRAY_EQ(argmin(x), ints({3, 2, 3, 2, 3, 2, 3, 2}, {4, 2}));
  auto nan = pmap([](const Array& b) { return pargmax(b, "i"); }, 2);
  EXPECT_ARRAY_EQ(nan(floats({1, NAN})), ints({INT32_MAX, INT32_MAX}));
  auto two_axes = shard_map(
      [](const Array& b) {
        return pargmin(b, {"i", "j"});
      },
      mesh({2, 2}, {"i", "j"}), P({"i", "j"}), P({"i", "j"}));
  expect_error<TypeError>([&] { two_axes(arange(4)); },
                          {"pargmin only accepts a single axis, got ('i', 'j')"});
}

TEST_P(Collectives, PbroadcastCopiesTheSourcePosition) {
  auto f = pmap([](const Array& x) { return pbroadcast(x, "i", 2); }, 4);
  EXPECT_ARRAY_EQ(f(iarange(8, {4, 2})), ints({4, 5, 4, 5, 4, 5, 4, 5}, {4, 2}));
  // As in JAX the result keeps the input's type (varying), so out_specs must keep 'i'.
  auto replicated = shard_map([](const Array& b) { return pbroadcast(b, "i", 0); },
                              mesh({4}, {"i"}), P("i"), P());
  expect_error<ValueError>([&] { replicated(arange(4)); }, {"could not infer replication"});
  auto bad = pmap([](const Array& x) { return pbroadcast(x, "i", 4); }, 4);
  expect_error<ValueError>([&] { bad(arange(4)); },
                           {"pbroadcast source 4 is out of range for the axes 'i' of size 4"});
}

TEST_P(Collectives, C17C18C19AllGather) {
  Array x = iarange(8, {4, 2});
  auto stacked = pmap([](const Array& b) { return all_gather(b, "i"); }, 4);
  EXPECT_ARRAY_EQ(stacked(x), stack({x, x, x, x}));
  auto tiled = pmap([](const Array& b) { return all_gather(b, "i", {.tiled = true}); }, 4);
  EXPECT_ARRAY_EQ(tiled(x), stack({arange(8), arange(8), arange(8), arange(8)}));
  Array y = iarange(12, {4, 3});
  auto last = pmap([](const Array& b) { return all_gather(b, "i", {.axis = -1}); }, 4);
  Array yt = transpose(y);
  EXPECT_ARRAY_EQ(last(y), stack({yt, yt, yt, yt}));
}

TEST_P(Collectives, C21C22PsumScatter) {
  Array x = iarange(16, {4, 4});
  auto untiled = pmap([](const Array& b) { return psum_scatter(b, "i"); }, 4);
  auto tiled = pmap([](const Array& b) { return psum_scatter(b, "i", {.tiled = true}); }, 4);
  EXPECT_ARRAY_EQ(untiled(x), ints({24, 28, 32, 36}));
  EXPECT_ARRAY_EQ(tiled(x), ints({24, 28, 32, 36}, {4, 1}));
}

// Complex sums reach every backend as pairs of their real type (collectives.cc); compared on the
// host.
TEST_P(Collectives, ComplexPsumAndPsumScatterSumBothParts) {
  using c64 = std::complex<float>;
  const Array x = Array::from_vector<c64>({{1, 2}, {3, -1}, {-2, 0.5f}, {4, 4}});
  auto sum = pmap([](const Array& b) { return psum(b, "i"); }, 4);
  EXPECT_EQ(sum(x).to_vector<c64>(), std::vector<c64>(4, c64(6, 5.5f)));
  auto sum128 = pmap([](const Array& b) { return psum(b, "i"); }, 4);
  EXPECT_EQ(sum128(x.astype(complex128)).to_vector<std::complex<double>>(),
            std::vector<std::complex<double>>(4, {6, 5.5}));
  auto scatter = pmap([](const Array& b) { return psum_scatter(b, "i"); }, 4);
  EXPECT_EQ(scatter(stack({x, x, x, x})).to_vector<c64>(),
            (std::vector<c64>{{4, 8}, {12, -4}, {-8, 2}, {16, 16}}));
  auto gather = pmap([](const Array& b) { return all_gather(b, "i"); }, 4);
  const std::vector<c64> gathered = gather(x).to_vector<c64>();
  EXPECT_EQ(std::vector<c64>(gathered.begin() + 12, gathered.end()), x.to_vector<c64>());
}

TEST_P(Collectives, C24PsumWithGroups) {
  auto f = pmap(
      [](const Array& b) {
        return psum(b, "i", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      4);
  EXPECT_ARRAY_EQ(f(arange(4)), ints({1, 1, 5, 5}));
  EXPECT_ARRAY_EQ(f(iarange(16, {4, 4})),
                  ints({4, 6, 8, 10, 4, 6, 8, 10, 20, 22, 24, 26, 20, 22, 24, 26}, {4, 4}));
}

TEST_P(Collectives, C26ConstantPsumWithGroups) {
  auto f = pmap(
      [](const Array& x) {
        Array two = Array::scalar(2.0f);
        return x - psum(two, "i", {.axis_index_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}}});
      },
      8);
  Array x = farange(32, {8, 4});
  EXPECT_ARRAY_EQ(f(x), x - 8.0f);
}

TEST_P(Collectives, C27AllToAll) {
  auto f = pmap([](const Array& x) { return all_to_all(x, "i", 0, 0); }, 4);
  Array x = iarange(16, {4, 4});
  EXPECT_ARRAY_EQ(f(x), transpose(x));
}

TEST_P(Collectives, C29Pswapaxes) {
  auto f = pmap([](const Array& x) { return pswapaxes(x, "i", 1); }, 4);
  Array x = iarange(32, {4, 2, 4});
  EXPECT_ARRAY_EQ(f(x), swapaxes(x, 0, 2));
}

TEST_P(Collectives, C31DeviceSubsets) {
  std::vector<Device> all = mesh({8}, {"i"}).devices();
  Mesh first6({all.begin(), all.begin() + 6}, {6}, {"i"});
  Mesh last2({all.end() - 2, all.end()}, {2}, {"i"});
  auto f1 = shard_map([](const Array& x) { return x / psum(x, "i"); }, first6, P("i"), P("i"));
  auto f2 = shard_map([](const Array& x) { return psum(x * x, "i"); }, last2, P("i"), P());
  Array x = arange(6, DType::kFloat32);
  EXPECT_ARRAY_EQ(f1(x), x / 15.0f);
  EXPECT_ARRAY_EQ(f2(floats({2, 3})), floats({13}));
}

// ---- all_to_all and all_gather layouts ----

TEST_P(Collectives, AllToAllIdentityMatchesMoveaxis) {
  // JAX's identity for the untiled form: pmap(all_to_all(., s, c))(x) equals
  // moveaxis(x, (0, s + 1), (c + 1, 0)).
  Array x = iarange(64, {4, 4, 4});
  for (int split : {0, 1}) {
    for (int concat : {0, 1}) {
      auto f = pmap([=](const Array& b) { return all_to_all(b, "i", split, concat); }, 4);
      std::vector<int> order;
      for (int d = 0; d < 3; ++d) {
        if (d != 0 && d != split + 1) order.push_back(d);
      }
      order.insert(order.begin(), split + 1);  // destination 0 first, as NumPy inserts
      order.insert(order.begin() + concat + 1, 0);
      EXPECT_ARRAY_EQ(f(x), transpose(x, order)) << "split " << split << " concat " << concat;
    }
  }
}

TEST_P(Collectives, AllToAllTiledOnSecondDimension) {
  auto f = shard_map([](const Array& b) { return all_to_all(b, "i", 1, 0, {.tiled = true}); },
                     mesh({2}, {"i"}), P("i", None), P(None, "i"));
  // Device p receives columns [2p, 2p+2) of every device's rows: the identity on the global
  // array (rows split -> columns split).
  Array x = iarange(16, {4, 4});
  EXPECT_ARRAY_EQ(f(x), x);
}

TEST_P(Collectives, AllGatherOverTwoAxesFollowsCallerOrder) {
  Mesh m = mesh({2, 2}, {"i", "j"});
  auto ij = shard_map(
      [](const Array& b) {
        return all_gather(b, {"i", "j"}, {.tiled = true, .to = To::kInvariant});
      },
      m, P({"i", "j"}), P());
  auto ji = shard_map(
      [](const Array& b) {
        return all_gather(b, {"j", "i"}, {.tiled = true, .to = To::kInvariant});
      },
      m, P({"i", "j"}), P());
  EXPECT_ARRAY_EQ(ij(arange(4)), arange(4));
  EXPECT_ARRAY_EQ(ji(arange(4)), ints({0, 2, 1, 3}));
}

TEST_P(Collectives, PsumScatterOnInnerDimensionAndNegativeAxis) {
  auto f = pmap(
      [](const Array& b) { return psum_scatter(b, "i", {.scatter_dimension = -1, .tiled = true}); },
      2);
  Array x = iarange(2 * 3 * 4, {2, 3, 4});
  // Sum over devices, then device p keeps columns [2p, 2p+2).
  Array total = add(take(x, 0, 0), take(x, 1, 0));
  EXPECT_ARRAY_EQ(f(x), stack({slice(total, {0, 0}, {3, 2}), slice(total, {0, 2}, {3, 4})}));
}

TEST_P(Collectives, MultiAxisPpermuteInMeshOrder) {
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, {"i", "j"}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      mesh({2, 2}, {"i", "j"}), P({"i", "j"}), P({"i", "j"}));
  EXPECT_ARRAY_EQ(f(arange(4)), ints({3, 0, 1, 2}));
}

TEST_P(Collectives, PpermuteIndicesOutOfRangeAreErrors) {
  // JAX: "ppermute perm indices must be in range"; they used to wrap silently ({0, 9} on an axis
  // of size 2 moved position 0 to position 1).
  auto far = pmap([](const Array& x) { return ppermute(x, "i", {{0, 9}}); }, 2);
  expect_error<ValueError>(
      [&] {
        far(ints({1, 2}));
      },
      {"ppermute perm indices must be in range [0, 2) for the axes 'i'",
       "got (0, 9) in perm ((0, 9),)"});
  auto negative = pmap([](const Array& x) { return ppermute(x, "i", {{-1, 0}, {0, 1}}); }, 4);
  expect_error<ValueError>(
      [&] {
        negative(ints({1, 2, 3, 4}));
      },
      {"must be in range [0, 4)", "got (-1, 0)"});
  auto in_range = pmap([](const Array& x) { return ppermute(x, "i", {{3, 0}, {0, 1}}); }, 4);
  EXPECT_ARRAY_EQ(in_range(ints({1, 2, 3, 4})), ints({4, 1, 0, 0}));
}

// ---- axis_index_groups ----

TEST_P(Collectives, GroupedPsumUnderCheckVmaIsSupported) {
  // S36: JAX raises NotImplementedError here; spmd computes the group sums and types the result
  // as still varying over 'i' (groups hold different values), so out_specs must keep 'i'.
  ReduceOptions groups{.axis_index_groups = {{0, 1}, {2, 3}}};
  auto f = shard_map([=](const Array& b) { return psum(b, "i", groups); }, mesh({4}, {"i"}), P("i"),
                     P("i"));
  EXPECT_ARRAY_EQ(f(arange(4)), ints({1, 1, 5, 5}));
  auto replicated = shard_map([=](const Array& b) { return psum(b, "i", groups); },
                              mesh({4}, {"i"}), P("i"), P());
  expect_error<ValueError>([&] { replicated(arange(4)); }, {"could not infer replication"});
  auto mean = shard_map([=](const Array& b) { return pmean(b, "i", groups); }, mesh({4}, {"i"}),
                        P("i"), P("i"));
  EXPECT_ARRAY_EQ(mean(arange(4)), floats({0.5f, 0.5f, 2.5f, 2.5f}));
  // JAX 0.10 types a grouped pmax/pmin invariant, so out_specs P() silently returns the first
  // group's value; spmd keeps it varying like the grouped psum.
  auto max_replicated = shard_map([=](const Array& b) { return pmax(b, "i", groups); },
                                  mesh({4}, {"i"}), P("i"), P());
  expect_error<ValueError>([&] { max_replicated(arange(4)); }, {"could not infer replication"});
}

TEST_P(Collectives, UnevenGroupsDivideByTheirOwnSize) {
  // JAX divides by len(groups[0]) for every group (an accident); spmd uses each group's size.
  auto f = pmap(
      [](const Array& b) {
        return pmean(b, "i", {.axis_index_groups = {{0}, {1, 2, 3}}});
      },
      4);
  EXPECT_ARRAY_EQ(f(floats({3, 1, 2, 6})), floats({3, 3, 3, 3}));
}

TEST_P(Collectives, GroupOrderSetsGatherPositions) {
  auto f = pmap(
      [](const Array& b) {
        return all_gather(b, "i", {.axis_index_groups = {{1, 0}, {3, 2}}});
      },
      4);
  EXPECT_ARRAY_EQ(f(ints({10, 11, 12, 13})), ints({11, 10, 11, 10, 13, 12, 13, 12}, {4, 2}));
}

TEST_P(Collectives, GroupErrors) {
  auto cover = pmap(
      [](const Array& b) {
        return psum(b, "i", {.axis_index_groups = {{0, 1}, {1, 2}}});
      },
      4);
  expect_error<ValueError>([&] { cover(arange(4)); },
                           {"axis_index_groups must cover all indices exactly once"});
  auto partial = pmap(
      [](const Array& b) {
        return psum(b, "i", {.axis_index_groups = {{0, 1}}});
      },
      4);
  expect_error<ValueError>([&] { partial(arange(4)); }, {"must cover all indices exactly once"});
  auto uneven = pmap(
      [](const Array& b) {
        return all_gather(b, "i", {.axis_index_groups = {{0}, {1, 2, 3}}});
      },
      4);
  expect_error<ValueError>([&] { uneven(arange(4)); }, {"must all be the same size"});
  auto a2a = pmap(
      [](const Array& b) {
        return all_to_all(b.reshape({1}), "i", 0, 0, {.axis_index_groups = {{0}, {1, 2, 3}}});
      },
      4);
  expect_error<ValueError>([&] { a2a(arange(4)); }, {"Replica groups must be equally sized"});
  auto invariant = pmap(
      [](const Array& b) {
        return all_gather(b, "i", {.to = To::kInvariant, .axis_index_groups = {{0, 1}, {2, 3}}});
      },
      4);
  expect_error<ValueError>([&] { invariant(arange(4)); }, {"does not take axis_index_groups"});
}

// ---- collective errors ----

TEST_P(Collectives, UnboundAxisNames) {
  expect_error<NameError>([] { psum(arange(4), "batch"); },
                          {"Found an unbound axis name: batch. To fix this, please call psum "
                           "under `spmd::shard_map`"});
  auto f = pmap([](const Array& x) { return all_gather(x, "k"); }, 4);
  expect_error<NameError>([&] { f(arange(4)); }, {"Found an unbound axis name: k", "all_gather"});
  expect_error<NameError>([] { axis_index("i"); }, {"Found an unbound axis name: i"});
  auto twice = pmap([](const Array& x) { return psum(x, {"i", "i"}); }, 4);
  expect_error<ValueError>([&] { twice(arange(4)); }, {"axis name 'i' twice"});
}

TEST_P(Collectives, S35PpermuteAxesOutOfMeshOrder) {
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, {"j", "i"}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      mesh({2, 2}, {"i", "j"}), P({"j", "i"}), P({"j", "i"}));
  expect_error<RuntimeError>([&] { f(arange(4)); },
                             {"Make sure that the axis_name passed to spmd::ppermute is in the "
                              "same order as the axis_names declared on the mesh"});
}

TEST_P(Collectives, PshuffleAxesOutOfMeshOrder) {
  auto f = shard_map(
      [](const Array& b) {
        return pshuffle(b, {"j", "i"}, {1, 2, 3, 0});
      },
      mesh({2, 2}, {"i", "j"}), P({"j", "i"}), P({"j", "i"}));
  expect_error<RuntimeError>([&] { f(arange(4)); },
                             {"axis_name passed to spmd::pshuffle is in the same order as the "
                              "axis_names declared on the mesh"});
}

TEST_P(Collectives, PsumScatterRejectsBool) {
  // JAX reduces with add, which rejects bool (psum itself sums bool as int32).
  auto f = pmap([](const Array& b) { return psum_scatter(b, "i", {.tiled = true}); }, 2);
  expect_error<TypeError>(
      [&] {
        f(Array::from_vector<bool>({true, false, true, true}, Shape{2, 2}));
      },
      {"add does not accept dtype bool"});
}

TEST_P(Collectives, S38S39SizeErrors) {
  auto a2a = pmap([](const Array& x) { return all_to_all(x, "i", 0, 0); }, 2);
  expect_error<ValueError>(
      [&] {
        a2a(iarange(6, {2, 3}));
      },
      {"all_to_all requires the size of the mapped axis axis_name to equal x.shape[split_axis], "
       "but they are 2 and 3 respectively."});
  auto a2a_tiled =
      pmap([](const Array& x) { return all_to_all(x, "i", 0, 0, {.tiled = true}); }, 2);
  expect_error<ValueError>(
      [&] {
        a2a_tiled(iarange(6, {2, 3}));
      },
      {"The size of all_to_all split_axis (3) has to be divisible by the "
       "size of the named axis 'i' (2)"});
  auto scatter = pmap([](const Array& x) { return psum_scatter(x, "i"); }, 2);
  expect_error<ValueError>(
      [&] {
        scatter(iarange(6, {2, 3}));
      },
      {"reduce_scatter operand scatter dimension size 3 must match shard "
       "count 2"});
  auto scatter_tiled =
      pmap([](const Array& x) { return psum_scatter(x, "i", {.tiled = true}); }, 2);
  expect_error<ValueError>(
      [&] {
        scatter_tiled(iarange(6, {2, 3}));
      },
      {"tiled reduce_scatter operand scatter dimension size 3 must be "
       "divisible by shard_count 2"});
  auto gather = pmap([](const Array& x) { return all_gather(x, "i", {.axis = 2}); }, 2);
  expect_error<ValueError>([&] { gather(iarange(6, {2, 3})); }, {"out of bounds"});
}

TEST_P(Collectives, S40S47PermutationErrors) {
  auto dup = pmap([](const Array& x) { return ppermute(x, "i", {{0, 1}, {1, 1}}); }, 2);
  expect_error<ValueError>([&] { dup(arange(2)); },
                           {"ppermute sources and destinations must be unique, got ((0, 1), (1, "
                            "1))."});
  auto bad = pmap([](const Array& x) { return pshuffle(x, "i", {1, 1, 2, 3}); }, 4);
  expect_error<ValueError>([&] { bad(arange(4)); },
                           {"`perm` does not represent a permutation: [1, 1, 2, 3]"});
  auto short_perm = pmap([](const Array& x) { return pshuffle(x, "i", {1, 0}); }, 4);
  expect_error<ValueError>([&] { short_perm(arange(4)); }, {"has 2 entries", "4 positions"});
}

TEST_P(Collectives, UnsupportedToValues) {
  auto f = pmap([](const Array& x) { return all_gather(x, "i", {.to = To::kReduced}); }, 2);
  expect_error<NotImplementedError>([&] { f(arange(2)); }, {"reduced"});
}

// ---- check_vma typing ----

TEST_P(Collectives, VaryingAxesFollowJaxRules) {
  Mesh m = mesh({4}, {"i"});
  auto replicated = [&](auto body) {
    return shard_map(body, m, P("i"), P())(arange(16, DType::kFloat32));
  };
  // Reductions make the result invariant; so do invariant gathers.
  EXPECT_ARRAY_EQ(replicated([](const Array& b) { return pmean(b, "i"); }), floats({6, 7, 8, 9}));
  EXPECT_ARRAY_EQ(replicated([](const Array& b) { return pmax(b, "i") + pmin(b, "i"); }),
                  floats({12, 14, 16, 18}));
  // Everything else is varying: ppermute, psum_scatter, all_to_all, axis_index, mixing.
  for (auto body : std::vector<std::function<Array(const Array&)>>{
           [](const Array& b) {
             return ppermute(psum(b, "i"), "i", {{0, 1}});
           },
           [](const Array& b) { return psum_scatter(psum(b, "i"), "i", {.tiled = true}); },
           [](const Array& b) { return psum(b, "i") + axis_index("i"); },
           [](const Array& b) { return psum(b, "i") * b; }}) {
    expect_error<ValueError>([&] { replicated(body); }, {"could not infer replication"});
  }
}

TEST_P(Collectives, Pcast) {
  Mesh m = mesh({4}, {"i"});
  auto f = shard_map([](const Array& b) { return pcast(b, "i", To::kVarying); }, m, P(), P("i"));
  EXPECT_ARRAY_EQ(f(ints({7})), ints({7, 7, 7, 7}));
  auto typed = shard_map([](const Array& b) { return pcast(b, "i", To::kVarying); }, m, P(), P());
  expect_error<ValueError>([&] { typed(ints({7})); }, {"could not infer replication"});
  auto again =
      shard_map([](const Array& b) { return pcast(b, "i", To::kVarying); }, m, P("i"), P("i"));
  expect_error<ValueError>([&] { again(arange(4)); },
                           {"Unsupported pcast from=varying, to='varying'"});
  auto unchecked = shard_map([](const Array& b) { return pcast(b, "i", To::kVarying); }, m, P("i"),
                             P("i"), {.check_vma = false});
  EXPECT_ARRAY_EQ(unchecked(arange(4)), arange(4));
  auto invariant =
      shard_map([](const Array& b) { return pcast(b, "i", To::kInvariant); }, m, P(), P());
  expect_error<ValueError>([&] { invariant(ints({1})); }, {"unexpected `to` value"});
}

// ---- dtypes, determinism, large messages ----

TEST_P(Collectives, PsumDtypes) {
  auto f = pmap([](const Array& x) { return psum(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(f(arange(4, DType::kInt64)), full({4}, 6, DType::kInt64));
  EXPECT_ARRAY_EQ(f(arange(4, DType::kUInt32)), full({4}, 6, DType::kUInt32));
  EXPECT_ARRAY_EQ(f(arange(4, DType::kFloat64)), full({4}, 6, DType::kFloat64));
  EXPECT_ARRAY_EQ(f(arange(4, DType::kFloat16)), full({4}, 6, DType::kFloat16));
  // int32 sums wrap like XLA's.
  Array big = full({4}, 1 << 30, DType::kInt32);
  EXPECT_ARRAY_EQ(f(big), full({4}, 0, DType::kInt32));
  // psum keeps narrow integer types (unlike jnp.sum) and wraps in them.
  EXPECT_ARRAY_EQ(f(full({4}, 100, DType::kInt8)), full({4}, -112, DType::kInt8));
  EXPECT_ARRAY_EQ(f(full({4}, 70, DType::kUInt8)), full({4}, 24, DType::kUInt8));
  auto pmax_f = pmap([](const Array& x) { return pmax(x, "i"); }, 4);
  EXPECT_ARRAY_EQ(pmax_f(arange(4).astype(DType::kUInt16) * 20000),
                  full({4}, 60000, DType::kUInt16));
  Array huge = Array::from_vector<uint64_t>({1, 2, 3, 18446744073709551610u});
  EXPECT_ARRAY_EQ(f(huge), Array::from_vector<uint64_t>({0, 0, 0, 0}));
  EXPECT_ARRAY_EQ(pmax_f(huge), full({4}, 1, DType::kUInt64) * huge[3]);
}

TEST_P(Collectives, HalfFloatsAccumulateInFloat32AndRoundOnce) {
  // 256 + 1 + ... + 1 (seven ones) is 263 exactly in float32 and rounds to 264 in bfloat16;
  // adding in bfloat16 step by step would stay at 256.
  auto f = pmap([](const Array& x) { return psum(x, "i"); }, 8);
  Array x = floats({256, 1, 1, 1, 1, 1, 1, 1}).astype(DType::kBFloat16);
  EXPECT_ARRAY_EQ(f(x), full({8}, 264, DType::kBFloat16));
}

TEST_P(Collectives, FloatSumsAreInRankOrderOnEveryDeviceForEverySize) {
  // Leader-computes (small), owner-computes (large) and streaming (>= 4 MiB) all-reduce paths,
  // at two group sizes.
  for (int64_t devices : {2, 8}) {
    for (int64_t n : {3, 1000, 5000, 100003, (1 << 20) + 3}) {  // the last one streams
      check_rank_order_sum(devices, n);
    }
  }
}

void Collectives::check_rank_order_sum(int64_t devices, int64_t n) {
  std::vector<float> values(devices * n);
  for (size_t k = 0; k < values.size(); ++k) {
    values[k] = std::sin(static_cast<float>(k)) * 1e3f + 1e-3f * static_cast<float>(k % 7);
  }
  std::vector<float> expected(n);
  for (int64_t e = 0; e < n; ++e) {
    float acc = values[e];
    for (int q = 1; q < devices; ++q) acc += values[q * n + e];
    expected[e] = acc;
  }
  auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh({devices}, {"i"}), P("i"),
                     P(), {.check_vma = false});
  Array y = f(floats(values));
  EXPECT_ARRAY_EQ(y, floats(expected));
  for (const Shard& s : y.addressable_shards()) EXPECT_ARRAY_EQ(s.data, floats(expected));
}

TEST_P(Collectives, OnePsumResultServesEveryDeviceUnchanged) {
  // On the CPU backend every device reads one result buffer (all_reduce_shared): the devices'
  // later ops on it must not see each other's, at the leader-computes and owner-computes sizes
  // (and empty, where a device may have no result memory to lend).
  for (int64_t n : {0, 4, 1 << 16}) {
    std::vector<const void*> where(8);
    auto f = shard_map(
        [&](const Array& b) {
          Array y = psum(b, "i");
          where[axis_index("i").item<int32_t>()] = internal::const_view(y).data;
          Array scaled = y * (axis_index("i") + 1).astype(DType::kFloat32);
          return std::vector<Array>{y, scaled};
        },
        mesh({8}, {"i"}), P("i"), std::vector<PartitionSpec>{P("i"), P("i")}, {.check_vma = false});
    Array x = arange(8 * n, DType::kFloat32);
    std::vector<Array> out = f(x);
    Array total = sum(x.reshape({8, n}), 0);
    EXPECT_ARRAY_EQ(out[0], concatenate(std::vector<Array>(8, total), 0));
    std::vector<Array> scaled;
    for (int d = 0; d < 8; ++d) scaled.push_back(total * static_cast<float>(d + 1));
    EXPECT_ARRAY_EQ(out[1], concatenate(scaled, 0));
    if (GetParam() == Platform::kCpu) {
      EXPECT_EQ(std::count(where.begin(), where.end(), where[0]), 8) << "n = " << n;
    }
  }
}

TEST_P(Collectives, OneGatheredResultServesEachGroupUnchanged) {
  // On the CPU backend the members of a group read one gathered buffer (all_gather_shared),
  // filled by the last member to arrive (small) or by each member's own rows (large): rows of
  // [2, n] blocks gathered on axis 1 (two rows per block), in two groups whose order sets the
  // positions; later ops on the result must not see each other's.
  const std::vector<std::vector<int>> groups{{1, 0, 3, 2}, {4, 5, 6, 7}};
  for (int64_t n : {0, 3, 1 << 14}) {
    std::vector<const void*> where(8);
    auto f = shard_map(
        [&](const Array& b) {
          const int d = axis_index("i").item<int32_t>();
          Array y = all_gather(b.reshape({2, n}), "i", {.axis = 1, .axis_index_groups = groups});
          where[d] = internal::const_view(y).data;
          return std::vector<Array>{y.reshape({1, 2, 4, n}), y * static_cast<float>(d + 1)};
        },
        mesh({8}, {"i"}), P("i"), std::vector<PartitionSpec>{P("i"), P("i")}, {.check_vma = false});
    Array x = arange(8 * 2 * n, DType::kFloat32).reshape({8, 2, n});
    std::vector<Array> out = f(x.reshape({8 * 2 * n}));
    for (int d = 0; d < 8; ++d) {
      const std::vector<int>& group = groups[d / 4];
      std::vector<Array> rows;
      for (int member : group) rows.push_back(slice(x, {member, 0, 0}, {member + 1, 2, n})[0]);
      Array expected = stack(rows, 1);  // [2, 4, n]: row r of every member, in group order
      EXPECT_ARRAY_EQ(slice(out[0], {d, 0, 0, 0}, {d + 1, 2, 4, n})[0], expected)
          << "n = " << n << ", device " << d;
      EXPECT_ARRAY_EQ(slice(out[1], {d * 2, 0, 0}, {d * 2 + 2, 4, n}),
                      expected * static_cast<float>(d + 1))
          << "n = " << n << ", device " << d;
    }
    if (GetParam() == Platform::kCpu && n > 0) {
      EXPECT_EQ(std::count(where.begin(), where.begin() + 4, where[0]), 4) << "n = " << n;
      EXPECT_EQ(std::count(where.begin() + 4, where.end(), where[4]), 4) << "n = " << n;
      EXPECT_NE(where[0], where[4]);
    }
  }
}

TEST_P(Collectives, PpermuteLendsTheSourcesBlockAndZerosTheRest) {
  // Devices 0-2 send to 1-3; device 0 is no destination. On the CPU backend a destination's
  // result is its source's block itself (permute_shared), an empty array included.
  for (int64_t n : {0, 3, 1 << 14}) {
    std::vector<const void*> input(4), result(4);
    auto f = shard_map(
        [&](const Array& b) {
          const int d = axis_index("i").item<int32_t>();
          input[d] = internal::const_view(b).data;
          Array y = ppermute(b, "i", {{0, 1}, {1, 2}, {2, 3}});
          result[d] = internal::const_view(y).data;
          return y;
        },
        mesh({4}, {"i"}), P("i"), P("i"), {.check_vma = false});
    Array x = arange(4 * n, DType::kFloat32).reshape({4, n});
    Array expected = concatenate({zeros({1, n}, DType::kFloat32), slice(x, {0, 0}, {3, n})}, 0);
    EXPECT_ARRAY_EQ(f(x.reshape({4 * n})), expected.reshape({4 * n})) << "n = " << n;
    if (GetParam() == Platform::kCpu && n > 0) {
      for (int d = 1; d < 4; ++d) EXPECT_EQ(result[d], input[d - 1]) << "device " << d;
      EXPECT_NE(result[0], input[3]);
    }
  }
}

// The leaves a many-array reduction test passes: every dtype class, a scalar, an empty array and
// two float32 arrays that travel packed together; values differ per device and in rounding order.
std::vector<Array> leaves_of(const Array& b) {
  return {b.reshape({2, 3}),
          sum(b),
          (b * 100.0f).astype(DType::kInt32),
          b > 0.0f,
          b.astype(DType::kFloat64) / 3.0,
          zeros({0, 2}, DType::kFloat32),
          b.astype(DType::kComplex64),
          b * 1e-3f};
}

TEST_P(Collectives, ReductionsOfSeveralArraysEqualOneArrayAtATime) {
  std::vector<float> values(4 * 6);
  for (size_t k = 0; k < values.size(); ++k) values[k] = std::sin(static_cast<float>(k)) * 1e3f;
  using Reduce = Array (*)(const Array&, AxisNames, ReduceOptions);
  using ReduceMany = std::vector<Array> (*)(const std::vector<Array>&, AxisNames, ReduceOptions);
  struct Case {
    const char* name;
    Reduce one;
    ReduceMany many;
    bool complex_ok;
  };
  for (const Case& c : {Case{"psum", psum, psum, true}, Case{"pmean", pmean, pmean, true},
                        Case{"pmax", pmax, pmax, false}, Case{"pmin", pmin, pmin, false}}) {
    for (const ReduceOptions& options :
         {ReduceOptions{}, ReduceOptions{.axis_index_groups = {{0, 3}, {2, 1}}}}) {
      auto f = shard_map(
          [&](const Array& b) {
            std::vector<Array> in = leaves_of(b);
            if (!c.complex_ok) in.erase(in.begin() + 6);
            std::vector<Array> out = c.many(in, "i", options);
            for (const Array& x : in) out.push_back(c.one(x, "i", options));
            for (Array& y : out) y = expand_dims(y, 0);
            return out;
          },
          mesh({4}, {"i"}), P("i"), std::vector<PartitionSpec>(c.complex_ok ? 16 : 14, P("i")),
          {.check_vma = false});
      std::vector<Array> out = f(floats(values));
      const size_t n = out.size() / 2;
      for (size_t k = 0; k < n; ++k) {
        EXPECT_ARRAY_EQ(out[k], out[n + k]) << c.name << " operand " << k;
      }
    }
  }
}

TEST_P(Collectives, ReductionsOfSeveralArraysKeepEachOperandsType) {
  auto f = shard_map(
      [](const Array& b) {
        std::vector<Array> out = psum(std::vector<Array>{b, b * 2.0f, Array::scalar(1)}, "i");
        EXPECT_TRUE(varying_axes(out[0]).empty());
        EXPECT_TRUE(varying_axes(out[2]).empty());
        return out;
      },
      mesh({4}, {"i"}), P("i"), std::vector<PartitionSpec>{P(), P(), P()});
  std::vector<Array> out = f(farange(8, {8}));
  EXPECT_ARRAY_EQ(out[0], floats({12, 16}));
  EXPECT_ARRAY_EQ(out[1], floats({24, 32}));
  EXPECT_ARRAY_EQ(out[2], Array::scalar(4));
  auto none = shard_map([](const Array& b) { return psum(std::vector<Array>{}, "i").size() + b; },
                        mesh({4}, {"i"}), P("i"), P("i"));
  EXPECT_ARRAY_EQ(none(arange(4)), arange(4));
  auto unbound =
      shard_map([](const Array& b) { return pmean(std::vector<Array>{}, "k").size() + b; },
                mesh({4}, {"i"}), P("i"), P("i"));
  expect_error<NameError>([&] { unbound(arange(4)); }, {"unbound axis name: k"});
}

TEST_P(Collectives, PmaxPropagatesNaN) {
  auto f = pmap([](const Array& x) { return pmax(x, "i"); }, 4);
  Array y = f(floats({1, NAN, 3, 2}));
  for (float v : y.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

TEST_P(Collectives, LargeCollectivesMatchReferences) {
  const int64_t n = 1 << 16;
  Array x = arange(8 * n, DType::kFloat32).reshape({8, n});
  auto gather = shard_map(
      [](const Array& b) { return all_gather(b, "i", {.tiled = true, .to = To::kInvariant}); },
      mesh({8}, {"i"}), P("i"), P());
  EXPECT_ARRAY_EQ(gather(x), x);
  auto a2a = shard_map([](const Array& b) { return all_to_all(b, "i", 1, 0, {.tiled = true}); },
                       mesh({8}, {"i"}), P("i"), P(None, "i"));
  EXPECT_ARRAY_EQ(a2a(x), x);
  auto scatter = shard_map(
      [](const Array& b) { return psum_scatter(b, "i", {.scatter_dimension = 1, .tiled = true}); },
      mesh({8}, {"i"}), P("i"), P(None, "i"));
  EXPECT_ARRAY_EQ(scatter(x), sum(x, 0, true));
}

}  // namespace
}  // namespace spmd
