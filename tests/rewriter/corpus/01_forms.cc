// SPDX-License-Identifier: Apache-2.0
// Corpus: forms. The ways a pmap callable is made and called: direct, stored, named function,
// functor, captures, function pointer, a namespace-scope callable of this file, static arguments,
// temporaries, collectives in the body.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <tuple>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

// A namespace-scope pmap callable of this file only (internal linkage), only called.
auto centering = spmd::pmap(center, "i");

Array square_plus_index(const Array& v) {
  return v * v + spmd::astype(spmd::axis_index("i"), spmd::DType::kFloat32);
}

struct Affine {
  float scale;
  float shift;
  Array operator()(const Array& v) const { return v * scale + shift; }
};

struct AddBias {
  Array bias;
  Array operator()(const Array& v) const { return v + bias; }
};

void direct_lambda() {
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", spmd::pmap([](const Array& v) { return v * 2 + 1; }, "i")(x));
}

void direct_lambda_collective() {
  Array x = iota(12).reshape({4, 3});
  corpus::show("y", spmd::pmap([](const Array& v) { return v - spmd::psum(v, "i"); }, "i")(x));
}

void stored_called_twice() {
  auto g = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "i"); }, "i");
  Array x = iota(12).reshape({4, 3});
  Array y = spmd::random::normal(spmd::random::PRNGKey(3), {8, 2});
  corpus::show("g(x)", g(x));
  corpus::show("g(y)", g(y));
}

void named_function() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(1), {4, 5});
  corpus::show("y", spmd::pmap(center, "i")(x));
}

void named_function_stored() {
  auto g = spmd::pmap(square_plus_index, "i");
  corpus::show("a", g(iota(6).reshape({2, 3})));
  corpus::show("b", g(iota(8)));
}

void functor_with_state() {
  Affine affine{3.0f, -1.5f};
  auto g = spmd::pmap(affine, "i");
  corpus::show("y", g(iota(8).reshape({8, 1})));
  corpus::show("inline", spmd::pmap(Affine{0.5f, 2.0f}, "i")(iota(6).reshape({2, 3})));
}

void functor_with_array_member() {
  AddBias add{spmd::random::normal(spmd::random::PRNGKey(4), {3})};
  auto g = spmd::pmap(add, "i");
  corpus::show("y", g(iota(12).reshape({4, 3})));
}

void capture_by_reference() {
  Array scale = spmd::random::uniform(spmd::random::PRNGKey(5), {2});
  float offset = 0.5f;
  auto g = spmd::pmap([&](const Array& v) { return v * scale + offset; }, "i");
  Array x = iota(8).reshape({4, 2});
  corpus::show("first", g(x));
  offset = -2.0f;  // seen by the next call: captured by reference
  scale = scale * 10;
  corpus::show("second", g(x));
}

void capture_by_value() {
  Array scale = spmd::random::uniform(spmd::random::PRNGKey(6), {2});
  float offset = 0.25f;
  auto g = spmd::pmap([scale, offset](const Array& v) { return v * scale - offset; }, "i");
  Array x = iota(8).reshape({4, 2});
  corpus::show("first", g(x));
  offset = 100.0f;  // not seen: captured by value
  scale = scale * 10;
  corpus::show("second", g(x));
}

void capture_default_copy_and_ref() {
  Array w = iota(3) + 1;
  int k = 2;
  Array total = spmd::zeros({3});
  auto g = spmd::pmap([=, &total](const Array& v) { return v * w * k + total; }, "i");
  Array x = iota(6).reshape({2, 3});
  corpus::show("first", g(x));
  total = total + 7;
  k = 9;
  corpus::show("second", g(x));
}

void namespace_scope_callable() {
  corpus::show("first", centering(iota(8).reshape({4, 2})));
  corpus::show("second", centering(iota(6).reshape({2, 3})));
}

void function_pointer() {
  Array x = iota(8).reshape({4, 2});
  corpus::show("address_of", spmd::pmap(&center, "i")(x));
  Array (*fp)(const Array&) = &square_plus_index;
  auto g = spmd::pmap(fp, "i");
  corpus::show("pointer_variable", g(x));
}

void static_arguments() {
  auto g = spmd::pmap([](const Array& v, int k, float s) { return v * k + s; }, "i");
  Array x = iota(8).reshape({4, 2});
  corpus::show("k=3,s=0.5", g(x, 3, 0.5f));
  corpus::show("k=-1,s=2", g(x, -1, 2.0f));
}

void static_arguments_first() {
  auto g = spmd::pmap(
      [](int k, const Array& a, double s, const Array& b) {
        return a * k - b * static_cast<float>(s) + spmd::psum(a, "i");
      },
      "i");
  Array a = iota(8).reshape({4, 2});
  Array b = spmd::random::normal(spmd::random::PRNGKey(7), {4, 2});
  corpus::show("y", g(2, a, 1.5, b));
}

void temporaries() {
  auto g = spmd::pmap([](const Array& v) { return spmd::sum(v) + spmd::pmax(v, "i"); }, "i");
  Array x = iota(12);
  corpus::show("reshape", g(x.reshape({4, 3})));
  corpus::show("product", g(x.reshape({6, 2}) * 2));
  corpus::show("fresh", g(spmd::ones({2, 5})));
}

void collectives_reductions() {
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::make_tuple(spmd::psum(v, "i"), spmd::pmean(v, "i"), spmd::pmax(v, "i"),
                               spmd::pmin(v, "i"));
      },
      "i");
  Array x = spmd::random::normal(spmd::random::PRNGKey(8), {4, 3});
  corpus::show("y", g(x));
}

void collectives_all_gather() {
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::make_tuple(spmd::all_gather(v, "i"),
                               spmd::all_gather(v, "i", {.axis = 1, .tiled = true}));
      },
      "i");
  corpus::show("y", g(iota(8).reshape({4, 1, 2})));
}

void collectives_ppermute_axis_index() {
  auto g = spmd::pmap(
      [](const Array& v) {
        Array index = spmd::astype(spmd::axis_index("i"), spmd::DType::kFloat32);
        Array shifted = spmd::ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
        return shifted * 100 + index;
      },
      "i");
  corpus::show("y", g(iota(8).reshape({4, 2})));
}

void collectives_scatter_and_all_to_all() {
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::make_tuple(spmd::psum_scatter(v, "i"),
                               spmd::psum_scatter(v, "i", {.scatter_dimension = 0, .tiled = true}),
                               spmd::all_to_all(v, "i", 0, 0),
                               spmd::all_to_all(v, "i", 0, 1, {.tiled = true}));
      },
      "i");
  corpus::show("y", g(iota(32).reshape({4, 4, 2})));
}

struct Layer {
  Array weight;
  Array apply(const Array& x) const {
    return spmd::pmap([this](const Array& v) { return v * weight + spmd::pmean(v, "i"); }, "i")(x);
  }
};

void member_function_capturing_this() {
  Layer layer{spmd::random::normal(spmd::random::PRNGKey(9), {3})};
  corpus::show("y", layer.apply(iota(12).reshape({4, 3})));
}

void unqualified_after_using_declaration() {
  using spmd::pmap;
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", pmap([](const Array& v) { return v * 3 - spmd::pmin(v, "i"); }, "i")(x));
}

void called_from_another_lambda() {
  auto g = spmd::pmap(center, "i");
  Array x = iota(6).reshape({3, 2});
  auto twice = [&](const Array& v) { return g(g(v)); };
  corpus::show("once", g(x));
  corpus::show("twice", twice(x));
}

void called_in_a_loop() {
  auto g = spmd::pmap([](const Array& v, int k) { return v * k + spmd::psum(v, "i"); }, "i");
  Array x = iota(4).reshape({2, 2});
  for (int k = 1; k <= 3; ++k) x = g(x, k);
  corpus::show("x", x);
}

void empty_options_braces() {
  Array x = iota(8).reshape({8});
  corpus::show("y", spmd::pmap([](const Array& v) { return v + spmd::pmax(v, "i"); }, "i", {})(x));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("direct_lambda", direct_lambda);
  corpus::run("direct_lambda_collective", direct_lambda_collective);
  corpus::run("stored_called_twice", stored_called_twice);
  corpus::run("named_function", named_function);
  corpus::run("named_function_stored", named_function_stored);
  corpus::run("functor_with_state", functor_with_state);
  corpus::run("functor_with_array_member", functor_with_array_member);
  corpus::run("capture_by_reference", capture_by_reference);
  corpus::run("capture_by_value", capture_by_value);
  corpus::run("capture_default_copy_and_ref", capture_default_copy_and_ref);
  corpus::run("namespace_scope_callable", namespace_scope_callable);
  corpus::run("function_pointer", function_pointer);
  corpus::run("static_arguments", static_arguments);
  corpus::run("static_arguments_first", static_arguments_first);
  corpus::run("temporaries", temporaries);
  corpus::run("collectives_reductions", collectives_reductions);
  corpus::run("collectives_all_gather", collectives_all_gather);
  corpus::run("collectives_ppermute_axis_index", collectives_ppermute_axis_index);
  corpus::run("collectives_scatter_and_all_to_all", collectives_scatter_and_all_to_all);
  corpus::run("member_function_capturing_this", member_function_capturing_this);
  corpus::run("unqualified_after_using_declaration", unqualified_after_using_declaration);
  corpus::run("called_from_another_lambda", called_from_another_lambda);
  corpus::run("called_in_a_loop", called_in_a_loop);
  corpus::run("empty_options_braces", empty_options_braces);
  corpus::run("written_in_main", [] {
    Array x = spmd::random::uniform(spmd::random::PRNGKey(10), {4, 2});
    corpus::show("y", spmd::pmap([](const Array& v) { return v / spmd::psum(v, "i"); }, "i")(x));
  });
}
