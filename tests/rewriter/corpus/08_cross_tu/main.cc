// SPDX-License-Identifier: Apache-2.0
// Corpus: cross-TU imperfect nesting. Outer pmaps whose functions run inner pmaps in helpers
// defined in other files of the program (helpers.cc, and deeper.cc two calls away), all given to
// the tool in one run: it must follow the calls across the files and leave every pmap of each
// nest, reporting each one. The program runs as legacy pmap.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include "corpus.h"
#include "helpers.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

void helper_in_another_file() {
  auto outer = spmd::pmap([](const Array& r) { return rows_helper(r) + 1; }, "i");
  // CHECK-MESSAGES: main.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls 'rows_helper' ({{.*}}helpers.cc:{{[0-9]+}}), which calls the pmap callable 'inner' ({{.*}}helpers.cc:{{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void helper_two_files_away() {
  auto outer = spmd::pmap([](const Array& r) { return two_files_away(r); }, "i");
  // CHECK-MESSAGES: main.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls 'two_files_away' ({{.*}}helpers.cc:{{[0-9]+}}), which calls 'deeper' ({{.*}}deeper.cc:{{[0-9]+}}), which runs the pmap it makes ({{.*}}deeper.cc:{{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("helper_in_another_file", helper_in_another_file);
  corpus::run("helper_two_files_away", helper_two_files_away);
}
