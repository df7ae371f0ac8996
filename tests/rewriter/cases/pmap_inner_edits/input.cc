// Other rules' edits inside a migrated pmap's function (found by the fuzzer: the pmap's code
// copies the function, the pvary rule edited it too, and the two edits conflicted, so the tool
// exited 2 and left the file): the copy carries the other rules' edits, which are applied once.
// When the pmap is left for a human, they are applied where they are written.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

using spmd::Array;

namespace app {

// Called at once: pvary in the lambda.
Array varying(const Array& x) {
  return spmd::pmap([](const Array& v) { return spmd::pvary(v, "i") * 2; }, "i")(x);
}

// Stored: two pvary calls and a device_put_replicated in the lambda.
Array stored(const Array& x, const std::vector<spmd::Device>& devices) {
  auto f = spmd::pmap(
      [&devices](const Array& v) {
        Array r = spmd::device_put_replicated(v, devices);
        return spmd::pvary(v, "i") + spmd::pvary(spmd::sum(r), "i");
      },
      "i");
  return f(x);
}

// A nest through variables: the inner function, with its pvary, moves into the nest.
Array nest(const Array& x) {
  auto inner = spmd::pmap([](const Array& v) { return spmd::pvary(v, {"i", "j"}); }, "j");
  auto outer = spmd::pmap(inner, "i");
  return outer(x);
}

// Left for a human (a negative axis): the pvary in it is migrated where it is written.
Array left(const Array& x) {
  return spmd::pmap([](const Array& v) { return spmd::pvary(v, "i"); }, "i", {.in_axes = {-1}})(x);
}
// CHECK-MESSAGES: input.cc:[[@LINE-2]]:10: warning: in_axes {-1} has a negative entry, which pmap counts from the end of each value's rank; write the non-negative axis (rank + axis) and run the tool again [spmd-migrate-pmap-negative-axis]

}  // namespace app
