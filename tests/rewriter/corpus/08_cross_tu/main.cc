// SPDX-License-Identifier: Apache-2.0
// Corpus: cross-TU imperfect nesting. Outer pmaps whose functions run inner pmaps in helpers
// defined in other files of the program (helpers.cc, and deeper.cc two calls away), all given to
// the tool in one run: it must follow the calls across the files and migrate every level of each
// nest (spmd::PmapNest), and the program must print the same bytes.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include "corpus.h"
#include "helpers.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

void helper_in_another_file() {
  auto outer = spmd::pmap([](const Array& r) { return rows_helper(r) + 1; }, "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void helper_two_files_away() {
  auto outer = spmd::pmap([](const Array& r) { return two_files_away(r); }, "i");
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("helper_in_another_file", helper_in_another_file);
  corpus::run("helper_two_files_away", helper_two_files_away);
}
