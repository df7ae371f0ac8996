// SPDX-License-Identifier: Apache-2.0
// Fuzz seed: perfect nests (inline and through a variable) and an imperfect one.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }
Array rows(const Array& v) { return v - spmd::psum(v, "j"); }
Array helper(const Array& r) { return spmd::pmap(rows, "j")(r.reshape({4, 2})); }

void nests() {
  Array x = iota(16).reshape({2, 4, 2});
  auto inline_nest = spmd::pmap(spmd::pmap(rows, "j"), "i");
  corpus::show("inline", inline_nest(x));
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::psum(v, {"i", "j"}); }, "j");
  auto outer = spmd::pmap(inner, "i");
  corpus::show("variable", outer(x));
  auto imperfect = spmd::pmap([](const Array& r) { return helper(r) + 1; }, "i");
  corpus::show("imperfect", imperfect(iota(16).reshape({2, 8})));
}

void errors() {
  corpus::show("rank0", spmd::pmap(rows, "j")(iota(1).reshape({})));
  corpus::show("too_many", spmd::pmap(rows, "j")(iota(32).reshape({16, 2})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("nests", nests);
  corpus::run("errors", errors);
}
