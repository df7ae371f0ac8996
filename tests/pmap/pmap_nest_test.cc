// SPDX-License-Identifier: Apache-2.0
// spmd::PmapNest: the levels of an imperfect nest of pmaps (an inner pmap reached through a helper
// or a captured callable), migrated the way spmd-migrate writes them, give legacy pmap's values,
// errors and discovery behaviour (the body runs on the outer grid once per new argument types).
#include <algorithm>
#include <atomic>
#include <functional>

#include "spmd/pmap.h"
#include "spmd/pmap_mesh.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

// Legacy pmap(f, axis, options).
template <class F>
auto legacy_pmap(F f, std::string axis, PmapOptions options = {}) {
  return internal::make_pmapped(std::move(f), std::move(axis), std::move(options),
                                &legacy::run_pmap, __FILE__, __LINE__);
}

// What spmd-migrate writes for pmap(f, axis) at a level of an imperfect nest (one Array argument
// and result, in_axes and out_axes 0).
template <class F>
auto migrated(F f, std::string axis, PmapMeshOptions options = {}) {
  return [f = std::move(f), axis, options, nest = PmapNest()](const Array& a0) {
    auto block = [&](const Array& b0) { return expand_dims(f(squeeze(b0, 0)), 0); };
    return nest.run({a0}, {{axis}}, options, [&] {
      return shard_map(block, P(axis), P(axis), {.check_vma = false, .axis_names = {axis}})(a0);
    });
  };
}

// The inner level's body: collectives over the inner, the outer and both axes.
Array inner_body(const Array& v) {
  return stack({v - psum(v, "j"), pmax(v, "i"), psum(v, {"i", "j"}), axis_index({"i", "j"}) + v});
}

// An outer body that runs the inner level through a helper, with a reshape between.
template <class Inner>
auto outer_body(const Inner& inner) {
  return [&inner](const Array& r) { return inner(r.reshape({4, 2})) * 2 + sum(psum(r, "i")); };
}

TEST(PmapNest, ImperfectNestGivesLegacyValues) {
  auto legacy_inner = legacy_pmap(inner_body, "j");
  auto legacy_outer = legacy_pmap(outer_body(legacy_inner), "i");
  auto inner = migrated(inner_body, "j");
  auto outer = migrated(outer_body(inner), "i");
  for (int call = 0; call < 3; ++call) {  // discovery, then the remembered levels
    Array x = farange(16, {2, 8}) * float(call + 1);
    EXPECT_ARRAY_EQ(outer(x), legacy_outer(x)) << "call " << call;
  }
  // New argument types: discovered again, as legacy does.
  EXPECT_ARRAY_EQ(outer(iarange(16, {2, 8})), legacy_outer(iarange(16, {2, 8})));
  // A level called at top level is a plain pmap.
  auto centered = [](const Array& v) { return v - psum(v, "j"); };
  EXPECT_ARRAY_EQ(migrated(centered, "j")(farange(8, {4, 2})),
                  legacy_pmap(centered, "j")(farange(8, {4, 2})));
}

TEST(PmapNest, BodyRunsAsOftenAsLegacy) {
  // Legacy pmap runs the outer bodies on the outer grid until they reach the inner pmap, once per
  // new argument types; the migrated nest must do the same, so side effects happen as often.
  std::atomic<int> legacy_runs{0}, migrated_runs{0};
  auto legacy_inner = legacy_pmap([](const Array& v) { return v + 1; }, "j");
  auto legacy_outer = legacy_pmap(
      [&](const Array& r) {
        ++legacy_runs;
        return legacy_inner(r.reshape({2, 2}));
      },
      "i");
  auto inner = migrated([](const Array& v) { return v + 1; }, "j");
  auto outer = migrated(
      [&](const Array& r) {
        ++migrated_runs;
        return inner(r.reshape({2, 2}));
      },
      "i");
  // The first call probes on the 2 outer devices (a body that had not started when the other
  // reached the inner level is not run), then runs on the 2 x 2 grid; later calls run once.
  EXPECT_ARRAY_EQ(outer(farange(8, {2, 4})), legacy_outer(farange(8, {2, 4})));
  for (const std::atomic<int>* runs : {&legacy_runs, &migrated_runs}) {
    EXPECT_GE(runs->load(), 1 + 4);
    EXPECT_LE(runs->load(), 2 + 4);
  }
  legacy_runs = 0;
  migrated_runs = 0;
  for (int call = 0; call < 2; ++call) {
    EXPECT_ARRAY_EQ(outer(farange(8, {2, 4})), legacy_outer(farange(8, {2, 4})));
  }
  EXPECT_EQ(legacy_runs.load(), 2 * 4);
  EXPECT_EQ(migrated_runs.load(), 2 * 4);
  // Copies share what was discovered, as copies of a pmap callable do.
  auto copy = outer;
  migrated_runs = 0;
  copy(farange(8, {2, 4}));
  EXPECT_EQ(migrated_runs.load(), 4);
}

TEST(PmapNest, ThreeLevels) {
  auto k_body = [](const Array& v) { return v * psum(v, "k") + axis_index({"i", "j", "k"}); };
  auto legacy_k = legacy_pmap(k_body, "k");
  auto legacy_j = legacy_pmap([&](const Array& r) { return legacy_k(r.reshape({2, 2})); }, "j");
  auto legacy_i = legacy_pmap([&](const Array& r) { return legacy_j(r.reshape({2, 4})); }, "i");
  auto k = migrated(k_body, "k");
  auto j = migrated([&](const Array& r) { return k(r.reshape({2, 2})); }, "j");
  auto i = migrated([&](const Array& r) { return j(r.reshape({2, 4})); }, "i");
  for (int call = 0; call < 2; ++call) {
    EXPECT_ARRAY_EQ(i(farange(16, {2, 8})), legacy_i(farange(16, {2, 8})));
  }
}

TEST(PmapNest, OuterDevicesCoverTheGrid) {
  std::vector<Device> reversed = devices();
  std::reverse(reversed.begin(), reversed.end());
  auto body = [](const Array& v) { return v * 10 + axis_index({"i", "j"}); };
  auto legacy_inner = legacy_pmap(body, "j");
  auto legacy_outer = legacy_pmap(
      [&](const Array& r) {
        return legacy_inner(r.reshape({4, 1}));
      },
      "i", {.devices = reversed});
  auto inner = migrated(body, "j");
  auto outer = migrated(
      [&](const Array& r) {
        return inner(r.reshape({4, 1}));
      },
      "i", {.devices = reversed});
  for (int call = 0; call < 2; ++call) {
    Array y = outer(farange(8, {2, 4}));
    EXPECT_ARRAY_EQ(y, legacy_outer(farange(8, {2, 4})));
    EXPECT_EQ(y.addressable_shards()[0].device.id, reversed[0].id);
  }
}

TEST(PmapNest, RaisesLegacyErrors) {
  // A grid larger than the devices, found when the body reaches the inner level.
  auto inner = migrated([](const Array& v) { return v; }, "j");
  auto outer = migrated([&](const Array& r) { return inner(r.reshape({4, 1})); }, "i");
  auto legacy_inner = legacy_pmap([](const Array& v) { return v; }, "j");
  auto legacy_outer = legacy_pmap(
      [&](const Array& r) {
        return legacy_inner(r.reshape({4, 1}));
      },
      "i");
  const std::string too_many = "compiling computation that requires 16 logical devices, but only 8";
  expect_error<ValueError>([&] { legacy_outer(ones({4, 4})); }, {too_many});
  expect_error<ValueError>([&] { outer(ones({4, 4})); }, {too_many});

  // An inner level with devices of its own.
  auto placed = migrated([](const Array& v) { return v; }, "j", {.devices = devices()});
  auto around = migrated([&](const Array& r) { return placed(r); }, "i");
  expect_error<ValueError>(
      [&] {
        around(ones({2, 2}));
      },
      {"Nested pmap with explicit devices argument."});

  // The same argument types reaching a different inner level.
  int64_t rows = 2;
  auto varying = migrated([&](const Array& r) { return inner(r.reshape({rows, 4 / rows})); }, "i");
  varying(ones({2, 4}));
  rows = 4;
  expect_error<ValueError>(
      [&] {
        varying(ones({2, 4}));
      },
      {"this nested pmap maps axis 'j' of size 4, but earlier calls with the "
       "same argument types reached a nested pmap over 'j' of size 2"});
}

TEST(PmapNest, InnerLevelInAPlainShardMapSaysWhatToDo) {
  auto inner = migrated([](const Array& v) { return v; }, "j");
  Mesh mesh = make_mesh({2}, {"i"});
  auto outer = shard_map(
      [&](const Array& r) {
        return inner(r.reshape({2, 2}));
      },
      mesh, P("i"), P("i"));
  expect_error<ValueError>(
      [&] {
        outer(ones({2, 4}));
      },
      {"a pmap level over 'j' (size 2) runs inside the body of",
       "has no automatic axis left for it",
       "Run the enclosing call through spmd::PmapNest as well"});
}

}  // namespace
}  // namespace spmd
