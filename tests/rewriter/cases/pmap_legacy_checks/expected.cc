// Rule pmap, legacy checks: the migrated code builds its mesh with spmd::pmap_mesh, which raises
// the legacy pmap's ValueError for the calls legacy pmap rejected (a rank-0 argument, more
// elements than devices, sizes that disagree or contradict axis_size, a devices list of the wrong
// size), naming the arguments by their position among all arguments.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <vector>

using spmd::Array;

Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

Array one_argument(const Array& x) {
  return [f = center](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  }(x);
}

Array static_argument_first(const Array& x) {
  return [f = [](int k, const Array& v, const Array& w) { return v * k + w; }](
             const auto& a0, const spmd::Array& a1, const spmd::Array& a2) {
    spmd::Mesh mesh =
        spmd::pmap_mesh({a1, a2}, {{"i", {1, std::nullopt}}}, {.arg_positions = {1, 2}});
    auto block = [&](const auto& b0, const spmd::Array& b1, const spmd::Array& b2) {
      return spmd::expand_dims(f(b0, spmd::squeeze(b1, 1), b2), 0);
    };
    return spmd::shard_map(block, mesh, {spmd::P(spmd::None, "i"), spmd::P()}, spmd::P("i"),
                           {.check_vma = false})(a0, a1, a2);
  }(3, x, x);
}

Array size_and_devices(const Array& x, const std::vector<spmd::Device>& devices) {
  return [f = center, devices = devices, axis_size = 4](const spmd::Array& a0) {
    spmd::Mesh mesh =
        spmd::pmap_mesh({a0}, {{.name = "i", .size = axis_size}}, {.devices = devices});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  }(x);
}

Array nest(const Array& x) {
  return [f = [](const Array& v) { return v + spmd::psum(v, "j"); }](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}, {"j", {1}}});
    auto block = [&](const spmd::Array& b0) {
      spmd::Array y = f(spmd::squeeze(b0, std::vector<int>{0, 2}));
      return spmd::expand_dims(spmd::expand_dims(y, 0), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i", spmd::None, "j"), spmd::P("i", "j"),
                           {.check_vma = false})(a0);
  }(x);
}
