// SPDX-License-Identifier: Apache-2.0
// Container arguments (std::vector<Array>, std::tuple<Array...>) of shard_map and both pmaps,
// mapped element by element with JAX's pytree prefix rule, and the call site that names an
// unnamed mapped function in errors.
#include <tuple>
#include <vector>

#include "spmd/pmap.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

Array sum_of(const std::vector<Array>& v) {
  Array total = v[0];
  for (size_t k = 1; k < v.size(); ++k) total = total + v[k];
  return total;
}

TEST(ShardMapContainers, OneSpecAppliesToEveryElementOfAVector) {
  std::vector<Shape> seen(4);
  auto f = shard_map(
      [&](const std::vector<Array>& v) {
        EXPECT_EQ(v.size(), 3u);
        seen[axis_index("i").item<int32_t>()] = v[2].shape();
        return sum_of(v);
      },
      mesh1(4), P("i"), P("i"));
  std::vector<Array> xs = {iarange(8, {8}), iarange(8, {8}) * 10, iarange(8, {8}) * 100};
  EXPECT_ARRAY_EQ(f(xs), iarange(8, {8}) * 111);
  for (const Shape& s : seen) EXPECT_EQ(s, Shape{2});
}

TEST(ShardMapContainers, AListGivesOneSpecPerElement) {
  // x split, a split, b whole on every device.
  auto f = shard_map(
      [](const Array& x, const std::vector<Array>& ab) {
        EXPECT_EQ(ab[0].shape(), Shape{2});
        EXPECT_EQ(ab[1].shape(), Shape{4});
        return x + ab[0] + psum(ab[1], "i")[axis_index("i").item<int32_t>()];
      },
      mesh1(4), {P("i"), {P("i"), P()}}, P("i"));
  Array x = iarange(8, {8});
  Array b = ints({1, 2, 3, 4});
  Array y = f(x, std::vector<Array>{x * 10, b});
  // Device k adds 4 * b[k] (b replicated, summed over the 4 devices) to both of its elements.
  EXPECT_ARRAY_EQ(y, ints({4, 15, 30, 41, 56, 67, 82, 93}));
}

TEST(ShardMapContainers, TupleArgumentsAndStaticArgumentsMix) {
  auto f = shard_map([](const std::tuple<Array, Array>& t, int scale,
                        const Array& z) { return (std::get<0>(t) - std::get<1>(t)) * scale + z; },
                     mesh1(2), {{P("i"), P("i")}, P()}, P("i"));
  Array a = iarange(4, {4});
  Array y = f(std::make_tuple(a * 3, a), 2, ints({1, 1}));
  EXPECT_ARRAY_EQ(y, ints({1, 5, 9, 13}));
}

TEST(ShardMapContainers, OutputsAndAnEmptyVector) {
  auto f = shard_map([](const std::vector<Array>& v,
                        const Array& x) { return x * static_cast<int32_t>(v.size()); },
                     mesh1(2), {P("i"), P("i")}, P("i"));
  EXPECT_ARRAY_EQ(f(std::vector<Array>{}, iarange(4, {4})), ints({0, 0, 0, 0}));
}

TEST(ShardMapContainers, ErrorsNameTheElement) {
  auto f = shard_map([](const std::vector<Array>& v) { return sum_of(v); }, mesh1(4),
                     {{P("i"), P("i")}}, P("i"));
  expect_error<ValueError>(
      [&] {
        f(std::vector<Array>{iarange(8, {8}), iarange(6, {6})});
      },
      {"the passed args[0][1] of shape int32[6] corresponds to "
       "in_specs[0][1] of value P('i',)"});
  expect_error<ValueError>(
      [&] {
        f(std::vector<Array>{iarange(8, {8}), iarange(8, {8}), iarange(8, {8})});
      },
      {"in_specs[0] is [P('i',), P('i',)], a list of 2 PartitionSpecs, but args[0] is a "
       "container of 3 Arrays"});
  auto g = shard_map([](const Array& x) { return x; }, mesh1(4), {{P("i"), P()}}, P("i"));
  expect_error<ValueError>([&] { g(iarange(8, {8})); }, {"but args[0] is an Array"});
  auto h = shard_map([](const std::vector<Array>&, const Array& x) { return x; }, mesh1(4),
                     {P("i"), P("i"), P("i")}, P("i"));
  expect_error<ValueError>([&] { h(std::vector<Array>{iarange(8, {8})}, iarange(8, {8})); },
                           {"pytree structure error", "of length 3", "of length 2"});
}

TEST(ShardMapContainers, DonatingAVectorDonatesEveryElement) {
  auto f = shard_map(sum_of, mesh1(2), P("i"), P("i"), {.donate_argnums = {0}});
  std::vector<Array> xs = {iarange(4, {4}), iarange(4, {4})};
  EXPECT_ARRAY_EQ(f(xs), ints({0, 2, 4, 6}));
  EXPECT_TRUE(xs[0].is_deleted());
  EXPECT_TRUE(xs[1].is_deleted());
}

struct Impl {
  const char* name;
  internal::PmapRunner runner;
};

class PmapContainers : public ::testing::TestWithParam<Impl> {
 protected:
  template <class F>
  auto pmap(F f, std::string axis, PmapOptions options = {}) {
    return internal::make_pmapped(std::move(f), std::move(axis), std::move(options),
                                  GetParam().runner, __FILE__, __LINE__);
  }
};

INSTANTIATE_TEST_SUITE_P(Implementations, PmapContainers,
                         ::testing::Values(Impl{"legacy", &legacy::run_pmap},
                                           Impl{"compat", &compat::run_pmap}),
                         [](const ::testing::TestParamInfo<Impl>& p) { return p.param.name; });

TEST_P(PmapContainers, InAxesEntryAppliesToEveryElement) {
  auto f =
      pmap([](const std::vector<Array>& v, const Array& w) { return psum(sum_of(v), "i") + w; },
           "i", {.in_axes = {0, std::nullopt}});
  std::vector<Array> xs = {iarange(8, {4, 2}), iarange(8, {4, 2}) * 10};
  Array y = f(xs, ints({100, 200}));
  // Row k: the sum over rows of 11 * x, plus w.
  Array expected = ints({11 * 12 + 100, 11 * 16 + 200}).reshape({1, 2});
  EXPECT_ARRAY_EQ(y, concatenate({expected, expected, expected, expected}, 0));
}

TEST_P(PmapContainers, ElementsNamedInErrors) {
  auto f = pmap([](const std::tuple<Array, Array>& t) { return std::get<0>(t); }, "i");
  expect_error<ValueError>(
      [&] {
        f(std::make_tuple(iarange(8, {4, 2}), iarange(6, {3, 2})));
      },
      {"pmap got inconsistent sizes", "axis 0 of args[0][0]", "axis 0 of args[0][1]"});
}

TEST(CallSite, UnnamedFunctionsAreNamedByWhereTheyWereMapped) {
  const int line = __LINE__ + 1;
  auto f = shard_map([](const Array& x) { return x; }, mesh1(4), P("i"), P("i"));
  expect_error<ValueError>([&] { f(arange(6)); },
                           {fmt::format("to the function '<lambda> at {}:{}'", __FILE__, line)});
  auto named =
      shard_map([](const Array& x) { return x; }, mesh1(4), P("i"), P("i"), {.name = "layer"});
  expect_error<ValueError>([&] { named(arange(6)); }, {"to the function 'layer'"});
}

TEST(CallSite, BodyErrorsOfPmapNameTheCallSite) {
  const int line = __LINE__ + 1;
  auto f = legacy::pmap([](const Array&) -> Array { throw std::runtime_error("boom"); }, "i");
  expect_error<DeviceError>([&] { f(iarange(4, {4})); },
                            {fmt::format("'<lambda> at {}:{}'", __FILE__, line), "boom"});
}

}  // namespace
}  // namespace spmd
