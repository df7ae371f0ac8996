// SPDX-License-Identifier: Apache-2.0
// A body returning a float instead of an Array.
#include "spmd/spmd.h"

int main() {
  auto f = spmd::shard_map([](const spmd::Array& x) { return 1.0f; }, spmd::make_mesh({1}, {"i"}),
                           spmd::P("i"), spmd::P());
  f(spmd::arange(4));
}
