// SPDX-License-Identifier: Apache-2.0
// Fuzz seed: the common forms of a pmap callable, each printed.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }
Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

struct Scale {
  float factor;
  Array operator()(const Array& v) const { return v * factor; }
};

void forms() {
  Array x = iota(8).reshape({4, 2});
  corpus::show("direct", spmd::pmap([](const Array& v) { return v * 2 + 1; }, "i")(x));
  auto stored = spmd::pmap(center, "i");
  corpus::show("stored", stored(x) + stored(x * 2));
  corpus::show("functor", spmd::pmap(Scale{1.5f}, "i")(x));
  auto with_static = spmd::pmap([](const Array& v, int k) { return v * k; }, "i");
  corpus::show("static", with_static(x, 3));
}

void options() {
  Array x = iota(12).reshape({3, 4});
  Array w = iota(3);
  auto g = spmd::pmap([](const Array& u, const Array& s) { return u + spmd::psum(u, "i") * s; },
                      "i", {.in_axes = {1, std::nullopt}, .out_axes = {1}});
  corpus::show("in_out_axes", g(x, w));
  auto total = spmd::pmap([](const Array& u) { return spmd::psum(u, "i"); }, "i",
                          {.out_axes = {std::nullopt}});
  corpus::show("replicated", total(x.reshape({4, 3})));
  auto pair = spmd::pmap(
      [](const Array& u) { return std::make_tuple(u * 2, spmd::pmax(u, "i")); }, "i",
      {.out_axes = {0, std::nullopt}});
  corpus::show("tuple", pair(x.reshape({4, 3})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("forms", forms);
  corpus::run("options", options);
}
