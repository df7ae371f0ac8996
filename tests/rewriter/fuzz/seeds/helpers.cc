// SPDX-License-Identifier: Apache-2.0
// Fuzz seed: donation, devices, axis_size, a macro and the other pmap-era helpers.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

#include "corpus.h"

#define TWICE(x) ((x) * 2)

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

void placement() {
  std::vector<spmd::Device> devices = spmd::devices();
  std::vector<spmd::Device> four(devices.begin(), devices.begin() + 4);
  auto g = spmd::pmap([](const Array& v) { return TWICE(v) + spmd::pmin(v, "i"); }, "i",
                      {.devices = four, .axis_size = 4, .donate_argnums = {0}});
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", g(x));
  fmt::print("donated: {}\n", x.is_deleted());
  Array r = spmd::device_put_replicated(iota(3), four);
  corpus::show("replicated", r);
  corpus::show("varying", spmd::pmap([](const Array& v) { return spmd::pvary(v, "i"); }, "i")(r));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("placement", placement);
}
