// Rule pvary: pvary(x, axes) becomes pcast(x, axes, To::kVarying), whatever the spelling.
#include <spmd/collectives.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#define VARY(x) spmd::pvary(x, "i")

namespace app {

spmd::Array qualified(const spmd::Array& x) { return spmd::pcast(x, "i", spmd::To::kVarying); }

spmd::Array two_axes(const spmd::Array& x) {
  return spmd::pcast(x + 1, {"i", "j"}, spmd::To::kVarying);
}

spmd::Array using_declaration(const spmd::Array& x) {
  using spmd::pvary;
  return pcast(x, "i", spmd::To::kVarying);
}

spmd::Array in_macro(const spmd::Array& x) { return VARY(x); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:53: warning: pvary is deprecated; this call is inside a macro body or made through a pointer, so it is left as is: write spmd::pcast(x, axes, spmd::To::kVarying) [spmd-migrate-pvary]

// Not spmd's pvary: left alone.
spmd::Array pvary(const spmd::Array& x, const char*) { return x; }
spmd::Array other(const spmd::Array& x) { return pvary(x, "i"); }
// "spmd::pvary(x, "i")" in a string or a comment is not code either.
const char* kText = "spmd::pvary(x, \"i\")";

}  // namespace app
