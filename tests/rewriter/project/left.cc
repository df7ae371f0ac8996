// SPDX-License-Identifier: Apache-2.0
#include <spmd/pmap.h>

spmd::Array left(const spmd::Array& x) {
  return spmd::pmap([](const spmd::Array& v) { return v; }, "i", {.in_axes = {-1}})(x);
}
