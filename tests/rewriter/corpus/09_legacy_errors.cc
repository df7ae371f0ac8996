// SPDX-License-Identifier: Apache-2.0
// Corpus: legacy errors. Calls the legacy pmap rejects at run time: a rank-0 argument, more
// elements than devices, mapped sizes that disagree or contradict axis_size, an in_axes entry
// beyond an argument's rank, a devices list of the wrong size, and the same in nests. Every site
// migrates, and the migrated program raises the same ValueError with the same message (the
// output compares them), then runs the valid calls alike.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <vector>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

std::vector<spmd::Device> first(int n) {
  std::vector<spmd::Device> all = spmd::devices();
  return {all.begin(), all.begin() + n};
}

void rank_zero_argument() { corpus::show("y", spmd::pmap(center, "i")(iota(1).reshape({}))); }

void more_elements_than_devices() {
  auto g = spmd::pmap(center, "i");
  corpus::show("fits", g(iota(16).reshape({8, 2})));
  corpus::show("too_many", g(iota(32).reshape({16, 2})));
}

void sizes_disagree() {
  auto g = spmd::pmap([](const Array& a, const Array& b) { return a * b; }, "i");
  corpus::show("y", g(iota(8).reshape({4, 2}), iota(6).reshape({3, 2})));
}

void axis_size_disagrees() {
  corpus::show("y", spmd::pmap(center, "i", {.axis_size = 3})(iota(8).reshape({4, 2})));
}

void in_axes_beyond_rank() {
  corpus::show("y", spmd::pmap(center, "i", {.in_axes = {2}})(iota(8).reshape({4, 2})));
}

void devices_of_the_wrong_size() {
  corpus::show("y", spmd::pmap(center, "i", {.devices = first(3)})(iota(8).reshape({4, 2})));
}

void static_argument_then_rank_zero() {
  auto g = spmd::pmap([](int k, const Array& v) { return v * k; }, "i");
  corpus::show("y", g(3, iota(1).reshape({})));
}

void nest_needs_more_devices() {
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return v + spmd::psum(v, "j"); }, "j"), "i");
  corpus::show("fits", g(iota(16).reshape({2, 4, 2})));
  corpus::show("too_many", g(iota(32).reshape({4, 4, 2})));
}

void nest_inner_in_axes_beyond_rank() {
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return v * 2; }, "j", {.in_axes = {2}}),
                      "i");
  corpus::show("y", g(iota(8).reshape({4, 2})));
}

void nest_outer_devices_too_few() {
  auto g = spmd::pmap(spmd::pmap([](const Array& v) { return v + 1; }, "j"), "i",
                      {.devices = first(4)});
  corpus::show("y", g(iota(16).reshape({2, 4, 2})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("rank_zero_argument", rank_zero_argument);
  corpus::run("more_elements_than_devices", more_elements_than_devices);
  corpus::run("sizes_disagree", sizes_disagree);
  corpus::run("axis_size_disagrees", axis_size_disagrees);
  corpus::run("in_axes_beyond_rank", in_axes_beyond_rank);
  corpus::run("devices_of_the_wrong_size", devices_of_the_wrong_size);
  corpus::run("static_argument_then_rank_zero", static_argument_then_rank_zero);
  corpus::run("nest_needs_more_devices", nest_needs_more_devices);
  corpus::run("nest_inner_in_axes_beyond_rank", nest_inner_in_axes_beyond_rank);
  corpus::run("nest_outer_devices_too_few", nest_outer_devices_too_few);
}
