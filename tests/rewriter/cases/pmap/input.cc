// Rule pmap: every form of spmd::pmap the legacy API allows becomes shard_map code, and every
// site the tool cannot migrate faithfully is reported and left as is.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

#define PMAP_SUM(x) spmd::pmap([](const spmd::Array& v) { return spmd::psum(v, "i"); }, "i")(x)

namespace app {

using spmd::Array;

Array center(const Array& x) { return x - spmd::pmean(x, "i"); }

struct Scale {
  float factor;
  Array operator()(const Array& x) const { return x * factor; }
};

// Called at once, a lambda.
Array direct(const Array& x) {
  return spmd::pmap([](const Array& v) { return v - spmd::psum(v, "i"); }, "i")(x);
}

// Stored and called later (twice), a named function.
Array stored(const Array& x, const Array& y) {
  auto f = spmd::pmap(center, "i");
  return f(x) + f(y);
}

// A functor, a static argument, options in a const variable.
Array functor_and_static(const Array& x) {
  const spmd::PmapOptions options{.in_axes = {1}, .out_axes = {1}};
  auto f = spmd::pmap([](const Array& v, int k) { return v * k; }, "i", options);
  auto g = spmd::pmap(Scale{2.0f}, "i");
  return f(x, 3) + g(x);
}

// in_axes with nullopt, a tuple output with out_axes nullopt on a psum (provably replicated).
std::tuple<Array, Array> tuple_output(const Array& x, const Array& w) {
  auto f = spmd::pmap(
      [](const Array& a, const Array& b) {
        Array total = spmd::psum(spmd::sum(a * b), "i");
        return std::make_tuple(a + b, total);
      },
      "i", {.in_axes = {0, std::nullopt}, .out_axes = {0, std::nullopt}});
  return f(x, w);
}

// devices, axis_size and donate_argnums.
Array placed(const Array& x) {
  std::vector<spmd::Device> devices = spmd::devices();
  devices.resize(4);
  auto f = spmd::pmap([](const Array& v) { return v + 1; }, "i",
                      {.devices = devices, .axis_size = 4, .donate_argnums = {0}});
  return f(x);
}

// An unnamed pmap returning nothing.
void side_effect(const Array& x) {
  spmd::pmap([](const Array& v) { (void)v; }, "")(x);
}

// Nested pmap: one shard_map over a 2-axis mesh.
Array nested(const Array& x) {
  auto f = spmd::pmap(spmd::pmap([](const Array& v) { return spmd::psum(v, "j"); }, "j",
                                 {.in_axes = {1}}),
                      "i");
  return f(x);
}

// A std::vector of outputs.
std::vector<Array> many(const Array& x) {
  return spmd::pmap([](const Array& v) { return std::vector<Array>{v, v * 2}; }, "i")(x);
}

// ---- Left for a human ----

Array in_macro(const Array& x) { return PMAP_SUM(x); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:41: warning: this pmap is written inside a macro, so the tool leaves it as is; expand the macro at this site, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-macro]

template <class F>
Array apply(const F& f, const Array& x) {
  return f(x);
}
Array escapes(const Array& x) {
  auto f = spmd::pmap(center, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:12: warning: the pmap callable 'f' is passed to 'app::apply' (line [[@LINE+1]]), where the tool cannot see its calls; call it only directly, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  return apply(f, x);
}

Array runtime_options(const Array& x, bool transposed) {
  spmd::PmapOptions options;
  if (transposed) options.in_axes = {1};
  return spmd::pmap(center, "i", options)(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: the pmap options are built at run time (or through a variable that is not const), so in_axes/out_axes are unknown at compile time; write them inline or in a const variable [spmd-migrate-pmap-options]
}

Array not_replicated(const Array& x) {
  return spmd::pmap(center, "i", {.out_axes = {std::nullopt}})(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: out_axes=std::nullopt returns device 0's value of output 0, and the tool cannot prove every device along 'i' computes the same value (pmap never checked); make the output replicated (psum/pmean/all_gather over 'i') or give it an integer out_axes [spmd-migrate-pmap-out-axes-none]
}

Array negative_axis(const Array& x) {
  return spmd::pmap(center, "i", {.in_axes = {-1}})(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: in_axes {-1} has a negative entry, which pmap counts from the end of each value's rank; write the non-negative axis (rank + axis) and run the tool again [spmd-migrate-pmap-negative-axis]
}

template <class T>
Array in_template(const T& x) {
  return spmd::pmap(center, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: this pmap is inside a template, where its types depend on template parameters; migrate it by hand (see docs/migration.md) [spmd-migrate-pmap-template]
}

// ---- Not spmd's pmap: untouched ----

namespace other {
template <class F>
F pmap(F f, const char*) {
  return f;
}
}  // namespace other

Array other_pmap(const Array& x) { return other::pmap(center, "i")(x); }
// "spmd::pmap(f, "i")" in a string or a comment is not code either.
const char* kText = "spmd::pmap(center, \"i\")(x)";

}  // namespace app
