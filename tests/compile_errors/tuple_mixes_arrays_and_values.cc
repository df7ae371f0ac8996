// SPDX-License-Identifier: Apache-2.0
// A std::tuple argument holding an Array and an int: mapped tuples hold only Arrays.
#include <tuple>

#include "spmd/spmd.h"

int main() {
  auto f = spmd::shard_map([](const std::tuple<spmd::Array, int>& t) { return std::get<0>(t); },
                           spmd::make_mesh({1}, {"i"}), spmd::P("i"), spmd::P("i"));
  f(std::make_tuple(spmd::arange(4), 1));
}
