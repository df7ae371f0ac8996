// SPDX-License-Identifier: Apache-2.0
// Corpus 08_cross_tu: a helper that runs the inner pmap of a nest whose outer pmap is in main.cc.
#include "helpers.h"

#include <spmd/pmap.h>

spmd::Array rows_helper(const spmd::Array& r) {
  auto inner = spmd::pmap([](const spmd::Array& v) { return v - spmd::psum(v, "j"); }, "j");
  return inner(r.reshape({4, 2}));
}

spmd::Array two_files_away(const spmd::Array& r) { return deeper(r) * 2; }
