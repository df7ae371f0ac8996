// SPDX-License-Identifier: Apache-2.0
#include <spmd/pmap.h>
#include <spmd/spmd.h>

spmd::Array nest_helper(const spmd::Array& r);  // nest_helper.cc

spmd::Array outer(const spmd::Array& x) {
  return spmd::pmap([](const spmd::Array& r) { return nest_helper(r); }, "i")(x);
}
