// SPDX-License-Identifier: Apache-2.0
// Corpus: imperfect nesting. A pmap that runs inside the function another pmap maps, not written
// as pmap(pmap(f, ...), ...): through a captured callable (by reference or by copy), a helper
// function that makes and calls a pmap, two levels of helpers, a lambda variable and a functor.
// One shard_map cannot express these, so the tool must leave every pmap of each nest, reporting
// each one; the program runs as legacy pmap.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include "corpus.h"

using spmd::Array;

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array rows(const Array& v) { return v - spmd::psum(v, "j"); }

// A helper that makes and calls the inner pmap.
Array helper(const Array& r) {
  return spmd::pmap(rows, "j")(r.reshape({4, 2}));
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:10: warning: this pmap runs inside the function the pmap at line {{[0-9]+}} maps (through 'helper' (line [[@LINE-2]])); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
}

// Two levels: the pmap body calls scaled_helper, which calls helper2, which runs the inner pmap.
Array helper2(const Array& r) {
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::pmax(v, "j"); }, "j");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs inside the function the pmap at line {{[0-9]+}} maps (through the lambda at line {{[0-9]+}}, 'scaled_helper' (line {{[0-9]+}}), 'helper2' (line [[@LINE-2]])); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  return inner(r.reshape({4, 2}));
}

Array scaled_helper(const Array& r) { return helper2(r * 2) + 1; }

struct RowFunctor {
  Array operator()(const Array& r) const { return helper(r) * 3; }
};

void captured_by_reference() {
  auto inner = spmd::pmap([](const Array& v) { return v - spmd::pmean(v, "j"); }, "j");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs inside the function the pmap at line [[@LINE+1]] maps (through the lambda at line [[@LINE+1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  auto outer = spmd::pmap([&inner](const Array& r) { return inner(r.reshape({4, 2})); }, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls the pmap callable 'inner' (line [[@LINE-1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void captured_by_copy() {
  auto inner = spmd::pmap([](const Array& v) { return v * spmd::psum(v, "j"); }, "j");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs inside the function the pmap at line [[@LINE+1]] maps (through the lambda at line [[@LINE+1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  auto outer = spmd::pmap([inner](const Array& r) { return inner(r.reshape({4, 2})) + 1; }, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls the pmap callable 'inner' (line [[@LINE-1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void through_helper() {
  auto outer = spmd::pmap([](const Array& r) { return helper(r) + 1; }, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls 'helper' (line {{[0-9]+}}), which runs the pmap it makes (line {{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 8})));
}

void through_two_helpers() {
  corpus::show("y", spmd::pmap([](const Array& r) { return scaled_helper(r); }, "i")(
                        iota(16).reshape({2, 8})));
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-2]]:21: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-2]] calls 'scaled_helper' (line {{[0-9]+}}), which calls 'helper2' (line {{[0-9]+}}), which calls the pmap callable 'inner' (line {{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
}

void through_a_named_helper_and_a_functor() {
  auto g = spmd::pmap(helper, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:12: warning: this pmap runs another pmap inside the function it maps: 'helper' (line {{[0-9]+}}) runs the pmap it makes (line {{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("named", g(iota(16).reshape({2, 8})));
  auto h = spmd::pmap(RowFunctor{}, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:12: warning: this pmap runs another pmap inside the function it maps: 'RowFunctor::operator()' (line {{[0-9]+}}) calls 'helper' (line {{[0-9]+}}), which runs the pmap it makes (line {{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("functor", h(iota(16).reshape({2, 8})));
}

void lambda_variable() {
  auto body = [](const Array& r) { return helper(r.reshape({8})); };
  auto outer = spmd::pmap(body, "i");
  // CHECK-MESSAGES: 07_imperfect_nesting.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-2]] calls 'helper' (line {{[0-9]+}}), which runs the pmap it makes (line {{[0-9]+}}); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  corpus::show("y", outer(iota(16).reshape({2, 4, 2})));
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("captured_by_reference", captured_by_reference);
  corpus::run("captured_by_copy", captured_by_copy);
  corpus::run("through_helper", through_helper);
  corpus::run("through_two_helpers", through_two_helpers);
  corpus::run("through_a_named_helper_and_a_functor", through_a_named_helper_and_a_functor);
  corpus::run("lambda_variable", lambda_variable);
}
