// SPDX-License-Identifier: Apache-2.0
// Corpus: outputs. What the mapped function returns: tuples of 1 and 3, std::vector<Array>,
// nothing, integer and bool arrays, with default and per-output out_axes.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

std::tuple<Array, Array, Array> moments(const Array& v) {
  Array mean = spmd::pmean(v, "i");
  Array centered = v - mean;
  return std::make_tuple(mean, centered, spmd::pmean(centered * centered, "i"));
}

void tuple_of_three() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(31), {4, 3});
  auto g =
      spmd::pmap([](const Array& v) { return std::make_tuple(v, v * 2, spmd::psum(v, "i")); }, "i");
  corpus::show("y", g(x));
}

void tuple_of_three_per_output_axes() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap(moments, "i", {.out_axes = {std::nullopt, 1, std::nullopt}});
  auto [mean, centered, variance] = g(x);
  corpus::show("mean", mean);
  corpus::show("centered", centered);
  corpus::show("variance", variance);
}

void tuple_from_braces() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(
      [](const Array& v) -> std::tuple<Array, Array> {
        return {v + spmd::pmax(v, "i"), v * v};
      },
      "i", {.out_axes = {1, 0}});
  corpus::show("y", g(x));
}

void tuple_of_one() {
  Array x = iota(6).reshape({2, 3});
  auto g = spmd::pmap([](const Array& v) { return std::make_tuple(v - 1); }, "i");
  std::tuple<Array> y = g(x);
  corpus::show("y", y);
  corpus::show("get", std::get<0>(y));
}

void tuple_of_one_out_axes_1() {
  Array x = iota(6).reshape({3, 2});
  auto g = spmd::pmap([](const Array& v) { return std::tuple<Array>(spmd::all_gather(v, "i")); },
                      "i", {.out_axes = {1}});
  corpus::show("y", g(x));
}

void vector_output() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::vector<Array>{v, spmd::psum(v, "i"), spmd::exp(v / 8)};
      },
      "i");
  std::vector<Array> ys = g(x);
  fmt::print("count: {}\n", ys.size());
  corpus::show("ys", ys);
}

void vector_output_out_axes_1() {
  Array x = spmd::random::uniform(spmd::random::PRNGKey(32), {2, 4});
  auto g = spmd::pmap(
      [](const Array& v) {
        std::vector<Array> out;
        for (int k = 1; k <= 3; ++k) out.push_back(v * k);
        return out;
      },
      "i", {.in_axes = {1}, .out_axes = {1}});
  corpus::show("ys", g(x));
}

void vector_output_replicated() {
  Array x = iota(8).reshape({8, 1});
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::vector<Array>{spmd::psum(v, "i"), spmd::pmax(v, "i")};
      },
      "i", {.out_axes = {std::nullopt}});
  corpus::show("ys", g(x));
}

void void_output() {
  Array x = iota(8).reshape({4, 2});
  spmd::pmap(
      [](const Array& v) {
        Array unused = v * 2;
        (void)unused;
      },
      "i")(x);
  corpus::show("x after", x);
}

void void_output_with_collective() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(33), {4, 2});
  auto g = spmd::pmap([](const Array& v, int k) { (void)spmd::psum(v * k, "i"); }, "i");
  g(x, 2);
  g(x.reshape({2, 4}), 3);
  corpus::show("x after", x);
}

void int32_arrays() {
  Array x = spmd::arange(12, spmd::DType::kInt32).reshape({4, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        return std::make_tuple(spmd::psum(v, "i"), v * 3 - 1, spmd::floor_divide(v, v + 1), v % 4,
                               spmd::axis_index("i") + v);
      },
      "i");
  corpus::show("y", g(x));
}

void int32_mean_is_float() {
  Array x = spmd::arange(8, spmd::DType::kInt32).reshape({8});
  corpus::show("y", spmd::pmap([](const Array& v) { return spmd::pmean(v, "i") + v; }, "i")(x));
}

void bool_results() {
  Array x = spmd::random::normal(spmd::random::PRNGKey(34), {4, 3});
  auto g = spmd::pmap(
      [](const Array& v) {
        Array above = v > spmd::pmean(v, "i");
        return std::make_tuple(above, spmd::psum(above, "i"), !above,
                               spmd::logical_and(above, v > 0));
      },
      "i");
  corpus::show("y", g(x));
}

void bool_input() {
  Array x = spmd::arange(8, spmd::DType::kInt32).reshape({4, 2}) % 3 == 0;
  auto g = spmd::pmap(
      [](const Array& v) { return std::make_tuple(spmd::any(v), spmd::pmax(v, "i")); }, "i");
  corpus::show("y", g(x));
}

void mixed_dtypes_per_output_axes() {
  Array a = spmd::arange(8, spmd::DType::kInt32).reshape({4, 2});
  Array b = iota(8).reshape({4, 2}) / 3;
  auto g = spmd::pmap(
      [](const Array& u, const Array& v) {
        return std::make_tuple(u + 1, v < 1, spmd::astype(u, spmd::DType::kFloat64) * v,
                               spmd::psum(u, "i"));
      },
      "i", {.out_axes = {0, 1, 1, std::nullopt}});
  corpus::show("y", g(a, b));
}

void vector_output_empty() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(
      [](const Array& v) {
        std::vector<Array> none;
        if (spmd::sum(v).item<float>() < 0) none.push_back(v);
        return none;
      },
      "i");
  fmt::print("count: {}\n", g(x).size());
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("tuple_of_three", tuple_of_three);
  corpus::run("tuple_of_three_per_output_axes", tuple_of_three_per_output_axes);
  corpus::run("tuple_from_braces", tuple_from_braces);
  corpus::run("tuple_of_one", tuple_of_one);
  corpus::run("tuple_of_one_out_axes_1", tuple_of_one_out_axes_1);
  corpus::run("vector_output", vector_output);
  corpus::run("vector_output_out_axes_1", vector_output_out_axes_1);
  corpus::run("vector_output_replicated", vector_output_replicated);
  corpus::run("vector_output_empty", vector_output_empty);
  corpus::run("void_output", void_output);
  corpus::run("void_output_with_collective", void_output_with_collective);
  corpus::run("int32_arrays", int32_arrays);
  corpus::run("int32_mean_is_float", int32_mean_is_float);
  corpus::run("bool_results", bool_results);
  corpus::run("bool_input", bool_input);
  corpus::run("mixed_dtypes_per_output_axes", mixed_dtypes_per_output_axes);
}
