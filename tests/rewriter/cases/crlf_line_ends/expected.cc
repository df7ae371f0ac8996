// Line ends: a file written with "\r\n" keeps them in the generated code and the added includes.
// Non-ASCII text in comments (“moyenne”, Größe) is kept byte for byte.
#include <spmd/collectives.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

// Centre every row: x − mean(x).
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

spmd::Array vary(const spmd::Array& x) { return spmd::pcast(x, "i", spmd::To::kVarying); }

}  // namespace app
