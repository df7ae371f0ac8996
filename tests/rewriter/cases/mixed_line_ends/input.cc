// Line ends: a file whose lines mostly end in "\n", with a few "\r\n" (pasted in), gets "\n" in
// the generated code, its dominant line end; the "\r\n" lines are kept as they are.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

Array center_rows(const Array& x) {
  auto f = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "i"); }, "i");
  return f(x);
}

}  // namespace app
