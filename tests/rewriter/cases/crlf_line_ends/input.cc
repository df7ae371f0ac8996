// Line ends: a file written with "\r\n" keeps them in the generated code and the added includes.
// Non-ASCII text in comments (“moyenne”, Größe) is kept byte for byte.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

// Centre every row: x − mean(x).
Array center_rows(const Array& x) {
  auto f = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "i"); }, "i");
  return f(x);
}

spmd::Array vary(const spmd::Array& x) { return spmd::pvary(x, "i"); }

}  // namespace app
