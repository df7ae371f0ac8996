// SPDX-License-Identifier: Apache-2.0
// Corpus: nested. Perfectly nested pmaps (one shard_map over a multi-axis mesh): default and
// per-level in_axes/out_axes, collectives over one axis or both, three levels, stored nests, and
// nests written through variables (the inner pmap kept in a variable that the outer one maps,
// also called directly).
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array position(spmd::AxisNames axes) {
  return spmd::astype(spmd::axis_index(std::move(axes)), spmd::DType::kFloat32);
}

Array row_sum(const Array& v) { return v + spmd::psum(v, "j"); }

void nested_default_axes() {
  Array x = iota(24).reshape({2, 4, 3});
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return v * 2 + 1; }, "j"), "i");
  corpus::show("y", g(x));
}

void nested_called_directly() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(41), {4, 2, 2});
  corpus::show("y", spmd::pmap(spmd::pmap(row_sum, "j"), "i")(x));
}

void nested_inner_in_axes_1() {
  Array x = iota(24).reshape({2, 3, 4});
  auto g = spmd::pmap(
      spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "j"); }, "j", {.in_axes = {1}}),
      "i");
  corpus::show("y", g(x));
}

void nested_outer_in_axes_1() {
  Array x = iota(24).reshape({4, 2, 3});
  auto g = spmd::pmap(
      spmd::pmap([](const Array& v) { return v * 10 + position("i") - position("j"); }, "j"), "i",
      {.in_axes = {1}});
  corpus::show("y", g(x));
}

void nested_inner_out_axes_1_outer_out_axes_0() {
  Array x = iota(24).reshape({2, 4, 3});
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return spmd::all_gather(v, "j") + v; }, "j",
                                 {.out_axes = {1}}),
                      "i", {.out_axes = {0}});
  corpus::show("y", g(x));
}

void nested_both_out_axes_1() {
  Array x = spmd::random::uniform(spmd::random::PRNGKey(42), {2, 2, 3});
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return v * v; }, "j", {.out_axes = {1}}), "i",
                      {.in_axes = {0}, .out_axes = {1}});
  corpus::show("y", g(x));
}

void nested_psum_each_axis() {
  Array x = iota(16).reshape({2, 4, 2});
  auto g = spmd::pmap(spmd::pmap(
                          [](const Array& v) {
                            return std::make_tuple(spmd::psum(v, "j"), spmd::psum(v, "i"),
                                                   spmd::psum(v, {"i", "j"}));
                          },
                          "j"),
                      "i");
  corpus::show("y", g(x));
}

void nested_axis_index() {
  Array x = iota(8).reshape({4, 2});
  auto g =
      spmd::pmap(spmd::pmap(
                     [](const Array& v) {
                       return std::make_tuple(position("i") * 10 + position("j"),
                                              position({"i", "j"}) + v * 0, position({"j", "i"}));
                     },
                     "j"),
                 "i");
  corpus::show("y", g(x));
}

void nested_inner_out_axes_none() {
  Array x = iota(24).reshape({2, 4, 3});
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return spmd::psum(v, "j"); }, "j",
                                 {.out_axes = {std::nullopt}}),
                      "i");
  corpus::show("y", g(x));
}

void nested_both_out_axes_none() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(43), {2, 2, 2});
  auto g = spmd::pmap(spmd::pmap(
                          [](const Array& v) {
                            Array total = spmd::psum(v, {"i", "j"});
                            return std::make_tuple(total, spmd::pmax(v, "j"));
                          },
                          "j", {.out_axes = {std::nullopt, std::nullopt}}),
                      "i", {.out_axes = {std::nullopt, 0}});
  corpus::show("y", g(x));
}

void nested_unmapped_inner_argument() {
  Array a = iota(24).reshape({2, 4, 3});
  Array w = spmd::random::normal(spmd::random::PRNGKey(44), {2, 3});
  auto g = spmd::pmap(
      spmd::pmap([](const Array& u, const Array& v) { return u * v + spmd::pmean(u, "j"); }, "j",
                 {.in_axes = {0, std::nullopt}}),
      "i");
  corpus::show("y", g(a, w));
}

void nested_static_argument() {
  Array x = iota(8).reshape({2, 2, 2});
  auto g = spmd::pmap(
      spmd::pmap([](const Array& v, float s) { return spmd::pmin(v, "i") * s + v; }, "j"), "i");
  corpus::show("s=2", g(x, 2.0f));
  corpus::show("s=-1", g(x, -1.0f));
}

void three_levels() {
  Array x = iota(24).reshape({2, 2, 2, 3});
  auto g =
      spmd::pmap(spmd::pmap(spmd::pmap(
                                [](const Array& v) {
                                  return v + spmd::psum(v, "k") * 100 + position({"i", "j", "k"});
                                },
                                "k"),
                            "j"),
                 "i");
  corpus::show("y", g(x));
}

void three_levels_with_axes() {
  Array x = iota(16).reshape({2, 2, 2, 2});
  auto g = spmd::pmap(
      spmd::pmap(spmd::pmap(
                     [](const Array& v) {
                       return std::make_tuple(v * position("k"), spmd::psum(v, {"i", "k"}));
                     },
                     "k", {.in_axes = {1}, .out_axes = {0, std::nullopt}}),
                 "j", {.in_axes = {1}}),
      "i", {.out_axes = {1, 0}});
  corpus::show("y", g(x));
}

void nested_stored_called_twice() {
  auto g = spmd::pmap(spmd::pmap(
                          [](const Array& v) {
                            return v - spmd::pmean(v, {"i", "j"});
                          },
                          "j"),
                      "i");
  corpus::show("2x4", g(iota(16).reshape({2, 4, 2})));
  corpus::show("4x2", g(spmd::random::normal(spmd::random::PRNGKey(45), {4, 2, 3})));
}

void nested_lambda_variable() {
  auto body = [](const Array& v) { return spmd::ppermute(v, "j", {{0, 1}, {1, 0}}) + v; };
  auto g = spmd::pmap(spmd::pmap(body, "j"), "i");
  corpus::show("y", g(iota(12).reshape({2, 2, 3})));
}

void nested_both_in_axes_1() {
  Array x = iota(24).reshape({3, 2, 4});
  auto g = spmd::pmap(
      spmd::pmap([](const Array& v) { return v + position("j") * 100; }, "j", {.in_axes = {1}}),
      "i", {.in_axes = {1}});
  corpus::show("y", g(x));
}

void nested_outer_unmapped_argument() {
  Array a = iota(12).reshape({4, 3});
  Array b = spmd::random::normal(spmd::random::PRNGKey(46), {2, 4, 3});
  auto g = spmd::pmap(spmd::pmap([](const Array& u, const Array& v) { return u * v; }, "j"), "i",
                      {.in_axes = {std::nullopt, 0}});
  corpus::show("y", g(a, b));
}

void nested_outer_axis_size_and_donation() {
  Array x = iota(24).reshape({4, 2, 3});
  auto g = spmd::pmap(spmd::pmap(
                          [](const Array& v) {
                            return v * position({"i", "j"});
                          },
                          "j", {.axis_size = 2}),
                      "i", {.axis_size = 4, .donate_argnums = {0}});
  corpus::show("y", g(x));
  try {
    corpus::show("x", x);
  } catch (const std::exception&) {
    fmt::print("x: donated array rejected\n");
  }
}

void nested_outer_devices() {
  std::vector<spmd::Device> all = spmd::devices();
  std::vector<spmd::Device> reversed(all.rbegin(), all.rend());
  auto g = spmd::pmap(
      spmd::pmap([](const Array& v) { return v + spmd::psum(v, "i") * position("j"); }, "j"), "i",
      {.devices = reversed});
  corpus::show("y", g(iota(16).reshape({2, 4, 2})));
}

void nest_of_stored_inner() {
  Array x = iota(16).reshape({2, 4, 2});
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::psum(v, "j"); }, "j");
  auto outer = spmd::pmap(inner, "i");
  corpus::show("y", outer(x));
}

void nest_of_stored_inner_with_options() {
  Array x = iota(24).reshape({4, 3, 2});
  const spmd::PmapOptions inner_options{.in_axes = {1}, .out_axes = {1}};
  auto inner = spmd::pmap(row_sum, "j", inner_options);
  auto outer = spmd::pmap(inner, "i", {.in_axes = {1}});
  corpus::show("y", outer(x.reshape({3, 4, 2})));
}

void nest_of_stored_inner_also_called() {
  auto body = [](const Array& v) { return v - spmd::pmean(v, "j") + position("j"); };
  auto inner = spmd::pmap(body, "j");
  auto outer = spmd::pmap(inner, "i");
  corpus::show("outer", outer(iota(16).reshape({2, 4, 2})));
  corpus::show("inner", inner(iota(8).reshape({4, 2})));
}

void three_levels_through_variables() {
  auto k = spmd::pmap([](const Array& v) { return v + spmd::psum(v, {"i", "k"}); }, "k");
  auto j = spmd::pmap(k, "j");
  auto i = spmd::pmap(j, "i");
  corpus::show("y", i(iota(24).reshape({2, 2, 2, 3})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("nested_default_axes", nested_default_axes);
  corpus::run("nested_called_directly", nested_called_directly);
  corpus::run("nested_inner_in_axes_1", nested_inner_in_axes_1);
  corpus::run("nested_outer_in_axes_1", nested_outer_in_axes_1);
  corpus::run("nested_inner_out_axes_1_outer_out_axes_0", nested_inner_out_axes_1_outer_out_axes_0);
  corpus::run("nested_both_out_axes_1", nested_both_out_axes_1);
  corpus::run("nested_psum_each_axis", nested_psum_each_axis);
  corpus::run("nested_axis_index", nested_axis_index);
  corpus::run("nested_inner_out_axes_none", nested_inner_out_axes_none);
  corpus::run("nested_both_out_axes_none", nested_both_out_axes_none);
  corpus::run("nested_unmapped_inner_argument", nested_unmapped_inner_argument);
  corpus::run("nested_static_argument", nested_static_argument);
  corpus::run("three_levels", three_levels);
  corpus::run("three_levels_with_axes", three_levels_with_axes);
  corpus::run("nested_stored_called_twice", nested_stored_called_twice);
  corpus::run("nested_lambda_variable", nested_lambda_variable);
  corpus::run("nested_both_in_axes_1", nested_both_in_axes_1);
  corpus::run("nested_outer_unmapped_argument", nested_outer_unmapped_argument);
  corpus::run("nested_outer_axis_size_and_donation", nested_outer_axis_size_and_donation);
  corpus::run("nested_outer_devices", nested_outer_devices);
  corpus::run("nest_of_stored_inner", nest_of_stored_inner);
  corpus::run("nest_of_stored_inner_with_options", nest_of_stored_inner_with_options);
  corpus::run("nest_of_stored_inner_also_called", nest_of_stored_inner_also_called);
  corpus::run("three_levels_through_variables", three_levels_through_variables);
}
