// Other rules' edits inside a migrated pmap's function (found by the fuzzer: the pmap's code
// copies the function, the pvary rule edited it too, and the two edits conflicted, so the tool
// exited 2 and left the file): the copy carries the other rules' edits, which are applied once.
// When the pmap is left for a human, they are applied where they are written.
#include <spmd/collectives.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

using spmd::Array;

namespace app {

// Called at once: pvary in the lambda.
Array varying(const Array& x) {
  return [f = [](const Array& v) { return spmd::pcast(v, "i", spmd::To::kVarying) * 2; }](
             const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  }(x);
}

// Stored: two pvary calls and a device_put_replicated in the lambda.
Array stored(const Array& x, const std::vector<spmd::Device>& devices) {
  auto f = [f = [&devices](const Array& v) {
    Array r = spmd::device_put(
        spmd::stack(std::vector<spmd::Array>(devices.size(), v)),
        spmd::NamedSharding(spmd::Mesh(devices, {static_cast<int64_t>(devices.size())}, {"x"}),
                            spmd::P("x")));
    return spmd::pcast(v, "i", spmd::To::kVarying) +
           spmd::pcast(spmd::sum(r), "i", spmd::To::kVarying);
  }](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  };
  return f(x);
}

// A nest through variables: the inner function, with its pvary, moves into the nest.
Array nest(const Array& x) {
  auto inner = [](const Array& v) { return spmd::pcast(v, {"i", "j"}, spmd::To::kVarying); };
  auto outer = [f = inner](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}, {"j"}});
    auto block = [&](const spmd::Array& b0) {
      spmd::Array y = f(spmd::squeeze(b0, std::vector<int>{0, 1}));
      return spmd::expand_dims(spmd::expand_dims(y, 0), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i", "j"), spmd::P("i", "j"),
                           {.check_vma = false})(a0);
  };
  return outer(x);
}

// Left for a human (a negative axis): the pvary in it is migrated where it is written.
Array left(const Array& x) {
  return spmd::pmap([](const Array& v) { return spmd::pcast(v, "i", spmd::To::kVarying); }, "i",
                    {.in_axes = {-1}})(x);
}
// CHECK-MESSAGES: input.cc:[[@LINE-2]]:10: warning: in_axes {-1} has a negative entry, which pmap counts from the end of each value's rank; write the non-negative axis (rank + axis) and run the tool again [spmd-migrate-pmap-negative-axis]

}  // namespace app
