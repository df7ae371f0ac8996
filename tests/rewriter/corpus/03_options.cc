// SPDX-License-Identifier: Apache-2.0
// Corpus: options. devices (subsets, reversed), axis_size (alone and with a mapped argument),
// donate_argnums, the unnamed axis, and several arrays and statics mixed with options.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array position(const char* axis) {
  return spmd::astype(spmd::axis_index(axis), spmd::DType::kFloat32);
}

// Reads a donated array: pmap and shard_map word the error differently, so only say it failed.
void show_donated(const char* label, const Array& x) {
  try {
    corpus::show(label, x);
  } catch (const std::exception&) {
    fmt::print("{}: donated array rejected\n", label);
  }
}

void devices_first_four() {
  std::vector<spmd::Device> devices = spmd::devices();
  devices.resize(4);
  auto g =
      spmd::pmap([](const Array& v) { return v * 10 + position("i"); }, "i", {.devices = devices});
  corpus::show("y", g(iota(8).reshape({4, 2})));
}

void devices_reversed() {
  std::vector<spmd::Device> all = spmd::devices();
  std::vector<spmd::Device> reversed(all.rbegin(), all.rend());
  auto g = spmd::pmap(
      [](const Array& v) {
        Array next = spmd::ppermute(
            v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 0}});
        return std::make_tuple(next + position("i"), spmd::psum(v, "i"));
      },
      "i", {.devices = reversed});
  corpus::show("y", g(spmd::random::normal(spmd::random::PRNGKey(21), {8, 2})));
}

void devices_reversed_subset() {
  std::vector<spmd::Device> all = spmd::devices();
  std::vector<spmd::Device> picked = {all[6], all[4], all[2]};
  auto g = spmd::pmap([](const Array& v) { return spmd::all_gather(v, "i") * position("i"); }, "i",
                      {.devices = picked});
  corpus::show("y", g(iota(6).reshape({3, 2})));
}

void devices_inline_expression() {
  std::vector<spmd::Device> all = spmd::devices();
  auto g = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "i"); }, "i",
                      {.devices = std::vector<spmd::Device>(all.begin() + 3, all.begin() + 5)});
  corpus::show("y", g(iota(6).reshape({2, 3})));
}

void axis_size_with_mapped_argument() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap([](const Array& v) { return v + spmd::pmax(v, "i"); }, "i", {.axis_size = 4});
  corpus::show("y", g(x));
}

void axis_size_from_shape() {
  Array x = spmd::random::uniform(spmd::random::PRNGKey(23), {3, 6});
  Array w = iota(6);
  auto g = spmd::pmap([](const Array& v, const Array& u) { return v * u; }, "i",
                      {.in_axes = {0, std::nullopt}, .axis_size = x.shape()[0]});
  corpus::show("y", g(x, w));
}

void axis_size_mismatch() {
  Array x = iota(12).reshape({4, 3});
  auto g = spmd::pmap([](const Array& v) { return v * 2; }, "i", {.axis_size = 3});
  try {
    corpus::show("y", g(x));
  } catch (const std::exception&) {
    fmt::print("axis_size mismatch rejected\n");
  }
}

void donate_first_argument() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap([](const Array& v) { return v + 1; }, "i", {.donate_argnums = {0}});
  Array y = g(x);
  corpus::show("y", y);
  fmt::print("deleted: {}\n", x.is_deleted());
  show_donated("x", x);
}

void donate_after_static_argument() {
  Array a = iota(8).reshape({4, 2});
  Array b = spmd::random::normal(spmd::random::PRNGKey(24), {4, 2});
  auto g = spmd::pmap([](int k, const Array& u, const Array& v) { return u * k + v; }, "i",
                      {.donate_argnums = {2}});
  corpus::show("y", g(3, a, b));
  fmt::print("deleted: a={} b={}\n", a.is_deleted(), b.is_deleted());
  corpus::show("a", a);
  show_donated("b", b);
}

void donate_two_arguments() {
  Array a = iota(6).reshape({2, 3});
  Array b = iota(6).reshape({2, 3}) * 2;
  Array c = iota(3);
  auto g = spmd::pmap(
      [](const Array& u, const Array& v, const Array& w) { return std::make_tuple(u + w, v - w); },
      "i", {.in_axes = {0, 0, std::nullopt}, .donate_argnums = {0, 1}});
  corpus::show("y", g(a, b, c));
  show_donated("a", a);
  show_donated("b", b);
  corpus::show("c", c);
}

void unnamed_axis() {
  Array x = iota(12).reshape({4, 3});
  corpus::show("y", spmd::pmap([](const Array& v) { return spmd::tanh(v / 4); }, "")(x));
}

void unnamed_axis_stored_with_options() {
  auto g = spmd::pmap([](const Array& v, float s) { return spmd::sqrt(v) * s; }, "",
                      {.in_axes = {1}, .out_axes = {1}});
  Array x = iota(12).reshape({3, 4});
  corpus::show("s=1", g(x, 1.0f));
  corpus::show("s=0.5", g(x.reshape({2, 6}), 0.5f));
}

void mixed_arrays_and_statics() {
  Array a = spmd::random::normal(spmd::random::PRNGKey(25), {4, 2});
  Array w = iota(2) + 1;
  Array c = iota(24).reshape({4, 3, 2});
  auto g = spmd::pmap(
      [](const Array& u, int k, const Array& v, float s, const Array& t) {
        Array mixed = u * k + v * s + spmd::sum(t, 0);
        return std::make_tuple(mixed, spmd::psum(mixed, "i"));
      },
      "i", {.in_axes = {0, std::nullopt, 1}, .out_axes = {1, std::nullopt}});
  corpus::show("y", g(a, 2, w, 0.25f, c.transpose({1, 0, 2})));
}

void every_option_together() {
  std::vector<spmd::Device> all = spmd::devices();
  std::vector<spmd::Device> devices = {all[7], all[5], all[3], all[1]};
  Array a = iota(8).reshape({2, 4});
  Array b = spmd::random::uniform(spmd::random::PRNGKey(26), {2});
  auto g =
      spmd::pmap([](const Array& u, double scale,
                    const Array& v) { return u * static_cast<float>(scale) + v + position("i"); },
                 "i",
                 {.in_axes = {1, std::nullopt},
                  .out_axes = {1},
                  .devices = devices,
                  .axis_size = 4,
                  .donate_argnums = {0}});
  corpus::show("y", g(a, 1.5, b));
  show_donated("a", a);
  corpus::show("b", b);
}

void devices_every_device() {
  auto g = spmd::pmap([](const Array& v) { return v * position("i"); }, "i",
                      {.devices = spmd::devices()});
  corpus::show("y", g(iota(16).reshape({8, 2})));
}

void devices_braced_inline() {
  std::vector<spmd::Device> all = spmd::devices();
  auto g = spmd::pmap([](const Array& v) { return v - position("i"); }, "i",
                      {.devices = std::vector<spmd::Device>{all[3], all[2], all[1], all[0]}});
  corpus::show("y", g(iota(8).reshape({4, 2})));
}

void axis_size_from_size_t() {
  std::vector<spmd::Device> devices = spmd::devices();
  devices.resize(2);
  auto g = spmd::pmap([](const Array& v) { return v + spmd::psum(v, "i"); }, "i",
                      {.devices = devices, .axis_size = devices.size()});
  corpus::show("y", g(iota(6).reshape({2, 3})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("devices_first_four", devices_first_four);
  corpus::run("devices_reversed", devices_reversed);
  corpus::run("devices_reversed_subset", devices_reversed_subset);
  corpus::run("devices_inline_expression", devices_inline_expression);
  corpus::run("axis_size_with_mapped_argument", axis_size_with_mapped_argument);
  corpus::run("axis_size_from_shape", axis_size_from_shape);
  corpus::run("axis_size_mismatch", axis_size_mismatch);
  corpus::run("donate_first_argument", donate_first_argument);
  corpus::run("donate_after_static_argument", donate_after_static_argument);
  corpus::run("donate_two_arguments", donate_two_arguments);
  corpus::run("unnamed_axis", unnamed_axis);
  corpus::run("unnamed_axis_stored_with_options", unnamed_axis_stored_with_options);
  corpus::run("mixed_arrays_and_statics", mixed_arrays_and_statics);
  corpus::run("every_option_together", every_option_together);
  corpus::run("devices_every_device", devices_every_device);
  corpus::run("devices_braced_inline", devices_braced_inline);
  corpus::run("axis_size_from_size_t", axis_size_from_size_t);
}
