// SPDX-License-Identifier: Apache-2.0
// Corpus 08_cross_tu: the inner pmap two calls and two files away from the outer one.
#include <spmd/pmap.h>

#include "helpers.h"

spmd::Array deeper(const spmd::Array& r) {
  return spmd::pmap([](const spmd::Array& v) { return v * spmd::pmean(v, "j"); }, "j")(
      r.reshape({4, 2}));
}
