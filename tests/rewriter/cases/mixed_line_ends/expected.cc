// Line ends: a file whose lines mostly end in "\n", with a few "\r\n" (pasted in), gets "\n" in
// the generated code, its dominant line end; the "\r\n" lines are kept as they are.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

Array center_rows(const Array& x) {
  auto f = [f = [](const Array& v) { return v - spmd::pmean(v, "i"); }](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  };
  return f(x);
}

}  // namespace app
