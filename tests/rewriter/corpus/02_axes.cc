// SPDX-License-Identifier: Apache-2.0
// Corpus: axes. in_axes and out_axes: other mapped dimensions, per-argument and per-output
// entries, std::nullopt on unmapped inputs and on provably replicated outputs, const options.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array total_over_i(const Array& v) { return spmd::psum(v, "i"); }

void in_axes_1() {
  Array x = iota(24).reshape({3, 4, 2});
  auto g =
      spmd::pmap([](const Array& v) { return v * 2 - spmd::pmean(v, "i"); }, "i", {.in_axes = {1}});
  corpus::show("y", g(x));
}

void in_axes_2() {
  Array x = iota(24).reshape({2, 3, 4});
  corpus::show("y", spmd::pmap([](const Array& v) { return spmd::sum(v + spmd::pmax(v, "i"), 1); },
                               "i", {.in_axes = {2}})(x));
}

void in_axes_one_entry_for_two_arguments() {
  Array a = iota(12).reshape({3, 4});
  Array b = spmd::random::normal(spmd::random::PRNGKey(11), {2, 4});
  auto g = spmd::pmap(
      [](const Array& u, const Array& v) {
        return spmd::concatenate({u, v}) * 3;
      },
      "i", {.in_axes = {1}});
  corpus::show("y", g(a, b));
}

void in_axes_mapped_and_unmapped() {
  Array a = iota(12).reshape({4, 3});
  Array w = spmd::random::normal(spmd::random::PRNGKey(12), {3});
  auto g = spmd::pmap([](const Array& v, const Array& u) { return v * u + spmd::psum(v, "i"); },
                      "i", {.in_axes = {0, std::nullopt}});
  corpus::show("y", g(a, w));
}

void in_axes_unmapped_and_axis_1() {
  Array w = iota(3) - 1;
  Array b = spmd::random::uniform(spmd::random::PRNGKey(13), {3, 4});
  auto g = spmd::pmap([](const Array& u, const Array& v) { return spmd::dot(u, v) + u; }, "i",
                      {.in_axes = {std::nullopt, 1}});
  corpus::show("y", g(w, b));
}

void out_axes_1() {
  Array x = iota(12).reshape({4, 3});
  corpus::show("y", spmd::pmap([](const Array& v) { return v + spmd::pmin(v, "i"); }, "i",
                               {.out_axes = {1}})(x));
}

void in_axes_1_out_axes_1() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(14), {2, 4, 3});
  auto g = spmd::pmap([](const Array& v) { return spmd::transpose(v) * 2; }, "i",
                      {.in_axes = {1}, .out_axes = {1}});
  corpus::show("y", g(x));
}

void tuple_out_axes_0_1() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap(
      [](const Array& v) { return std::make_tuple(v + 1, spmd::all_gather(v, "i") - v); }, "i",
      {.out_axes = {0, 1}});
  corpus::show("y", g(x));
}

void out_axes_none_psum() {
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", spmd::pmap([](const Array& v) { return spmd::psum(v, "i"); }, "i",
                               {.out_axes = {std::nullopt}})(x));
}

void out_axes_none_named_function() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(15), {8, 2});
  corpus::show("y", spmd::pmap(total_over_i, "i", {.out_axes = {std::nullopt}})(x));
}

void out_axes_none_every_reduction() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(16), {4, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::make_tuple(spmd::psum(v, "i"), spmd::pmean(v, "i"), spmd::pmax(v, "i"),
                               spmd::pmin(v, "i"), spmd::all_gather(v, "i"),
                               spmd::all_gather(v, "i", {.tiled = true}));
      },
      "i",
      {.out_axes = {std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                    std::nullopt}});
  corpus::show("y", g(x));
}

void out_axes_none_locals() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        Array total = spmd::psum(v, "i");
        Array largest = spmd::pmax(v, "i");
        Array scaled = total * 2 + 1;
        return scaled - largest / 4;
      },
      "i", {.out_axes = {std::nullopt}});
  corpus::show("y", g(x));
}

void out_axes_none_with_unmapped_argument() {
  Array a = iota(12).reshape({4, 3});
  Array w = spmd::random::normal(spmd::random::PRNGKey(17), {3});
  auto g = spmd::pmap(
      [](const Array& v, const Array& u) {
        Array mean = spmd::pmean(v, "i");
        return std::make_tuple(v * u, mean * u + 3, spmd::exp(u) - 1);
      },
      "i", {.in_axes = {0, std::nullopt}, .out_axes = {0, std::nullopt, std::nullopt}});
  corpus::show("y", g(a, w));
}

void out_axes_none_with_static_argument() {
  Array x = iota(8).reshape({8, 1});
  auto g = spmd::pmap([](const Array& v, float k) { return spmd::pmax(v, "i") * k; }, "i",
                      {.out_axes = {std::nullopt}});
  corpus::show("k=2", g(x, 2.0f));
  corpus::show("k=-0.5", g(x, -0.5f));
}

void out_axes_none_reduced_then_summed() {
  Array x = spmd::random::uniform(spmd::random::PRNGKey(18), {4, 2, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        const Array gathered = spmd::all_gather(v, "i", {.axis = 1});
        return spmd::sum(gathered, 1) + spmd::axis_size("i");
      },
      "i", {.in_axes = {0}, .out_axes = {std::nullopt}});
  corpus::show("y", g(x));
}

void const_options_variable() {
  const spmd::PmapOptions options{.in_axes = {1}, .out_axes = {1}};
  Array x = iota(24).reshape({3, 4, 2});
  auto f = spmd::pmap([](const Array& v) { return v * v; }, "i", options);
  auto g = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "i"); }, "i", options);
  corpus::show("f", f(x));
  corpus::show("g", g(x));
}

void const_options_variable_with_nullopt() {
  const spmd::PmapOptions options = {.in_axes = {0, std::nullopt}, .out_axes = {std::nullopt}};
  Array a = spmd::random::normal(spmd::random::PRNGKey(19), {4, 3});
  Array b = iota(3);
  auto g = spmd::pmap([](const Array& v, const Array& u) { return spmd::psum(v * u, "i") + u; },
                      "i", options);
  corpus::show("y", g(a, b));
}

void in_axes_from_constexpr() {
  constexpr int kFeatureAxis = 1;
  Array x = iota(12).reshape({3, 4});
  auto g = spmd::pmap([](const Array& v) { return v * spmd::axis_size("i"); }, "i",
                      {.in_axes = {kFeatureAxis}, .out_axes = {kFeatureAxis - 1}});
  corpus::show("y", g(x));
}

void out_axes_none_braced_tuple() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(
      [](const Array& v) -> std::tuple<Array, Array> {
        return {spmd::pmean(v, "i"), v};
      },
      "i", {.out_axes = {std::nullopt, 0}});
  corpus::show("y", g(x));
}

void out_axes_none_reference_local() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(20), {4, 2});
  auto g = spmd::pmap(
      [](const Array& v) {
        const auto& total = spmd::psum(v, {"i"});
        auto biggest = spmd::pmax(v, "i");
        return spmd::where(total > 0, biggest, -biggest);
      },
      "i", {.out_axes = {std::nullopt}});
  corpus::show("y", g(x));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("in_axes_1", in_axes_1);
  corpus::run("in_axes_2", in_axes_2);
  corpus::run("in_axes_one_entry_for_two_arguments", in_axes_one_entry_for_two_arguments);
  corpus::run("in_axes_mapped_and_unmapped", in_axes_mapped_and_unmapped);
  corpus::run("in_axes_unmapped_and_axis_1", in_axes_unmapped_and_axis_1);
  corpus::run("out_axes_1", out_axes_1);
  corpus::run("in_axes_1_out_axes_1", in_axes_1_out_axes_1);
  corpus::run("tuple_out_axes_0_1", tuple_out_axes_0_1);
  corpus::run("out_axes_none_psum", out_axes_none_psum);
  corpus::run("out_axes_none_named_function", out_axes_none_named_function);
  corpus::run("out_axes_none_every_reduction", out_axes_none_every_reduction);
  corpus::run("out_axes_none_locals", out_axes_none_locals);
  corpus::run("out_axes_none_with_unmapped_argument", out_axes_none_with_unmapped_argument);
  corpus::run("out_axes_none_with_static_argument", out_axes_none_with_static_argument);
  corpus::run("out_axes_none_reduced_then_summed", out_axes_none_reduced_then_summed);
  corpus::run("const_options_variable", const_options_variable);
  corpus::run("const_options_variable_with_nullopt", const_options_variable_with_nullopt);
  corpus::run("in_axes_from_constexpr", in_axes_from_constexpr);
  corpus::run("out_axes_none_braced_tuple", out_axes_none_braced_tuple);
  corpus::run("out_axes_none_reference_local", out_axes_none_reference_local);
}
