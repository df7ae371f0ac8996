// SPDX-License-Identifier: Apache-2.0
// vmap (spmd/vmap.h): in_axes/out_axes and JAX's messages for bad ones, collectives over a
// vmapped axis against the same collectives over a pmap axis (JAX's VmapPmapCollectivesTest:
// testVsVmap, testPPermuteAgreesWithVmap, testAllToAllVsVmap, testCollectivesWithVmap,
// testPPermuteWithVmap, testWithVmap, testAllToAllInVmap), vmap inside shard_map bodies, vmap of
// a shard_map (test_vmap_spmd_axis_name) and faults among batch elements.
#include "spmd/vmap.h"

#include "spmd/pmap.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

Array row_sum(const Array& row) { return sum(row); }

// ---- mapping ----

TEST(Vmap, MapsOverTheLeadingAxis) {
  Array x = iarange(12, {4, 3});
  EXPECT_ARRAY_EQ(vmap(row_sum)(x), sum(x, std::vector<int>{1}));
}

TEST(Vmap, InAxesAndOutAxes) {
  Array x = iarange(24, {2, 3, 4});  // batch on axis 1
  Array w = iarange(4, {4});         // unbatched
  auto f = vmap([](const Array& a, const Array& b) { return a * b; }, {1, std::nullopt}, {2});
  // result[:, :, k] = x[:, k, :] * w, i.e. moveaxis(x * w, 1, 2)
  EXPECT_ARRAY_EQ(f(x, w), moveaxis(x * w, 1, 2));
  auto g = vmap([](const Array& a) { return a; }, {-1}, {-1});
  EXPECT_ARRAY_EQ(g(x), x);  // moving the last axis out and back in
}

TEST(Vmap, ContainerArgumentsAndTupleOutputs) {
  std::vector<Array> xs = {iarange(6, {3, 2}), iarange(3, {3})};
  auto f = vmap(
      [](const std::vector<Array>& v) { return std::tuple<Array, Array>(v[0] + v[1], sum(v[0])); },
      {0}, {1, 0});
  auto [a, b] = f(xs);
  EXPECT_ARRAY_EQ(a, transpose(xs[0] + expand_dims(xs[1], 1), {1, 0}));
  EXPECT_ARRAY_EQ(b, sum(xs[0], std::vector<int>{1}));
}

TEST(Vmap, NestedVmapsLoop) {
  Array m = farange(12, {3, 4});
  Array v = farange(4, {4});
  // vmap(vmap(multiply)) over rows then elements equals broadcasting.
  auto inner = vmap([](const Array& a, const Array& b) { return a * b; });
  auto outer = vmap([&](const Array& row) { return inner(row, v); });
  EXPECT_ARRAY_EQ(outer(m), m * v);
}

TEST(Vmap, OutAxesNoneTakesAValueEqualOverTheBatch) {
  auto f = vmap([](const Array& x) { return std::tuple<Array, Array>(x + 1, x * 0); }, {0},
                {0, std::nullopt});
  auto [a, b] = f(iarange(3, {3}));
  EXPECT_ARRAY_EQ(a, iarange(3, {3}) + 1);
  EXPECT_ARRAY_EQ(b, Array::scalar(0));
  auto g = vmap([](const Array& x) { return x; }, {0}, {std::nullopt});
  expect_error<ValueError>(
      [&] { g(iarange(3, {3})); },
      {"vmap has mapped output but out_axes is None", "differs between batch elements 0 and 1"});
}

// ---- JAX's messages ----

TEST(Vmap, InconsistentSizes) {
  auto f = vmap([](const Array& a, const Array& b, const Array& c) { return a + b + c; });
  expect_error<ValueError>(
      [&] { f(farange(3, {3}), farange(3, {3}), farange(4, {4})); },
      {"vmap got inconsistent sizes for array axes to be mapped:\n"
       "  * most axes (2 of them) had size 3, e.g. axis 0 of args[0] of type float32[3];\n"
       "  * one axis had size 4: axis 0 of args[2] of type float32[4]"});
}

TEST(Vmap, BadInAxes) {
  auto id = [](const Array& a) { return a; };
  expect_error<ValueError>(
      [&] {
        vmap(id, {2})(farange(6, {2, 3}));
      },
      {"vmap was requested to map its argument along axis 2, which implies "
       "that its rank should be at least 3, but is only 2 (its shape is "
       "(2, 3))"});
  expect_error<ValueError>([&] { vmap(id, {std::nullopt})(farange(3, {3})); },
                           {"vmap must have at least one non-None value in in_axes"});
  expect_error<ValueError>(
      [&] {
        vmap(id, {0, 0})(farange(3, {3}));
      },
      {"vmap in_axes must be one entry", "len(in_axes)=2, len(args)=1"});
  expect_error<ValueError>([&] { vmap(id, {0}, {2})(farange(3, {3})); },
                           {"vmap out_axes entry 2 for output 0", "batched rank 1"});
  expect_error<NotImplementedError>(
      [&] {
        vmap(id)(farange(0, {0, 2}));
      },
      {"over an axis of size 0"});
}

TEST(Vmap, OutputsMustAgreeAcrossElements) {
  auto f = vmap([](const Array& x) { return arange(x.item<int32_t>() + 1); });
  expect_error<ValueError>([&] { f(iarange(2, {2})); },
                           {"output 0 has type int32[1] for batch element 0 but int32[2] for "
                            "element 1"});
}

// ---- collectives over the vmapped axis agree with pmap's ----

template <class F>
void expect_vmap_matches_pmap(F f, const Array& x) {
  Array by_vmap = vmap(f, {0}, {0}, {.axis_name = "i"})(x);
  Array by_pmap = legacy::pmap(f, "i")(x);
  EXPECT_ARRAY_EQ(by_vmap, by_pmap);
}

TEST(VmapCollectives, ReductionsAgreeWithPmap) {  // testVsVmap's siblings
  Array x = farange(4 * 3, {4, 3});
  expect_vmap_matches_pmap([](const Array& v) { return psum(v, "i"); }, x);
  expect_vmap_matches_pmap([](const Array& v) { return pmean(v, "i"); }, x);
  expect_vmap_matches_pmap([](const Array& v) { return pmax(v, "i"); }, x);
  expect_vmap_matches_pmap([](const Array& v) { return pmin(v, "i"); }, x);
  expect_vmap_matches_pmap([](const Array& v) { return v / psum(v, "i"); }, x);
}

TEST(VmapCollectives, GatherScatterAgreeWithPmap) {  // JAX's testVsVmap
  Array x = iarange(4 * 4 * 8, {4, 4, 8});
  for (bool tiled : {false, true}) {
    expect_vmap_matches_pmap(
        [tiled](const Array& v) { return all_gather(v, "i", {.tiled = tiled}); }, x);
    expect_vmap_matches_pmap(
        [tiled](const Array& v) { return psum_scatter(v, "i", {.tiled = tiled}); }, x);
  }
}

TEST(VmapCollectives, PpermuteAgreesWithPmap) {  // JAX's testPPermuteAgreesWithVmap
  Array xs = iarange(4, {4}) * 10;
  expect_vmap_matches_pmap(
      [](const Array& v) {
        return ppermute(v, "i", {{1, 0}, {2, 1}, {0, 2}, {3, 3}});
      },
      xs);
  expect_vmap_matches_pmap([](const Array& v) { return pbroadcast(v, "i", 2); }, xs);
  expect_vmap_matches_pmap([](const Array& v) { return pshuffle(v, "i", {3, 2, 1, 0}); }, xs);
}

TEST(VmapCollectives, AllToAllAgreesWithPmap) {  // JAX's testAllToAllVsVmap
  Array x = iarange(4 * 4 * 4 * 4, {4, 4, 4, 4});
  for (int split = 0; split < 3; ++split) {
    for (int concat = 0; concat < 3; ++concat) {
      SCOPED_TRACE(::testing::Message() << "split " << split << " concat " << concat);
      expect_vmap_matches_pmap([=](const Array& v) { return all_to_all(v, "i", split, concat); },
                               x);
    }
  }
}

TEST(VmapCollectives, AxisIndexAndSize) {
  auto f = vmap(
      [](const Array& v) {
        EXPECT_EQ(axis_size("b"), 5);
        return v * 0 + axis_index("b");
      },
      {0}, {0}, {.axis_name = "b"});
  EXPECT_ARRAY_EQ(f(iarange(5, {5})), iarange(5, {5}));
}

TEST(VmapCollectives, NestedVmapsReduceOverBothAxes) {  // testCollectivesWithVmap (vmap, vmap)
  Array x = ones({2, 2, 8, 8});
  auto f = vmap(
      [](const Array& a) {
        return vmap(
            [](const Array& b) {
              return b + psum(matmul(b, b), {"i", "j"});
            },
            {0}, {0}, {.axis_name = "j"})(a);
      },
      {0}, {0}, {.axis_name = "i"});
  EXPECT_ARRAY_EQ(f(x), x + 32.0);  // every product entry is 8, summed over 4 elements
  auto inner_only = vmap(
      [](const Array& a) {
        return vmap([](const Array& b) { return pmax(b * (axis_index("i") + 1), "i"); }, {0}, {0},
                    {.axis_name = "j"})(a);
      },
      {0}, {0}, {.axis_name = "i"});
  EXPECT_ARRAY_EQ(inner_only(x), x * 2.0);
}

TEST(VmapCollectives, VmapInsidePmapReducesOverBothAxes) {
  // testCollectivesWithVmap with (pmap, vmap): the vmap's axis and the pmap's in one psum.
  Array x = ones({2, 2, 8, 8});
  auto body = [](const Array& a) {
    return vmap(
        [](const Array& b) {
          return b + pmean(matmul(b, b), {"i", "j"});
        },
        {0}, {0}, {.axis_name = "j"})(a);
  };
  EXPECT_ARRAY_EQ(legacy::pmap(body, "i")(x), x + 8.0);
  auto sums = [](const Array& a) {
    return vmap(
        [](const Array& b) {
          return psum(b, {"i", "j"}) + psum(b, "i") * 0;
        },
        {0}, {0}, {.axis_name = "j"})(a);
  };
  EXPECT_ARRAY_EQ(legacy::pmap(sums, "i")(x), x * 4.0);
}

TEST(VmapCollectives, LoopedVmapInsidePmap) {  // testPPermuteWithVmap, testWithVmap
  Array x = farange(2 * 2 * 8, {2, 2, 8});
  auto permuted = [](const Array& a) {
    return vmap([](const Array& b) { return b + ppermute(b * 2, "i", {{0, 1}, {1, 0}}); })(a);
  };
  // Inner vmap vs inner pmap over the second axis, both inside a pmap over 'i'.
  Array looped = legacy::pmap(permuted, "i")(x);
  Array expected = x + stack({take(x, 1, 0), take(x, 0, 0)}) * 2;
  EXPECT_ARRAY_EQ(looped, expected);
  Array gathered = legacy::pmap(
      [](const Array& a) { return vmap([](const Array& b) { return all_gather(b, "i"); })(a); },
      "i")(x);
  EXPECT_EQ(gathered.shape(), (Shape{2, 2, 2, 8}));
  EXPECT_ARRAY_EQ(take(gathered, 0, 0), moveaxis(x, 0, 1));
}

TEST(VmapCollectives, AllToAllInLoopedVmap) {  // testAllToAllInVmap, one case per vmap axis
  const int64_t n = 2;
  Array x = iarange(32, {n, n, n, n, n});
  for (int vmap_axis = 0; vmap_axis < 4; ++vmap_axis) {
    auto f = [](const Array& v) { return all_to_all(v, "i", 0, 1); };
    Array got = legacy::pmap([&](const Array& a) { return vmap(f, {vmap_axis})(a); }, "i")(x);
    // Reference: loop over the batch by hand with the same pmap.
    std::vector<Array> parts;
    for (int64_t b = 0; b < n; ++b) {
      parts.push_back(legacy::pmap(f, "i")(take(x, b, vmap_axis + 1)));
    }
    EXPECT_ARRAY_EQ(got, stack(parts, 1)) << "vmap axis " << vmap_axis;
  }
}

// ---- vmap inside shard_map bodies ----

TEST(VmapInShardMap, BatchAndMeshCollectivesTogether) {
  Array x = farange(4 * 3 * 2, {4, 3, 2});  // 'i' over dim 0, batch over dim 1
  auto f = shard_map(
      [](const Array& block) {
        return vmap([](const Array& v) { return psum(v, "i") + psum(v, "b"); }, {1}, {1},
                    {.axis_name = "b"})(block);
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false});
  Array by_mesh = sum(x, std::vector<int>{0}, /*keepdims=*/true);
  Array by_batch = sum(x, std::vector<int>{1}, /*keepdims=*/true);
  EXPECT_ARRAY_EQ(f(x), by_mesh + by_batch);
}

TEST(VmapInShardMap, SeveralArraysOverBatchAndMeshAxesAtOnce) {
  Array x = farange(4 * 3 * 2, {4, 3, 2});  // 'i' over dim 0, batch over dim 1
  auto f = shard_map(
      [](const Array& block) {
        return vmap(
            [](const Array& v) {
              std::vector<Array> both = psum(std::vector<Array>{v, v * 2.0f}, {"i", "b"});
              return both[0] + both[1];
            },
            {1}, {1}, {.axis_name = "b"})(block);
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false});
  EXPECT_ARRAY_EQ(f(x), broadcast_to(sum(x, std::vector<int>{0, 1}, true) * 3.0f, {4, 3, 2}));
}

TEST(VmapInShardMap, CheckVmaSeesThroughTheVmap) {
  auto f = shard_map(
      [](const Array& block) {
        return vmap([](const Array& v) { return psum(v, "i"); }, {0}, {0},
                    {.axis_name = "b"})(block);
      },
      mesh1(4), P(None, "i"), P());
  Array x = farange(3 * 8, {3, 8});
  EXPECT_ARRAY_EQ(f(x), sum(x.reshape({3, 4, 2}), std::vector<int>{1}));
}

TEST(VmapInShardMap, NestedShardMapNeedsALoopedVmap) {
  auto inner = shard_map([](const Array& b) { return b; }, P(), P());
  auto f = shard_map(
      [&](const Array& block) {
        return vmap([&](const Array& v) { return inner(v); }, {0}, {0}, {.axis_name = "b"})(block);
      },
      mesh2(2, 2), P("i"), P("i"), {.axis_names = {"i"}});
  expect_error<NotImplementedError>(
      [&] {
        f(farange(8, {4, 2}));
      },
      {"a shard_map inside a vmap with an axis_name ('b')"});
  auto looped = shard_map(
      [&](const Array& block) { return vmap([&](const Array& v) { return inner(v); })(block); },
      mesh2(2, 2), P("i"), P("i"), {.axis_names = {"i"}});
  EXPECT_ARRAY_EQ(looped(farange(8, {4, 2})), farange(8, {4, 2}));
}

TEST(VmapInShardMap, TopLevelVmapKeepsTheContextMesh) {
  auto scope = use_mesh(mesh1(2));
  auto per_element = shard_map([](const Array& b) { return psum(b, "i"); }, P("i"), P());
  auto f = vmap([&](const Array& v) { return per_element(v + psum(v, "b") * 0); }, {0}, {0},
                {.axis_name = "b"});
  Array x = farange(3 * 4, {3, 4});
  EXPECT_ARRAY_EQ(f(x), sum(x.reshape({3, 2, 2}), std::vector<int>{1}));
}

// ---- vmap of a shard_map ----

TEST(VmapOfShardMap, SpecsGainTheBatchDimension) {  // JAX's test_vmap_spmd_axis_name
  Mesh mesh = mesh2(2, 2, "x", "y");
  auto f = shard_map([](const Array& b) { return b; }, mesh, P("x"), P("x"));
  auto batched = vmap(f, {0}, {0}, {.spmd_axis_name = {"y"}});  // a ShardMapped
  EXPECT_EQ(batched.plan().in_specs.str(), "P('y', 'x')");
  EXPECT_EQ(batched.plan().out_specs.str(), "P('y', 'x')");
  Array x = iarange(16, {4, 4});
  EXPECT_ARRAY_EQ(batched(x), x);
  auto replicated = vmap(f);
  EXPECT_EQ(replicated.plan().in_specs.str(), "P(None, 'x')");
  EXPECT_ARRAY_EQ(replicated(x), x);
}

TEST(VmapOfShardMap, BatchedBodyRunsItsCollectivesPerElement) {
  Mesh mesh = mesh2(2, 2, "x", "y");
  auto f = shard_map([](const Array& b) { return psum(b, "x"); }, mesh, P("x"), P());
  Array x = farange(4 * 6, {4, 6});
  Array expected = stack({f(take(x, 0, 0)), f(take(x, 1, 0)), f(take(x, 2, 0)), f(take(x, 3, 0))});
  EXPECT_ARRAY_EQ(vmap(f, {0}, {0}, {.spmd_axis_name = {"y"}})(x), expected);
  EXPECT_ARRAY_EQ(vmap(f)(x), expected);
  auto with_batch_psum = vmap(
      shard_map([](const Array& b) { return psum(b + psum(b, "b") * 0, "x"); }, mesh, P("x"), P()),
      {0}, {0}, {.axis_name = "b"});
  EXPECT_ARRAY_EQ(with_batch_psum(x), expected);
}

TEST(VmapOfShardMap, SpmdAxisNameMustNotBeInTheSpecs) {
  Mesh mesh = mesh2(2, 2, "x", "y");
  auto f = shard_map([](const Array& b) { return b; }, mesh, P("x"), P("x"));
  expect_error<ValueError>([&] { vmap(f, {0}, {0}, {.spmd_axis_name = {"x"}}); },
                           {"vmap spmd_axis_name ('x',) cannot appear in shard_map in_specs"});
}

// ---- faults ----

TEST(VmapFaults, AnElementRaisingAbortsTheOthers) {
  auto f = vmap(
      [](const Array& v) {
        if (v.item<int32_t>() == 2) throw ValueError("element two is bad");
        return psum(v, "b");
      },
      {0}, {0}, {.axis_name = "b"});
  expect_error<ValueError>([&] { f(iarange(4, {4})); }, {"element two is bad"});
}

TEST(VmapFaults, AnElementRaisingInsideABodyAbortsTheCall) {
  // Device 2's element 1 raises before its psum over the mesh; the other devices' elements wait
  // there until the call aborts, and the caller gets the element's error.
  auto f = shard_map(
      [](const Array& block) {
        return vmap(
            [](const Array& v) {
              if (axis_index("i").item<int32_t>() == 2 && axis_index("b").item<int32_t>() == 1) {
                throw ValueError("device 2, element 1");
              }
              return psum(v, "i") + psum(v, "b");
            },
            {0}, {0}, {.axis_name = "b"})(block);
      },
      mesh1(4), P(None, "i"), P(None, "i"), {.check_vma = false});
  expect_error<ValueError>([&] { f(farange(3 * 4, {3, 4})); }, {"device 2, element 1"});
  EXPECT_EQ(f(farange(4, {1, 4})).shape(), (Shape{1, 4}));  // one element: no raise
}

TEST(VmapFaults, ElementsRunningDifferentCollectives) {
  auto skips = vmap([](const Array& v) { return v.item<int32_t>() == 1 ? v : psum(v, "b"); }, {0},
                    {0}, {.axis_name = "b"});
  expect_error<CollectiveMismatch>(
      [&] { skips(iarange(3, {3})); },
      {"batch elements ran different collectives", "element 1 returned from"});
  auto differs =
      vmap([](const Array& v) { return v.item<int32_t>() == 0 ? pmax(v, "b") : psum(v, "b"); }, {0},
           {0}, {.axis_name = "b"});
  expect_error<CollectiveMismatch>(
      [&] { differs(iarange(3, {3})); },
      {"batch elements ran different collectives", "pmax of i32[]", "psum of i32[]"});
}

}  // namespace
}  // namespace spmd
