// SPDX-License-Identifier: Apache-2.0
// Devices, Mesh, PartitionSpec, NamedSharding, the mesh/sharding pictures, and the API spellings
// the public headers document (they must compile as written).
#include <map>
#include <set>
#include <tuple>

#include "test_backend/test_backend.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

// ---- contract spellings (compile-time) ----

// S41: a permutation is a list of pairs; a lazily zipped or associative container is not one.
static_assert(!std::is_convertible_v<std::map<int, int>, std::vector<std::pair<int, int>>>);
// S42: axis names are a name or an ordered list of names, never a set.
static_assert(!std::is_constructible_v<AxisNames, std::set<std::string>>);
// S45: in_specs must be PartitionSpecs, not bare strings or tuples of strings.
static_assert(!std::is_convertible_v<const char*, Specs>);
static_assert(!std::is_convertible_v<std::tuple<const char*>, Specs>);

TEST(Api, ContractSpellingsCompileAndMean) {
  EXPECT_EQ(P().str(), "P()");
  EXPECT_EQ(P("x").str(), "P('x',)");
  EXPECT_EQ(P("x", None).str(), "P('x', None)");
  EXPECT_EQ(P(None, "y").str(), "P(None, 'y')");
  EXPECT_EQ(P({"x", "y"}).str(), "P(('x', 'y'),)");
  EXPECT_EQ(P({"x", "y"}, None).str(), "P(('x', 'y'), None)");
  EXPECT_EQ(P("x", {"y", "z"}).str(), "P('x', ('y', 'z'))");

  Mesh mesh = mesh2(2, 2);
  Array x = arange(4);
  auto f = [](const Array& b) { return b; };
  auto f2 = [](const Array& a, const Array&) { return a; };
  auto g0 = []() { return axis_index("i").reshape({1}); };
  auto pair = [](const Array& b) { return std::make_tuple(b, psum(b, "i")); };
  EXPECT_ARRAY_EQ(shard_map(f, mesh, P("i"), P("i"))(x), x);
  EXPECT_ARRAY_EQ(shard_map(f2, mesh, {P("i"), P()}, P("i"))(x, x), x);
  EXPECT_ARRAY_EQ(shard_map(g0, mesh, std::vector<P>{}, P("i"))(), ints({0, 1}));
  EXPECT_ARRAY_EQ(shard_map(f, mesh, P("i"), P("i"), {.check_vma = false})(x), x);
  auto [a, b] = shard_map(pair, mesh, P("i"), {P("i"), P()})(x);
  EXPECT_ARRAY_EQ(a, x);
  EXPECT_ARRAY_EQ(b, ints({2, 4}));

  auto collectives = [](const Array& v) {
    Array s = psum(v, "i") + psum(v, {"i", "j"});
    Array p = ppermute(v, "i", {{0, 1}, {1, 0}});
    Array t = all_to_all(v.reshape({2, 1}), "i", 0, 0, {.tiled = true}).reshape({2});
    Array r = psum_scatter(concatenate({v, v}), "i", {.scatter_dimension = 0, .tiled = true});
    return s + p + t + r;
  };
  Array y =
      shard_map(collectives, mesh, P({"i", "j"}), P({"i", "j"}), {.check_vma = false})(arange(8));
  EXPECT_EQ(y.shape(), Shape{8});
}

// ---- devices ----

TEST(Devices, EightCpuDevicesInIdOrder) {
  std::vector<Device> d = devices();
  ASSERT_EQ(device_count(), 8);
  ASSERT_EQ(d.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(d[i].id, i);
    EXPECT_EQ(d[i].platform, Platform::kCpu);
    EXPECT_EQ(d[i].process_index, 0);
  }
  EXPECT_EQ(d[3].str(), "cpu:3");
  EXPECT_EQ(collective_timeout_s(), 300);
}

TEST(Devices, InitializeAgainIsANoOpOrAnError) {
  initialize({.cpu_devices = 8});
  expect_error<ValueError>([] { initialize({.cpu_devices = 4}); },
                           {"must run before the devices are first used", "cpu_devices=8"});
  expect_error<ValueError>([] { initialize({.cpu_devices = 0}); },
                           {"InitOptions::cpu_devices must be a whole number from 1 to 4096"});
}

TEST(Errors, SetDevicePrefixesOnce) {
  ValueError e("bad");
  e.set_device(Device{3});
  e.set_device(Device{4});
  EXPECT_STREQ(e.what(), "[on cpu:3] bad");
  EXPECT_EQ(e.device(), Device{3});
}

// ---- Mesh ----

TEST(MeshTest, ShapeNamesAndCoordinates) {
  Mesh mesh = make_mesh({2, 4}, {"data", "model"});
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.ndim(), 2);
  EXPECT_EQ(mesh.axis_size("model"), 4);
  EXPECT_EQ(mesh.axis_index("data"), 0);
  EXPECT_EQ(mesh.axis_index("nope"), -1);
  EXPECT_EQ(mesh.str(), "Mesh('data': 2, 'model': 4)");
  EXPECT_EQ(mesh.sizes_str(), "(2, 4)");
  EXPECT_EQ(mesh.names_str(), "('data', 'model')");
  EXPECT_EQ(mesh1(4).names_str(), "('i',)");
  EXPECT_EQ(mesh.coords(6), (std::vector<int64_t>{1, 2}));
  for (int64_t k = 0; k < 8; ++k) EXPECT_EQ(mesh.linear_index(mesh.coords(k)), k);
  EXPECT_EQ(mesh.position_of(devices()[5]), 5);
  EXPECT_EQ(mesh.shape(),
            (std::vector<std::pair<std::string, int64_t>>{{"data", 2}, {"model", 4}}));
  EXPECT_TRUE(mesh == make_mesh({2, 4}, {"data", "model"}));
  EXPECT_FALSE(mesh == make_mesh({4, 2}, {"data", "model"}));
  EXPECT_TRUE(Mesh().empty());
  expect_error<ValueError>([&] { mesh.axis_size("nope"); }, {"has no axis named 'nope'"});
}

TEST(MeshTest, Errors) {
  expect_error<ValueError>(
      [] {
        make_mesh({3, 3}, {"a", "b"});
      },
      {"Number of devices 8 must be >= the product of mesh_shape (3, 3). Start the program with "
       "more devices (spmd::initialize({.cpu_devices = 9}) or SPMD_CPU_DEVICES=9)."});
  // The advice is the devices' platform's own (the test backend's setting here).
  expect_error<ValueError>(
      [] { make_mesh({16}, {"i"}, devices(testing::kTestPlatform.name())); },
      {"Number of devices 8 must be >= the product of mesh_shape (16,). Start the program with "
       "more devices (SPMD_TEST_BACKEND_DEVICES=16)."});
  expect_error<ValueError>(
      [] {
        make_mesh({2, 2}, {"a"});
      },
      {"devices.ndim == 2 and len(axis_names) == 1"});
  expect_error<ValueError>([] { make_mesh({2, 2}, {"a", "a"}); }, {"'a' appears twice"});
  expect_error<ValueError>(
      [] {
        Mesh({devices()[0], devices()[0]}, {2}, {"a"});
      },
      {"cpu:0 appears twice"});
  expect_error<ValueError>([] { Mesh(devices(), {4}, {"a"}); }, {"needs 4 devices, but 8"});
}

TEST(MeshTest, ExplicitDeviceOrder) {
  std::vector<Device> d = devices();
  Mesh mesh = make_mesh({2}, {"i"}, std::vector<Device>{d[7], d[2]});
  EXPECT_EQ(mesh.devices()[0].id, 7);
  auto f = shard_map([](const Array& b) { return b; }, mesh, P("i"), P("i"));
  std::vector<Shard> shards = f(arange(4)).addressable_shards();
  EXPECT_EQ(shards[0].device.id, 7);
  EXPECT_EQ(shards[1].device.id, 2);
}

// ---- NamedSharding ----

TEST(NamedShardingTest, ShardShapesAndIndices) {
  NamedSharding s(mesh2(2, 4, "x", "y"), P("x", "y"));
  EXPECT_EQ(s.shard_shape({8, 16}), (Shape{4, 4}));
  std::vector<Index> idx = s.device_indices({8, 16});
  ASSERT_EQ(idx.size(), 8u);
  EXPECT_EQ(idx[5], (Index{{4, 8}, {4, 8}}));
  NamedSharding tuple(mesh2(2, 4, "x", "y"), P({"y", "x"}));
  EXPECT_EQ(tuple.device_indices({8})[1], (Index{{2, 3}}));  // (x=0, y=1) -> block 1*2+0
  NamedSharding replicated(mesh2(2, 4, "x", "y"), P(None, "y"));
  EXPECT_EQ(replicated.device_indices({2, 8})[4], (Index{{0, 2}, {0, 2}}));
  EXPECT_EQ(s.str(), "NamedSharding(mesh=Mesh('x': 2, 'y': 4), spec=P('x', 'y'))");
  EXPECT_EQ(Sharding(devices()[2]).str(), "SingleDeviceSharding(cpu:2)");
}

TEST(NamedShardingTest, Errors) {
  expect_error<ValueError>([] { NamedSharding(mesh1(4), P("z")); },
                           {"Resource axis: z of P('z',) is not found in mesh: ('i',)."});
  expect_error<ValueError>(
      [] {
        NamedSharding(mesh2(2, 2), P("i", {"j", "i"}));
      },
      {"A single NamedSharding spec specification can map every mesh axis to at most one "
       "positional dimension, but P('i', ('j', 'i')) has duplicate entries for `i`"});
  NamedSharding s(mesh1(4), P("i"));
  expect_error<ValueError>([&] { s.shard_shape({6}); }, {"4 does not evenly divide 6"});
  expect_error<ValueError>([&] { s.shard_shape({}); }, {"longer than the array's rank"});
}

// ---- pictures ----

TEST(Debug, DescribeMesh) {
  EXPECT_EQ(describe_mesh(make_mesh({2, 4}, {"data", "model"})),
            "Mesh('data': 2, 'model': 4), 8 devices\n"
            "           model=0   model=1   model=2   model=3\n"
            "  data=0 | cpu:0   | cpu:1   | cpu:2   | cpu:3   |\n"
            "  data=1 | cpu:4   | cpu:5   | cpu:6   | cpu:7   |\n");
  EXPECT_EQ(describe_mesh(mesh1(2)),
            "Mesh('i': 2), 2 devices\n"
            "     i=0     i=1\n"
            "   | cpu:0 | cpu:1 |\n");
  EXPECT_THAT(describe_mesh(make_mesh({2, 2, 2}, {"a", "b", "c"})), ::testing::HasSubstr("a=1:\n"));
}

// Found by tests/fuzz/sharding_fuzz.cc: a mesh without axes (one device) was indexed at axis -1.
TEST(Debug, DescribeMeshWithoutAxes) {
  EXPECT_THAT(describe_mesh(make_mesh({}, {})), ::testing::EndsWith(", 1 devices\n  cpu:0\n"));
}

TEST(Debug, VisualizeArraySharding) {
  Mesh mesh = mesh2(2, 2, "x", "y");
  Array x = device_put(farange(16, {4, 4}), NamedSharding(mesh, P("x", "y")));
  EXPECT_EQ(visualize_array_sharding(x),
            "f32[4,4]  NamedSharding(mesh=Mesh('x': 2, 'y': 2), spec=P('x', 'y'))\n"
            "+---------+---------+\n"
            "|  cpu:0  |  cpu:1  | rows 0:2\n"
            "+---------+---------+\n"
            "|  cpu:2  |  cpu:3  | rows 2:4\n"
            "+---------+---------+\n"
            "    0:2       2:4  cols\n");
  Array r = device_put(arange(4), NamedSharding(mesh, P()));
  EXPECT_THAT(visualize_array_sharding(r), ::testing::HasSubstr("cpu:0,cpu:1,cpu:2,cpu:3"));
  expect_error<ValueError>(
      [] {
        visualize_array_sharding(iarange(8, {2, 2, 2}));
      },
      {"rank 1 or 2"});
}

}  // namespace
}  // namespace spmd
