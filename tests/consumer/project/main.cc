// SPDX-License-Identifier: Apache-2.0
// A program of a project that uses spmd as a dependency (tests/consumer/run.sh builds it with
// find_package, add_subdirectory and pkg-config). fmt comes with spmd: no separate dependency.
#include <spmd/spmd.h>
#include <spmd/version.h>

#include <iostream>

int main() {
  spmd::initialize({.cpu_devices = 4});
  spmd::Mesh mesh = spmd::make_mesh({4}, {"i"});
  auto total = spmd::shard_map([](const spmd::Array& b) { return spmd::psum(b, "i"); }, mesh,
                               spmd::P("i"), spmd::P());
  std::cout << mesh << ' ' << spmd::P("i") << ' ' << spmd::float32 << '\n';
  fmt::print("{}\n", total(spmd::arange(8)));
  // The headers and the library must come from the same spmd.
  return spmd::version() == SPMD_VERSION_STRING ? 0 : 1;
}
