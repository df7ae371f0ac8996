// SPDX-License-Identifier: Apache-2.0
// Corpus: imperfect nesting. A pmap that runs inside the function another pmap maps, not written
// as pmap(pmap(f, ...), ...): through a captured callable (by reference or by copy), a helper
// function that makes and calls a pmap, two levels of helpers, a lambda variable, a functor, a
// nest of three levels, collectives over the outer axes inside the inner level, an inner level
// with an unmapped argument and output, and an inner level also called at top level. One
// shard_map cannot express these; every level migrates to spmd::PmapNest, which discovers the
// inner axes at run time as legacy pmap did, and the program must print the same bytes.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <tuple>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array rows(const Array& v) { return v - spmd::psum(v, "j"); }

// A helper that makes and calls the inner pmap.
Array helper(const Array& r) {
  return spmd::pmap(rows, "j")(r.reshape({4, 2}));
}

// Two levels: the pmap body calls scaled_helper, which calls helper2, which runs the inner pmap.
Array helper2(const Array& r) {
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::pmax(v, "j"); }, "j");
  return inner(r.reshape({4, 2}));
}

Array scaled_helper(const Array& r) { return helper2(r * 2) + 1; }

struct RowFunctor {
  Array operator()(const Array& r) const { return helper(r) * 3; }
};

void captured_by_reference() {
  auto inner = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "j"); }, "j");
  auto outer = spmd::pmap([&inner](const Array& r) { return inner(r.reshape({4, 2})); }, "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void captured_by_copy() {
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::psum(v, "j"); }, "j");
  auto outer = spmd::pmap([inner](const Array& r) { return inner(r.reshape({4, 2})) + 1; }, "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void through_helper() {
  auto outer = spmd::pmap([](const Array& r) { return helper(r) + 1; }, "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void through_two_helpers() {
  corpus::show("y", spmd::pmap([](const Array& r) { return scaled_helper(r); }, "i")(
                        iota(16).reshape({2, 8})));
}

void through_a_named_helper_and_a_functor() {
  auto g = spmd::pmap(helper, "i");
  corpus::show("named", g(iota(16).reshape({2, 8})));
  auto h = spmd::pmap(RowFunctor{}, "i");
  corpus::show("functor", h(iota(16).reshape({2, 8})));
}

void lambda_variable() {
  auto body = [](const Array& r) { return helper(r.reshape({8})); };
  auto outer = spmd::pmap(body, "i");
  corpus::show("y", outer(iota(16).reshape({2, 4, 2})));
}

// Three levels, each reached through a helper; the innermost sums over every axis.
Array level_k(const Array& r) {
  auto body = [](const Array& v) { return v + spmd::psum(v, {"i", "j", "k"}) * 0.5f; };
  return spmd::pmap(body, "k")(r.reshape({2, 1}));
}

Array level_j(const Array& r) {
  return spmd::pmap([](const Array& v) { return level_k(v) - spmd::pmean(v, "i"); }, "j")(
      r.reshape({2, 2}));
}

void three_levels() {
  corpus::show("y", spmd::pmap(level_j, "i")(iota(8).reshape({2, 4})));
}

// The inner level reads the outer axis (psum, axis_index) and returns an unmapped output next to
// a mapped one; its second argument is not mapped.
std::tuple<Array, Array> scaled_rows(const Array& r, const Array& w) {
  return spmd::pmap(
      [](const Array& v, const Array& s) {
        return std::make_tuple(v * s + spmd::axis_index("i"), spmd::psum(v, "j"));
      },
      "j", {.in_axes = {0, std::nullopt}, .out_axes = {0, std::nullopt}})(r.reshape({4, 2}), w);
}

void outer_axis_inside() {
  auto outer = spmd::pmap(
      [](const Array& r) {
        auto [rows, total] = scaled_rows(r, spmd::full({2}, 3.0f));
        return spmd::sum(rows, 1) + spmd::sum(total);
      },
      "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

// The same helper, as an inner level and on its own.
void inner_also_at_top_level() {
  corpus::show("nested", spmd::pmap(helper, "i")(iota(16).reshape({2, 8})));
  corpus::show("alone", helper(iota(8)));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("captured_by_reference", captured_by_reference);
  corpus::run("captured_by_copy", captured_by_copy);
  corpus::run("through_helper", through_helper);
  corpus::run("through_two_helpers", through_two_helpers);
  corpus::run("through_a_named_helper_and_a_functor", through_a_named_helper_and_a_functor);
  corpus::run("lambda_variable", lambda_variable);
  corpus::run("three_levels", three_levels);
  corpus::run("outer_axis_inside", outer_axis_inside);
  corpus::run("inner_also_at_top_level", inner_also_at_top_level);
}
