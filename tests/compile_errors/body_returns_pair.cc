// SPDX-License-Identifier: Apache-2.0
// A body returning std::pair: shard_map bodies return Array, a std::tuple of Arrays or a vector.
#include <utility>

#include "spmd/spmd.h"

int main() {
  auto f = spmd::shard_map([](const spmd::Array& x) { return std::make_pair(x, x); },
                           spmd::make_mesh({1}, {"i"}), spmd::P("i"), spmd::P("i"));
  f(spmd::arange(4));
}
