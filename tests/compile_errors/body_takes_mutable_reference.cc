// SPDX-License-Identifier: Apache-2.0
// A body taking `spmd::Array&`: blocks are handed over as const references.
#include "spmd/spmd.h"

int main() {
  auto f = spmd::shard_map([](spmd::Array& x) { return x; }, spmd::make_mesh({1}, {"i"}),
                           spmd::P("i"), spmd::P("i"));
  f(spmd::arange(4));
}
