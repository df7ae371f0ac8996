// SPDX-License-Identifier: Apache-2.0
// Side by side: legacy pmap, the compat shim and a hand-written shard_map give identical outputs.
// Includes a seeded property test over random in_axes/out_axes, device counts, dtypes and
// collectives, and the checks of spmd/testing.h's comparison itself.
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "spmd/testing.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

TEST(SideBySide, PmapAndItsShardMapMigrationAgree) {
  auto f = [](const Array& x, const Array& w) { return x * w - pmean(x, "i"); };
  Array x = farange(24, {4, 6});
  Array w = floats({0.5f, 2, -1, 3, 1, 0.25f});
  SideBySide r = compare_pmap(f, "i", {.in_axes = {0, std::nullopt}}, x, w);
  // The migration spmd-migrate performs: a mesh of the mapped size, specs from the axes, and an
  // adapter keeping f's rank-reduced view.
  auto migrated = shard_map(
      [&](const Array& xb, const Array& wb) {
        return expand_dims(f(squeeze(xb, std::vector<int>{0}), wb), 0);
      },
      mesh1(4), {P("i"), P()}, P("i"), {.check_vma = false});
  r.add("shard_map", migrated(x, w));
  EXPECT_TRUE(r.ok()) << r.report();
}

TEST(SideBySide, ReductionOfSeveralArraysAgrees) {
  auto f = [](const Array& x, const Array& w) {
    std::vector<Array> means = pmean(std::vector<Array>{x * w, sum(x)}, "i");
    return means[0] - means[1];
  };
  Array x = farange(24, {4, 6}) * 0.1f;
  Array w = floats({0.5f, 2, -1, 3, 1, 0.25f});
  SideBySide r = compare_pmap(f, "i", {.in_axes = {0, std::nullopt}}, x, w);
  auto one_at_a_time = shard_map(
      [](const Array& xb, const Array& wb) {
        Array row = squeeze(xb, std::vector<int>{0});
        return expand_dims(pmean(row * wb, "i") - pmean(sum(row), "i"), 0);
      },
      mesh1(4), {P("i"), P()}, P("i"), {.check_vma = false});
  r.add("one array at a time", one_at_a_time(x, w));
  EXPECT_TRUE(r.ok()) << r.report();
}

TEST(SideBySide, ErrorsAreComparedToo) {
  auto f = [](const Array& x) { return x; };
  SideBySide r = compare_pmap(f, "i", {}, arange(9));
  EXPECT_TRUE(r.ok()) << r.report();  // both raise the same legacy error
  r.add("returns", arange(9));
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.report(), ::testing::HasSubstr("requires 9 logical devices"));
}

TEST(SideBySide, ReportsTheFirstDifferenceWithUlps) {
  float one = 1.0f;
  float next = std::nextafter(one, 2.0f);
  SideBySide exact;
  exact.add("a", floats({0, 1, one, 3}, {2, 2}));
  exact.add("b", floats({0, 1, next, 3}, {2, 2}));
  EXPECT_FALSE(exact.ok());
  EXPECT_THAT(exact.report(), ::testing::HasSubstr("a vs b: output 0 at index (1, 0): 1 vs"));
  EXPECT_THAT(exact.report(), ::testing::HasSubstr("(1 ulp"));
  SideBySide loose({.max_ulps = 1});
  loose.add("a", floats({one})).add("b", floats({next}));
  EXPECT_TRUE(loose.ok()) << loose.report();
  SideBySide shapes;
  shapes.add("a", arange(4)).add("b", arange(5));
  EXPECT_THAT(shapes.report(), ::testing::HasSubstr("type i32[4] vs i32[5]"));
  SideBySide nans;
  nans.add("a", floats({NAN})).add("b", floats({NAN}));
  EXPECT_TRUE(nans.ok());
  EXPECT_EQ(compare_arrays(ints({1, 2}), ints({1, 3})), "at index (1,): 2 vs 3");
}

// One random pmap case: a body made of one collective (or none) plus elementwise work.
struct Case {
  int devices;
  Shape shape;  // of the mapped argument, mapped size at in_axis
  int in_axis;
  bool broadcast;  // add a second, unmapped argument
  DType dtype;
  int op;        // which body
  int out_axis;  // -1: nullopt
  std::vector<int> perm;
};

std::string describe(const Case& c) {
  return fmt::format("devices={} shape={} in_axis={} broadcast={} dtype={} op={} out_axis={}",
                     c.devices, shape_tuple_string(c.shape), c.in_axis, c.broadcast,
                     dtype_name(c.dtype), c.op, c.out_axis);
}

constexpr int kOps = 11;

Array body(const Case& c, const Array& x) {
  switch (c.op) {
    case 0:
      return x * 3 + 1;
    case 1:
      return psum(x, "i");
    case 2:
      return pmean(x, "i");
    case 3:
      return pmax(x, "i") - pmin(x, "i");
    case 4:
      return all_gather(x, "i", {.axis = x.ndim() > 0 ? -1 : 0});
    case 5:
      return x.ndim() > 0 && x.shape()[0] % c.devices == 0 ? psum_scatter(x, "i", {.tiled = true})
                                                           : psum(x, "i");
    case 6: {
      std::vector<std::pair<int, int>> pairs;
      for (int k = 0; k < c.devices; ++k) pairs.emplace_back(k, c.perm[k]);
      return ppermute(x, "i", pairs);
    }
    case 7:
      return pshuffle(x, "i", c.perm);
    case 8:
      return x.ndim() > 0 && x.shape()[0] % c.devices == 0
                 ? all_to_all(x, "i", 0, 0, {.tiled = true})
                 : all_gather(x, "i", {.tiled = x.ndim() > 0});
    case 9:
      return x + axis_index("i").astype(x.dtype());
    default:
      return where(x > 0, x, axis_size("i"));
  }
}

Case random_case(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  c.devices = pick(1, 8);
  int rank = pick(1, 3);
  c.in_axis = pick(0, rank - 1);
  for (int d = 0; d < rank; ++d) c.shape.push_back(d == c.in_axis ? c.devices : pick(1, 3) * 2);
  c.broadcast = pick(0, 1) == 1;
  const DType dtypes[] = {DType::kInt32, DType::kFloat32, DType::kBFloat16, DType::kFloat64};
  c.dtype = dtypes[pick(0, 3)];
  c.op = pick(0, kOps - 1);
  c.out_axis = pick(-1, rank - 1);
  c.perm.resize(c.devices);
  for (int k = 0; k < c.devices; ++k) c.perm[k] = k;
  std::shuffle(c.perm.begin(), c.perm.end(), rng);
  return c;
}

Array random_values(std::mt19937& rng, const Shape& shape, DType dtype) {
  std::vector<float> v(shape_size(shape));
  std::normal_distribution<float> normal(0, 10);
  for (float& e : v) e = dtype == DType::kInt32 ? std::round(normal(rng)) : normal(rng);
  return Array::from_vector(v, shape).astype(dtype);
}

TEST(SideBySide, PropertyLegacyAndCompatAgreeOnRandomCases) {
  std::mt19937 rng(20261202);
  WarningHandler previous = set_warning_handler([](const std::string&) {});
  int compared = 0;
  for (int k = 0; k < 400; ++k) {
    Case c = random_case(rng);
    Array x = random_values(rng, c.shape, c.dtype);
    Shape w_shape(c.shape.begin(), c.shape.end());
    w_shape.erase(w_shape.begin() + c.in_axis);
    Array w = random_values(rng, w_shape, c.dtype);
    PmapOptions options{.in_axes = {c.in_axis, std::nullopt},
                        .out_axes = {c.out_axis < 0 ? MapAxis(std::nullopt) : MapAxis(c.out_axis)}};
    SideBySide r =
        c.broadcast
            ? compare_pmap([c](const Array& a, const Array& b) { return body(c, a + b); }, "i",
                           options, x, w)
            : compare_pmap([c](const Array& a) { return body(c, a); }, "i",
                           PmapOptions{.in_axes = {c.in_axis}, .out_axes = options.out_axes}, x);
    EXPECT_TRUE(r.ok()) << "case " << k << ": " << describe(c) << "\n" << r.report();
    compared += r.outputs(0).empty() ? 0 : 1;  // both paths raising the same error also agree
  }
  set_warning_handler(previous);
  EXPECT_EQ(compared, 400) << "every random case is a valid call and must produce outputs";
}

}  // namespace
}  // namespace spmd
