// SPDX-License-Identifier: Apache-2.0
// Corpus 08_cross_tu: a helper that runs the inner pmap of a nest whose outer pmap is in main.cc.
#include "helpers.h"

#include <spmd/pmap.h>

spmd::Array rows_helper(const spmd::Array& r) {
  auto inner = spmd::pmap([](const spmd::Array& v) { return v - spmd::psum(v, "j"); }, "j");
  // CHECK-MESSAGES: helpers.cc:[[@LINE-1]]:16: warning: this pmap runs inside the function the pmap at {{.*}}main.cc:{{[0-9]+}} maps (through the lambda at {{.*}}main.cc:{{[0-9]+}}, 'rows_helper' (line [[@LINE-2]])); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  return inner(r.reshape({4, 2}));
}

spmd::Array two_files_away(const spmd::Array& r) { return deeper(r) * 2; }
