// SPDX-License-Identifier: Apache-2.0
// A header included by two translation units: its pmap is migrated once, not once per unit.
#pragma once

#include <spmd/pmap.h>
#include <spmd/spmd.h>

inline spmd::Array centered(const spmd::Array& x) {
  return spmd::pmap([](const spmd::Array& v) { return v - spmd::pmean(v, "i"); }, "i")(x);
}

// Instantiated twice (float and int): one edit.
template <class T>
spmd::Array scaled(const spmd::Array& x, T factor) {
  return spmd::pvary(x * factor, "i");
}
