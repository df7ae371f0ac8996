// SPDX-License-Identifier: Apache-2.0
// shard_map: the value cases (S01-S25) and error cases (S26-S47) of docs/conformance.md, block
// formation, output assembly, static arguments and partial manual mode.
#include <atomic>
#include <set>

#include "array_impl.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;
using ::testing::HasSubstr;

const void* data_of(const Array& a) { return internal::const_view(a).data; }

Array s02_input() { return ints({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2}); }

// ---- values (S01-S25) ----

TEST(ShardMapConformance, S01IdentityBlocks) {
  std::vector<Shape> seen(4);
  auto f = shard_map(
      [&](const Array& b) {
        seen[axis_index("i").item<int32_t>()] = b.shape();
        return b;
      },
      mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(f(arange(8)), arange(8));
  for (const Shape& s : seen) EXPECT_EQ(s, Shape{2});
}

TEST(ShardMapConformance, S02Psum) {
  auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P());
  EXPECT_ARRAY_EQ(f(s02_input()), ints({22, 20, 12, 17}));
}

TEST(ShardMapConformance, S04PsumOverTwoAxes) {
  auto f = shard_map(
      [](const Array& b) {
        return psum(b, {"i", "j"});
      },
      mesh2(2, 2), P("i", "j"), P(None, None));
  EXPECT_ARRAY_EQ(f(iarange(16, {4, 4})), ints({20, 24, 36, 40}, {2, 2}));
}

TEST(ShardMapConformance, S05PartialReductions) {
  Mesh mesh = mesh2(4, 2);
  Array x = iarange(144, {12, 12});
  auto over_j =
      shard_map([](const Array& b) { return psum(b, "j"); }, mesh, P("i", "j"), P("i", None));
  auto over_i =
      shard_map([](const Array& b) { return psum(b, "i"); }, mesh, P("i", "j"), P(None, "j"));
  auto over_both = shard_map(
      [](const Array& b) {
        return psum(b, {"i", "j"});
      },
      mesh, P("i", "j"), P());
  EXPECT_EQ(over_j(x).shape(), (Shape{12, 6}));
  EXPECT_EQ(over_i(x).shape(), (Shape{3, 12}));
  EXPECT_EQ(over_both(x).shape(), (Shape{3, 6}));
  // Values: the sum of the two column halves, of the four row blocks, and of all eight blocks.
  EXPECT_ARRAY_EQ(over_j(x), add(slice(x, {0, 0}, {12, 6}), slice(x, {0, 6}, {12, 12})));
  EXPECT_ARRAY_EQ(over_both(x), sum(reshape(x, {4, 3, 2, 6}), {0, 2}));
}

TEST(ShardMapConformance, S06S07AllGather) {
  Array x = ints({3, 9, 5, 2});
  auto tiled = shard_map([](const Array& b) { return all_gather(b, "i", {.tiled = true}); },
                         mesh1(4), P("i"), P("i"));
  auto stacked =
      shard_map([](const Array& b) { return all_gather(b, "i"); }, mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(tiled(x), ints({3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2}));
  EXPECT_ARRAY_EQ(stacked(x), ints({3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2}, {16, 1}));
}

TEST(ShardMapConformance, S08PsumScatterTiled) {
  auto f = shard_map([](const Array& b) { return psum_scatter(b, "i", {.tiled = true}); }, mesh1(4),
                     P("i"), P("i"));
  EXPECT_ARRAY_EQ(f(s02_input()), ints({22, 20, 12, 17}));
}

TEST(ShardMapConformance, S09PpermuteShift) {
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(f(arange(8)), ints({6, 7, 0, 1, 2, 3, 4, 5}));
}

TEST(ShardMapConformance, S10AllToAllTiled) {
  auto f = shard_map([](const Array& b) { return all_to_all(b, "i", 0, 0, {.tiled = true}); },
                     mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(f(s02_input()), ints({3, 5, 5, 9, 1, 9, 3, 7, 4, 2, 5, 1, 1, 6, 8, 2}));
}

TEST(ShardMapConformance, S12AllToAllWithGroups) {
  auto f = shard_map(
      [](const Array& b) {
        return all_to_all(b, "x", 1, 0, {.tiled = true, .axis_index_groups = {{0, 1}, {2, 3}}});
      },
      mesh1(4, "x"), P("x", None), P(None, "x"));
  EXPECT_ARRAY_EQ(f(iarange(16, {4, 4})),
                  ints({0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}, {2, 8}));
}

TEST(ShardMapConformance, S13AxisIndexTwoAxes) {
  Mesh mesh = mesh2(4, 2);
  auto index_of = [&](AxisNames axes) {
    return shard_map(
        [axes]() {
          return axis_index(axes).reshape({1, 1});
        },
        mesh, std::vector<P>{}, P("i", "j"))();
  };
  EXPECT_ARRAY_EQ(index_of("i"), ints({0, 0, 1, 1, 2, 2, 3, 3}, {4, 2}));
  EXPECT_ARRAY_EQ(index_of("j"), ints({0, 1, 0, 1, 0, 1, 0, 1}, {4, 2}));
  EXPECT_ARRAY_EQ(index_of({"i", "j"}), ints({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}));
}

TEST(ShardMapConformance, S14UnmentionedInputAxisTiles) {
  Array x = iarange(144, {12, 12});
  auto f = shard_map([](const Array& b) { return b; }, mesh2(4, 2), P("i", None), P("i", "j"));
  EXPECT_ARRAY_EQ(f(x), concatenate({x, x}, 1));
}

TEST(ShardMapConformance, S15ClosedOverConstant) {
  Array x = floats({3.f}, {1, 1});
  auto run = [&](Specs out) {
    return shard_map([x]() { return x; }, mesh2(4, 2), std::vector<P>{}, out)();
  };
  EXPECT_ARRAY_EQ(run(P("i", "j")), full({4, 2}, 3));
  EXPECT_ARRAY_EQ(run(P("i", None)), full({4, 1}, 3));
  EXPECT_ARRAY_EQ(run(P(None, None)), full({1, 1}, 3));
}

TEST(ShardMapConformance, S18PsumOfInvariantInput) {
  for (bool check : {true, false}) {
    auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P(), P(),
                       {.check_vma = check});
    EXPECT_ARRAY_EQ(f(ints({1, 2})), ints({4, 8}));
  }
}

TEST(ShardMapConformance, S19PminPmax) {
  auto lo = shard_map([](const Array& b) { return pmin(b, "i"); }, mesh1(4), P("i"), P());
  auto hi = shard_map([](const Array& b) { return pmax(b, "i"); }, mesh1(4), P("i"), P());
  EXPECT_ARRAY_EQ(lo(arange(8, DType::kFloat32)), floats({0, 1}));
  EXPECT_ARRAY_EQ(hi(arange(8, DType::kFloat32)), floats({6, 7}));
}

TEST(ShardMapConformance, S22ShardedMatmul) {
  Array a = farange(128, {8, 16});
  Array b = farange(64, {16, 4});
  auto f = shard_map([](const Array& x, const Array& y) { return psum(matmul(x, y), "y"); },
                     mesh2(4, 2, "x", "y"), {P("x", "y"), P("y", None)}, P("x", None));
  EXPECT_ARRAY_EQ(f(a, b), matmul(a, b));
}

TEST(ShardMapConformance, S24UncheckedReplicationReadsDeviceZero) {
  auto f = shard_map([](const Array& b) { return b; }, mesh1(2), P("i"), P(), {.check_vma = false});
  Array y = f(arange(6, DType::kFloat32));
  EXPECT_ARRAY_EQ(y, floats({0, 1, 2}));
  // Each device still holds its own block, as in JAX.
  std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_ARRAY_EQ(shards[1].data, floats({3, 4, 5}));
}

TEST(ShardMapConformance, S25Smap) {
  std::vector<Shape> seen(2);
  auto f = smap(
      [&](const Array& b) {
        seen[axis_index("x").item<int32_t>()] = b.shape();
        return b * 2;
      },
      mesh1(2, "x"), "x", {0}, {0});
  EXPECT_ARRAY_EQ(f(arange(8)), arange(8) * 2);
  EXPECT_EQ(seen, (std::vector<Shape>{{4}, {4}}));
}

// ---- block formation and assembly ----

TEST(ShardMap, TupleEntriesAreMixedRadixMajorFirst) {
  Mesh mesh = mesh2(2, 4, "x", "y");
  // Dim 0 split over (y, x): y is major, so the device at (x, y) holds block y * 2 + x.
  auto f = shard_map([](const Array& b) { return b; }, mesh, P({"y", "x"}), P({"y", "x"}));
  std::vector<int32_t> firsts(8);
  auto g = shard_map(
      [&](const Array& b) {
        firsts[axis_index({"x", "y"}).item<int32_t>()] = b.item<int32_t>();
        return b;
      },
      mesh, P({"y", "x"}), P({"y", "x"}));
  EXPECT_ARRAY_EQ(f(arange(8)), arange(8));
  g(arange(8));
  EXPECT_EQ(firsts, (std::vector<int32_t>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(ShardMap, OutputBlockTransposeWithReorderedTuple) {
  // in over (x, y), out over (y, x): a block transpose of the 2x2 device grid.
  auto f = shard_map([](const Array& b) { return b; }, mesh2(2, 2, "x", "y"), P({"x", "y"}),
                     P({"y", "x"}));
  EXPECT_ARRAY_EQ(f(arange(8)), ints({0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(ShardMap, StaticArgumentsArePassedUnchanged) {
  auto f = shard_map(
      [](const Array& b, int k, const std::string& tag) {
        EXPECT_EQ(tag, "scale");
        return b * k;
      },
      mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(f(arange(8), 3, std::string("scale")), arange(8) * 3);
}

TEST(ShardMap, TupleOutputsAndPerArgumentSpecs) {
  auto f =
      shard_map([](const Array& x, const Array& w) { return std::make_tuple(x + w, psum(x, "i")); },
                mesh1(4), {P("i"), P()}, {P("i"), P()});
  auto [a, b] = f(arange(8), ints({10, 20}));
  EXPECT_ARRAY_EQ(a, ints({10, 21, 12, 23, 14, 25, 16, 27}));
  EXPECT_ARRAY_EQ(b, ints({12, 16}));
}

TEST(ShardMap, VectorOutputsAndVoidBodies) {
  auto f = shard_map(
      [](const Array& x) {
        return std::vector<Array>{x, x + 1};
      },
      mesh1(2), P("i"), P("i"));
  std::vector<Array> out = f(arange(4));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_ARRAY_EQ(out[1], arange(4) + 1);
  std::atomic<int> calls{0};
  shard_map([&](const Array&) { ++calls; }, mesh1(4), P("i"), std::vector<P>{})(arange(4));
  EXPECT_EQ(calls.load(), 4);
}

TEST(ShardMap, SmallBodiesThatTurnToCollectivesStillMeet) {
  // After calls whose bodies were small, the executor runs a function's bodies on the calling
  // thread alone; a call whose bodies then enter a collective must still run every other body.
  std::atomic<bool> reduce{false};
  auto f = shard_map([&](const Array& b) { return reduce ? psum(b, "i") : b + 0; }, mesh1(8),
                     P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 20});
  for (int k = 0; k < 50; ++k) EXPECT_ARRAY_EQ(f(arange(8)), arange(8));
  reduce = true;
  for (int k = 0; k < 20; ++k) EXPECT_ARRAY_EQ(f(arange(8)), ints(std::vector<int32_t>(8, 28)));
  reduce = false;
  EXPECT_ARRAY_EQ(f(arange(8)), arange(8));
}
TEST(ShardMap, TakingARowOfAShardedArraySharesItsShard) {
  // The legacy pmap's per-device row of a sharded input: a view of that device's shard, not a
  // copy of the whole array.
  Mesh mesh = mesh1(4);
  Array x = device_put(iarange(8, {4, 2}), NamedSharding(mesh, P("i")));
  std::vector<Shard> shards = x.addressable_shards();
  for (int k = 0; k < 4; ++k) {
    Array row = take(x, k, 0);
    EXPECT_ARRAY_EQ(row, ints({2 * k, 2 * k + 1}));
    EXPECT_EQ(data_of(row), data_of(shards[k].data));
  }
  // A row inside a bigger shard starts at its offset; a row across shards (axis 1) is copied.
  Array halves = device_put(iarange(8, {4, 2}), NamedSharding(mesh1(2), P("i")));
  EXPECT_ARRAY_EQ(take(halves, 3, 0), ints({6, 7}));
  EXPECT_EQ(
      data_of(take(halves, 3, 0)),
      static_cast<const char*>(data_of(halves.addressable_shards()[1].data)) + 2 * sizeof(int32_t));
  EXPECT_ARRAY_EQ(take(halves, 1, 1), ints({1, 3, 5, 7}));
}

TEST(ShardMap, InputsAlreadyShardedAreReusedWithoutCopy) {
  Mesh mesh = mesh1(4);
  Array x = device_put(arange(8), NamedSharding(mesh, P("i")));
  std::vector<const void*> seen(4);
  shard_map([&](const Array& b) { seen[axis_index("i").item<int32_t>()] = data_of(b); }, mesh,
            P("i"), std::vector<P>{})(x);
  std::vector<Shard> shards = x.addressable_shards();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(seen[k], data_of(shards[k].data));
  // Output shards of one call feed the next without reshuffling.
  auto twice = shard_map([](const Array& b) { return b * 2; }, mesh, P("i"), P("i"));
  Array y = twice(twice(x));
  EXPECT_EQ(y.sharding(), Sharding(NamedSharding(mesh, P("i"))));
  EXPECT_ARRAY_EQ(y, arange(8) * 4);
}

TEST(ShardMap, HostInputsSplitAlongDimZeroAreViews) {
  Array x = arange(8);
  std::vector<const void*> seen(4);
  shard_map([&](const Array& b) { seen[axis_index("i").item<int32_t>()] = data_of(b); }, mesh1(4),
            P("i"), std::vector<P>{})(x);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(seen[k], static_cast<const char*>(data_of(x)) + 2 * k * sizeof(int32_t));
  }
}

TEST(ShardMap, ReshardsInputsWithOtherShardings) {
  Mesh mesh = mesh2(2, 2);
  Array x = device_put(iarange(16, {4, 4}), NamedSharding(mesh, P("j", "i")));
  auto f = shard_map([](const Array& b) { return b; }, mesh, P("i", "j"), P("i", "j"));
  EXPECT_ARRAY_EQ(f(x), iarange(16, {4, 4}));
}

TEST(ShardMap, DonatedArgumentsAreConsumed) {
  auto f = shard_map([](const Array& x, const Array& y) { return x + y; }, mesh1(4), P("i"), P("i"),
                     {.donate_argnums = {1}});
  Array x = arange(8), y = arange(8);
  EXPECT_ARRAY_EQ(f(x, y), arange(8) * 2);
  EXPECT_FALSE(x.is_deleted());
  EXPECT_TRUE(y.is_deleted());
  expect_error<ValueError>([&] { f(x, y); }, {"has been deleted"});
  auto bad = shard_map([](const Array& a, int) { return a; }, mesh1(4), P("i"), P("i"),
                       {.donate_argnums = {1}});
  expect_error<ValueError>([&] { bad(x, 1); }, {"not the position of an Array argument"});
}

TEST(ShardMap, PartialManualAxesComputeRedundantly) {
  Mesh mesh = mesh2(2, 2);
  std::atomic<int> calls{0};
  auto f = shard_map(
      [&](const Array& b) {
        ++calls;
        return psum(b, "i");
      },
      mesh, P("i"), P(), {.axis_names = {"i"}});
  EXPECT_ARRAY_EQ(f(arange(4)), ints({2, 4}));
  EXPECT_EQ(calls.load(), 4);  // both 'j' positions run the body
  auto g = shard_map([](const Array& b) { return psum(b, "j"); }, mesh, P("i"), P(),
                     {.axis_names = {"i"}});
  expect_error<NameError>([&] { g(arange(4)); }, {"Found an unbound axis name: j", "not manual"});
}

TEST(ShardMap, DifferentBlockShapesAcrossDevicesAreAnError) {
  auto f = shard_map(
      [](const Array& b) {
        return axis_index("i").item<int32_t>() == 0 ? b : concatenate({b, b});
      },
      mesh1(2), P("i"), P("i"));
  expect_error<ValueError>([&] { f(arange(4)); }, {"returned blocks of different types"});
}

// ---- errors (S26-S47) ----

Array identity_f(const Array& x) { return x; }

TEST(ShardMapErrors, S26Divisibility) {
  auto f = shard_map(identity_f, mesh1(4), P("i"), P("i"), {.name = "f"});
  expect_error<ValueError>(
      [&] { f(arange(6)); },
      {"shard_map applied to the function 'f' was given argument arrays with axis sizes that are "
       "not evenly divisible by the corresponding mesh axis sizes:\n\nThe mesh given has shape "
       "(4,) with corresponding axis names ('i',).\n\nthe passed args[0] of shape int32[6] "
       "corresponds to in_specs of value P('i',), which maps array axis 0 (of size 6) to mesh "
       "axis 'i' (of size 4), but 4 does not evenly divide 6\n\nArray arguments' axis sizes "
       "must be evenly divisible"});
}

TEST(ShardMapErrors, S26DivisibilityTupleEntryAndSeveralFailures) {
  auto f = shard_map([](const Array& a, const Array&) { return a; }, mesh2(2, 4), P({"i", "j"}),
                     P({"i", "j"}));
  expect_error<ValueError>([&] { f(arange(6), arange(5)); },
                           {"* the passed args[0] of shape int32[6]",
                            "to mesh axes ('i', 'j') (of total size 8), but 8 does not evenly "
                            "divide 6",
                            "* the passed args[1] of shape int32[5]"});
}

TEST(ShardMapErrors, S27InSpecLongerThanRank) {
  auto f = shard_map(identity_f, mesh2(4, 2), P("i", "j"), P("i"), {.name = "f"});
  expect_error<ValueError>(
      [&] { f(arange(4)); },
      {"in_specs is P('i', 'j') which has length 2, but the passed args[0] has shape int32[4], "
       "which has rank 1 (and 1 < 2)"});
  auto g = shard_map(identity_f, mesh1(4), P("i"), P("i"));
  expect_error<ValueError>([&] { g(Array::scalar(1)); }, {"For scalar values (rank 0)"});
}

TEST(ShardMapErrors, S28RankZeroOutputWithSplitSpec) {
  auto f = shard_map([]() { return Array::scalar(3.0f); }, mesh2(2, 2, "x", "y"), std::vector<P>{},
                     P("x"));
  expect_error<ValueError>([&] { f(); }, {"which has length 1",
                                          "In particular, for rank 0 outputs which are "
                                          "not constant over the mesh, add at least one "
                                          "(singleton) axis"});
}

TEST(ShardMapErrors, S29VaryingOutputDeclaredReplicated) {
  auto f = shard_map(identity_f, mesh1(2), P("i"), P());
  expect_error<ValueError>(
      [&] { f(arange(6, DType::kFloat32)); },
      {"out_specs which require replication which can't be statically inferred",
       "out_specs is P() which implies that the corresponding output value is replicated across "
       "mesh axis 'i', but could not infer replication over any axes",
       "check_vma=false"});
}

TEST(ShardMapErrors, S29SeveralUnmentionedAxes) {
  Mesh mesh = make_mesh({2, 2, 2}, {"i", "j", "k"});
  auto f = shard_map(identity_f, mesh, P("i", "j", "k"), P("i"));
  expect_error<ValueError>(
      [&] {
        f(iarange(8, {2, 2, 2}));
      },
      {"is only varying across mesh axes {i} and not {j,k}, but it was "
       "inferred to be possibly varying over {i,j,k}"});
  auto g = shard_map([](const Array& b) { return psum(b, "j"); }, mesh2(2, 2), P("i", "j"), P("i"));
  EXPECT_EQ(g(iarange(16, {4, 4})).shape(), (Shape{4, 2}));
}

TEST(ShardMapErrors, S31AllGatherIsVaryingUnlessInvariant) {
  auto varying = shard_map([](const Array& b) { return all_gather(b, "i", {.tiled = true}); },
                           mesh1(4), P("i"), P());
  expect_error<ValueError>([&] { varying(arange(8)); }, {"could not infer replication"});
  auto invariant = shard_map(
      [](const Array& b) { return all_gather(b, "i", {.tiled = true, .to = To::kInvariant}); },
      mesh1(4), P("i"), P());
  EXPECT_ARRAY_EQ(invariant(arange(8)), arange(8));
}

TEST(ShardMapErrors, S32S43EmptyMesh) {
  auto f = shard_map(identity_f, Mesh(), P(), P());
  expect_error<ValueError>([&] { f(arange(8)); }, {"shard_map requires a non-empty mesh"});
}

TEST(ShardMapErrors, S33PartialManualSpecNamesAutoAxis) {
  auto f = shard_map(identity_f, mesh2(2, 2), P("i", "j"), P("i"), {.axis_names = {"i"}});
  expect_error<ValueError>(
      [&] {
        f(iarange(16, {4, 4}));
      },
      {"must refer to an axis marked as manual", "in_specs refers to 'j'"});
}

TEST(ShardMapErrors, S34SpecListNotAPrefixOfArguments) {
  auto f = shard_map([](const Array& a, const Array&) { return a; }, mesh1(2),
                     {P("i"), P("i"), P()}, P("i"));
  expect_error<ValueError>([&] { f(arange(4), arange(4)); },
                           {"pytree structure error", "shard_map in_specs"});
  auto g =
      shard_map([](const Array& a) { return std::make_tuple(a, a); }, mesh1(2), P("i"), {P("i")});
  expect_error<ValueError>([&] { g(arange(4)); }, {"shard_map out_specs"});
}

TEST(ShardMapErrors, S44AxisNamesNotASubset) {
  auto f = shard_map(identity_f, mesh1(4), P("i"), P("i"), {.axis_names = {"k"}});
  expect_error<ValueError>([&] { f(arange(8)); },
                           {"shard_map requires axis_names={'k'} to be a subset of "
                            "mesh.axis_names=('i',)"});
}

TEST(ShardMapErrors, S46NestedShardMap) {
  Mesh mesh = mesh2(2, 2);
  auto inner = shard_map(identity_f, mesh, P(None, "j"), P(None, "j"));
  auto outer = shard_map([&](const Array& b) { return inner(b); }, mesh, P("i"), P("i"),
                         {.axis_names = {"i"}});
  expect_error<ValueError>(
      [&] {
        outer(iarange(16, {4, 4}));
      },
      {"context mesh", "should match the mesh passed to shard_map"});
}

TEST(ShardMapErrors, SpecNamesUnknownOrRepeatedAxes) {
  auto unknown = shard_map(identity_f, mesh1(4), P("z"), P("i"));
  expect_error<ValueError>([&] { unknown(arange(8)); }, {"refers to axis 'z'"});
  auto twice = shard_map(identity_f, mesh2(2, 2), P("i", "i"), P("i"));
  expect_error<ValueError>([&] { twice(iarange(16, {4, 4})); }, {"duplicate entries for `i`"});
}

TEST(ShardMapErrors, FunctionNameDefaultsFromTheCallable) {
  auto f = shard_map(identity_f, mesh1(4), P("i"), P("i"));
  expect_error<ValueError>([&] { f(arange(6)); },
                           {fmt::format("to the function '<function> at {}:", __FILE__)});
  auto g = shard_map([](const Array& x) { return x; }, mesh1(4), P("i"), P("i"));
  expect_error<ValueError>([&] { g(arange(6)); },
                           {fmt::format("to the function '<lambda> at {}:", __FILE__)});
}

}  // namespace
}  // namespace spmd
