// SPDX-License-Identifier: Apache-2.0
// The context mesh (spmd/mesh_context.h) and shard_map/smap nested through it: JAX's
// test_nested_partial_auto, test_nested_partial_auto_1d, test_smap, test_smap_nested_psum,
// test_nested_shmap_innermost_no_axis_names and test_no_mesh_context_error, and their siblings
// (collectives over inner, outer and both axes, check_vma across levels, faults, the errors).
#include <stdexcept>

#include "spmd/pmap.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;
using Names = std::vector<std::string>;

Array square_f(const Array& x) { return x * x; }

// ---- the context mesh ----

TEST(ContextMesh, UseMeshScopesNestAndRestore) {
  EXPECT_TRUE(get_mesh().empty());
  EXPECT_TRUE(get_abstract_mesh().empty());
  {
    auto outer = use_mesh(mesh2(2, 4));
    EXPECT_EQ(get_mesh(), mesh2(2, 4));
    EXPECT_EQ(get_abstract_mesh().str(), "AbstractMesh('i': 2, 'j': 4, axis_types=(Auto, Auto))");
    {
      auto inner = use_mesh(mesh1(4, "k"));
      EXPECT_EQ(get_abstract_mesh().str(), "AbstractMesh('k': 4, axis_types=(Auto,))");
    }
    EXPECT_EQ(get_mesh(), mesh2(2, 4));
  }
  EXPECT_TRUE(get_mesh().empty());
  set_mesh(mesh1(2));
  EXPECT_EQ(get_mesh(), mesh1(2));
  set_mesh(Mesh());
  EXPECT_TRUE(get_mesh().empty());
}

TEST(ContextMesh, N01NoContextIsAnError) {  // JAX's test_no_mesh_context_error
  auto f = shard_map([](const Array& x) { return x; }, P(), P());
  expect_error<ValueError>([&] { f(arange(8)); },
                           {"The context mesh cannot be empty. Use `spmd::use_mesh(mesh)`"});
}

TEST(ContextMesh, ShardMapWithoutMeshMapsOverTheContext) {
  auto psum_i = [](const Array& b) { return psum(b, "i"); };
  auto with_mesh = shard_map(psum_i, mesh1(4), P("i"), P());
  auto without = shard_map(psum_i, P("i"), P());
  auto scope = use_mesh(mesh1(4));
  EXPECT_ARRAY_EQ(without(arange(16)), with_mesh(arange(16)));
}

TEST(ContextMesh, N02MeshIsReadWhenTheFunctionIsCalled) {
  // JAX's test_smap_auto_explicit_nest_mesh_call_time: defined outside any context.
  auto doubled = smap([](const Array& b) { return b * 2; }, "i", {0}, {0});
  {
    auto scope = use_mesh(mesh1(2));
    EXPECT_ARRAY_EQ(doubled(arange(8)), arange(8) * 2);  // JAX's S25
  }
  {
    auto scope = use_mesh(mesh1(4));
    EXPECT_ARRAY_EQ(doubled(arange(8)), arange(8) * 2);
  }
  expect_error<ValueError>([&] { doubled(arange(8)); }, {"The context mesh cannot be empty"});
}

TEST(ContextMesh, GivenMeshMustMatchTheContext) {
  auto scope = use_mesh(mesh1(4));
  auto same = shard_map([](const Array& b) { return b; }, mesh1(4), P("i"), P("i"));
  EXPECT_ARRAY_EQ(same(arange(8)), arange(8));
  auto other = shard_map([](const Array& b) { return b; }, mesh1(2), P("i"), P("i"));
  expect_error<ValueError>(
      [&] { other(arange(8)); },
      {"The context mesh AbstractMesh('i': 4, axis_types=(Auto,)) should match the mesh passed "
       "to shard_map Mesh('i': 2)",
       "Leave the mesh out"});
}

TEST(ContextMesh, PmapMapsOverItsOwnDevicesWhateverTheContext) {
  auto scope = use_mesh(mesh1(2, "other"));
  auto legacy_f = legacy::pmap([](const Array& x) { return psum(x, "i"); }, "i");
  auto compat_f = compat::pmap([](const Array& x) { return psum(x, "i"); }, "i");
  EXPECT_ARRAY_EQ(legacy_f(arange(4)), ints({6, 6, 6, 6}));
  EXPECT_ARRAY_EQ(compat_f(arange(4)), ints({6, 6, 6, 6}));
}

TEST(ContextMesh, CannotBeSetInsideABody) {
  auto f = shard_map(
      [](const Array& b) {
        auto scope = use_mesh(mesh1(2));
        return b;
      },
      mesh1(2), P("i"), P("i"), {.name = "f"});
  expect_error<ValueError>(
      [&] { f(arange(4)); },
      {"spmd::use_mesh can only be used outside of a shard_map or pmap body: inside the body of "
       "'f' the context mesh is AbstractMesh('i': 2, axis_types=(Manual,))"});
}

// ---- nested shard_map ----

TEST(NestedShardMap, N03NestedPartialAuto) {  // JAX's test_nested_partial_auto
  Mesh mesh = mesh2(2, 2);
  Array v = farange(32, {4, 8});
  auto h = [](const Array& x) { return shard_map(square_f, P(None, "j"), P(None, "j"))(x); };
  auto f = shard_map(h, P("i", None), P("i", None), {.check_vma = false, .axis_names = {"i"}});
  auto scope = use_mesh(mesh);
  EXPECT_ARRAY_EQ(f(v), v * v);
}

TEST(NestedShardMap, N04PartialAutoMismatchMeshError) {  // test_partial_auto_mismatch_mesh_error
  Mesh mesh = mesh2(2, 2);
  auto h = [mesh](const Array& x) {
    return shard_map(square_f, mesh, P(None, "j"), P(None, "j"))(x);
  };
  auto f = shard_map(h, mesh, P("i", None), P("i", None),
                     {.check_vma = false, .axis_names = {"i"}, .name = "h"});
  expect_error<ValueError>(
      [&] {
        f(farange(32, {4, 8}));
      },
      {"The context mesh AbstractMesh('i': 2, 'j': 2, axis_types=(Manual, Auto)) should match "
       "the mesh passed to shard_map Mesh('i': 2, 'j': 2): shard_map was called inside the body "
       "of 'h', whose mesh axes {'i'} are manual there. Leave the mesh out"});
}

struct Partial1d {
  const char* dim1;  // outer in/out spec entry of dim 0 ("" for None)
  const char* dim2;  // inner in/out spec entry of dim 1
  Names outer_vma;
  Names inner_vma;
};

PartitionSpec::Entry entry(const char* name) {
  return *name ? PartitionSpec::Entry(name) : PartitionSpec::Entry(None);
}

class NestedPartialAuto1d : public ::testing::TestWithParam<Partial1d> {};

TEST_P(NestedPartialAuto1d, N05VmaAndValues) {  // JAX's test_nested_partial_auto_1d
  const Partial1d& c = GetParam();
  Array np_inp = farange(32, {4, 8});
  auto g = [&c](const Array& x) {
    EXPECT_EQ(get_abstract_mesh().manual_axes(), (Names{"x", "y"}));
    EXPECT_EQ(get_abstract_mesh().auto_axes(), (Names{"z"}));
    EXPECT_EQ(varying_axes(x), c.inner_vma);
    Array out = x * x;
    EXPECT_EQ(varying_axes(out), c.inner_vma);
    return out;
  };
  auto h = [&](const Array& x) {
    EXPECT_EQ(get_abstract_mesh().manual_axes(), (Names{"x"}));
    EXPECT_EQ(get_abstract_mesh().auto_axes(), (Names{"y", "z"}));
    EXPECT_EQ(varying_axes(x), c.outer_vma);
    Array out =
        shard_map(g, P(None, entry(c.dim2)), P(None, entry(c.dim2)), {.axis_names = {"y"}})(x);
    EXPECT_EQ(varying_axes(out), c.outer_vma);
    return out;
  };
  auto f = shard_map(h, P(entry(c.dim1), None), P(entry(c.dim1), None), {.axis_names = {"x"}});
  auto scope = use_mesh(make_mesh({2, 2, 2}, {"x", "y", "z"}));
  EXPECT_ARRAY_EQ(f(np_inp), np_inp * np_inp);
}

INSTANTIATE_TEST_SUITE_P(JaxCases, NestedPartialAuto1d,
                         ::testing::Values(Partial1d{"x", "y", {"x"}, {"x", "y"}},
                                           Partial1d{"", "y", {}, {"y"}},
                                           Partial1d{"x", "", {"x"}, {"x"}},
                                           Partial1d{"", "", {}, {}}));

TEST(NestedShardMap, N06Smap) {  // JAX's test_smap
  Array np_inp = farange(32, {4, 8});
  auto g = [](const Array& x) {
    EXPECT_EQ(get_abstract_mesh().manual_axes(), (Names{"x", "y"}));
    EXPECT_EQ(varying_axes(x), (Names{"x", "y"}));
    EXPECT_EQ(x.shape(), (Shape{1, 8}));
    return x * x;
  };
  auto h = [&g](const Array& x) {
    EXPECT_EQ(get_abstract_mesh().auto_axes(), (Names{"y", "z"}));
    EXPECT_EQ(varying_axes(x), (Names{"x"}));
    Array out = smap(g, "y", {0}, {0})(x);
    EXPECT_EQ(varying_axes(out), (Names{"x"}));
    return out;
  };
  auto f = smap(h, "x", {0}, {0});
  auto scope = use_mesh(make_mesh({2, 2, 2}, {"x", "y", "z"}));
  EXPECT_ARRAY_EQ(f(np_inp), np_inp * np_inp);
}

TEST(NestedShardMap, N07SmapNestedPsum) {  // JAX's test_smap_nested_psum
  auto g = [](const Array& x) {
    EXPECT_EQ(varying_axes(x), (Names{"x", "y"}));
    Array s = psum(x, "y");
    EXPECT_EQ(varying_axes(s), (Names{"x"}));
    return s;
  };
  auto f = smap(
      [&g](const Array& x) {
        Array out = smap(g, "y", {0}, {std::nullopt})(sin(x));
        EXPECT_EQ(varying_axes(out), (Names{"x"}));
        return out;
      },
      "x", {0}, {0});
  auto scope = use_mesh(mesh2(2, 2, "x", "y"));
  Array t = sin(farange(4, {4}));
  Array expected = stack({add(take(t, 0, 0), take(t, 1, 0)), add(take(t, 2, 0), take(t, 3, 0))});
  EXPECT_ARRAY_EQ(f(farange(4, {4})), expected);
}

TEST(NestedShardMap, N08InnermostWithoutAxisNames) {  // test_nested_shmap_innermost_no_axis_names
  auto h = [](const Array& x) {
    EXPECT_EQ(get_abstract_mesh().manual_axes(), (Names{"x", "y"}));
    auto innermost = [](const Array& y) {
      EXPECT_EQ(get_abstract_mesh().manual_axes(), (Names{"x", "y", "z"}));
      return y * 2;
    };
    return shard_map(innermost, P(), P())(x);
  };
  auto g = [&h](const Array& x) { return shard_map(h, P(), P(), {.axis_names = {"y"}})(x); };
  auto f = shard_map(g, P(), P(), {.axis_names = {"x"}});
  auto scope = use_mesh(make_mesh({2, 2, 2}, {"x", "y", "z"}));
  EXPECT_ARRAY_EQ(f(ones({4})), ones({4}) * 2);
}

// Runs `inner_body` over 'j' inside a body over 'i' of Mesh('i': 2, 'j': 4), on arange(8) split
// over both ('i' major), with the given inner and outer out_specs.
template <class F>
Array over_i_then_j(F inner_body, PartitionSpec inner_out, PartitionSpec outer_out) {
  auto outer = [=](const Array& x) { return shard_map(inner_body, P("j"), inner_out)(x); };
  auto scope = use_mesh(mesh2(2, 4));
  return shard_map(outer, P("i"), outer_out, {.axis_names = {"i"}})(arange(8, DType::kFloat32));
}

TEST(NestedShardMap, N09CollectivesOverInnerOuterAndBothAxes) {
  EXPECT_ARRAY_EQ(over_i_then_j(
                      [](const Array&) {
                        return axis_index({"i", "j"}).reshape({1});
                      },
                      P("j"), P("i")),
                  arange(8));
  EXPECT_ARRAY_EQ(over_i_then_j([](const Array& b) { return psum(b, "j"); }, P(), P("i")),
                  floats({6, 22}));
  EXPECT_ARRAY_EQ(over_i_then_j([](const Array& b) { return psum(b, "i"); }, P("j"), P()),
                  floats({4, 6, 8, 10}));
  EXPECT_ARRAY_EQ(over_i_then_j(
                      [](const Array& b) {
                        return psum(b, {"i", "j"});
                      },
                      P(), P()),
                  floats({28}));
  EXPECT_ARRAY_EQ(over_i_then_j(
                      [](const Array& b) {
                        return ppermute(b, "j", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
                      },
                      P("j"), P("i")),
                  floats({3, 0, 1, 2, 7, 4, 5, 6}));
}

TEST(NestedShardMap, N09MatchesOneShardMapOverBothAxes) {
  auto body = [](const Array& b) {
    Array position = astype(axis_index({"i", "j"}), DType::kFloat32);
    return psum(b * b, "i") + psum(b, "j") * position;
  };
  auto scope = use_mesh(mesh2(2, 4));
  auto flat = shard_map(body, P("i", "j"), P("i", "j"));
  auto nested =
      shard_map([&body](const Array& x) { return shard_map(body, P(None, "j"), P(None, "j"))(x); },
                P("i", None), P("i", None), {.axis_names = {"i"}});
  Array x = farange(48, {6, 8});
  EXPECT_ARRAY_EQ(nested(x), flat(x));
}

TEST(NestedShardMap, VectorOutputs) {
  auto inner = [](const Array& b) { return std::vector<Array>{b, b * 2}; };
  auto outer = [&inner](const Array& x) {
    std::vector<Array> outs = shard_map(inner, P("j"), P("j"))(x);
    return outs[0] + outs[1];
  };
  auto scope = use_mesh(mesh2(2, 4));
  Array x = arange(8, DType::kFloat32);
  EXPECT_ARRAY_EQ(shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}})(x), x * 3);
}

TEST(NestedShardMap, InnerOutSpecMustNotClaimReplication) {
  auto outer = [](const Array& x) {
    return shard_map([](const Array& b) { return b; }, P("j"), P(), {.name = "g"})(x);
  };
  auto scope = use_mesh(mesh2(2, 4));
  expect_error<ValueError>(
      [&] { shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}})(arange(8)); },
      {"shard_map applied to the function 'g' was given out_specs which require replication",
       "out_specs is P() which implies that the corresponding output value is replicated across "
       "mesh axis 'j'"});
}

TEST(NestedShardMap, InnerWithoutCheckVmaTakesTheFirstDeviceAlongOmittedAxes) {
  auto outer = [](const Array& x) {
    return shard_map([](const Array& b) { return b; }, P("j"), P(), {.check_vma = false})(x);
  };
  auto scope = use_mesh(mesh2(2, 4));
  auto f = shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}});
  EXPECT_ARRAY_EQ(f(arange(8, DType::kFloat32)), floats({0, 4}));
}

TEST(NestedShardMap, N10OuterCheckHoldsThroughAnUncheckedInnerCall) {
  auto outer = [](const Array& x) {
    return shard_map(
        [](const Array&) { return astype(axis_index("i"), DType::kFloat32).reshape({1}); }, P("j"),
        P(), {.check_vma = false})(x);
  };
  auto scope = use_mesh(mesh2(2, 4));
  expect_error<ValueError>(
      [&] { shard_map(outer, P("i"), P(), {.axis_names = {"i"}, .name = "h"})(arange(8)); },
      {"shard_map applied to the function 'h' was given out_specs which require replication",
       "replicated across mesh axis 'i'"});
}

TEST(NestedShardMap, N10SpecNamingAnAxisAlreadyManualIsAnError) {
  auto outer = [](const Array& x) { return shard_map(square_f, P("i"), P("i"))(x); };
  auto scope = use_mesh(mesh2(2, 4));
  expect_error<ValueError>(
      [&] { shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}, .name = "h"})(arange(8)); },
      {"shard_map in_specs is P('i',), which refers to axis 'i', but that axis is already manual "
       "in the enclosing body of 'h' (the context mesh is AbstractMesh('i': 2, 'j': 4, "
       "axis_types=(Manual, Auto))): the values there are already split over it. Name only axes "
       "this shard_map makes manual, {'j'}."});
}

TEST(NestedShardMap, SpecAxesMustBeInAxisNames) {
  auto outer = [](const Array& x) {
    return shard_map(square_f, P("j"), P("j"), {.axis_names = {"k"}})(x);
  };
  auto scope = use_mesh(make_mesh({2, 2, 2}, {"i", "j", "k"}));
  expect_error<ValueError>(
      [&] { shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}})(arange(8)); },
      {"shard_map in_specs argument must refer to an axis marked as manual ({'k'})",
       "in_specs refers to 'j'"});
}

TEST(NestedShardMap, TimeoutBelongsToTheOutermostCall) {
  auto outer = [](const Array& x) {
    return shard_map(square_f, P("j"), P("j"), {.collective_timeout_s = 1.0})(x);
  };
  auto scope = use_mesh(mesh2(2, 4));
  expect_error<NotImplementedError>(
      [&] { shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}, .name = "h"})(arange(8)); },
      {"ShardMapOptions::collective_timeout_s was given to a shard_map nested inside the body of "
       "'h'",
       "Set the timeout on the outermost shard_map."});
}

TEST(NestedShardMap, InnerFaultReachesTheCaller) {
  auto outer = [](const Array& x) {
    return shard_map(
        [](const Array& b) {
          if (axis_index({"i", "j"}).item<int32_t>() == 5) throw std::runtime_error("boom at 5");
          return b;
        },
        P("j"), P("j"))(x);
  };
  auto scope = use_mesh(mesh2(2, 4));
  expect_error<std::runtime_error>(
      [&] { shard_map(outer, P("i"), P("i"), {.axis_names = {"i"}})(arange(8)); }, {"boom at 5"});
}

TEST(NestedShardMap, InsideAPmapBodyIsAnError) {
  auto f = compat::pmap([](const Array& x) { return shard_map(square_f, P(), P())(x); }, "i");
  expect_error<ValueError>([&] { f(arange(4)); }, {"should match the mesh passed to shard_map",
                                                   "Inside a pmap body, map every axis with pmap"});
}

}  // namespace
}  // namespace spmd
