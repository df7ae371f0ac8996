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

Array one_argument(const Array& x) { return spmd::pmap(center, "i")(x); }

Array static_argument_first(const Array& x) {
  return spmd::pmap([](int k, const Array& v, const Array& w) { return v * k + w; }, "i",
                    {.in_axes = {1, std::nullopt}})(3, x, x);
}

Array size_and_devices(const Array& x, const std::vector<spmd::Device>& devices) {
  return spmd::pmap(center, "i", {.devices = devices, .axis_size = 4})(x);
}

Array nest(const Array& x) {
  return spmd::pmap(spmd::pmap([](const Array& v) { return v + spmd::psum(v, "j"); }, "j",
                               {.in_axes = {1}}),
                    "i")(x);
}
