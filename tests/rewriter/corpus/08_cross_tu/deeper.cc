// SPDX-License-Identifier: Apache-2.0
// Corpus 08_cross_tu: the inner pmap two calls and two files away from the outer one.
#include <spmd/pmap.h>

#include "helpers.h"

spmd::Array deeper(const spmd::Array& r) {
  return spmd::pmap([](const spmd::Array& v) { return v * spmd::pmean(v, "j"); }, "j")(
      r.reshape({4, 2}));
  // CHECK-MESSAGES: deeper.cc:[[@LINE-2]]:10: warning: this pmap runs inside the function the pmap at {{.*}}main.cc:{{[0-9]+}} maps (through the lambda at {{.*}}main.cc:{{[0-9]+}}, 'two_files_away' ({{.*}}helpers.cc:{{[0-9]+}}), 'deeper' (line {{[0-9]+}})); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
}
