// SPDX-License-Identifier: Apache-2.0
// Corpus: refused. Sites the tool must leave as legacy pmap, each with its warning: macros,
// escaping callables (returned, passed on, a member typed with decltype, a namespace-scope variable
// with external linkage), run-time options, unprovable out_axes=nullopt, negative axes, an imperfect
// nest one level of which donates, templates, explicit Pmapped types. They still compile and run (as legacy pmap).
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "corpus.h"

#define PSUM_OVER_I(x) spmd::pmap([](const Array& v) { return spmd::psum(v, "i"); }, "i")(x)

using spmd::Array;

// A namespace-scope pmap callable other files could use: only its calls here are visible.
Array center_shared(const Array& v) { return v - spmd::pmean(v, "i"); }
auto shared_centering = spmd::pmap(center_shared, "i");
// CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:25: warning: the pmap callable 'shared_centering' is a namespace-scope variable with external linkage, which other files may use where this run cannot see; give it internal linkage (static, or an unnamed namespace) so that the tool sees every use, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]

namespace {

Array iota(int64_t n) { return spmd::arange(n, spmd::DType::kFloat32); }

Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

Array position() { return spmd::astype(spmd::axis_index("i"), spmd::DType::kFloat32); }

template <class F>
Array apply_to(const F& f, const Array& x) {
  return f(x);
}

auto make_centering() { return spmd::pmap(center, "i"); }
// CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:32: warning: the pmap callable is returned from 'make_centering', where the tool cannot see its calls; keep it in a local 'auto' variable that is only called, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]

template <class T>
Array scaled_in_template(const T& x, float s) {
  return spmd::pmap([s](const Array& v) { return v * s; }, "i")(x);
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:10: warning: this pmap is inside a template, where its types depend on template parameters; migrate it by hand (see docs/migration.md) [spmd-migrate-pmap-template]
}

void in_macro() {
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", PSUM_OVER_I(x));
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:21: warning: this pmap is written inside a macro, so the tool leaves it as is; expand the macro at this site, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-macro]
}

void passed_to_function() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(center, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: the pmap callable 'g' is passed to 'apply_to' (line [[@LINE+1]]), where the tool cannot see its calls; call it only directly, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  corpus::show("y", apply_to(g, x));
}

void returned_from_function() {
  Array x = iota(12).reshape({4, 3});
  corpus::show("y", make_centering()(x));
}

void stored_in_std_function() {
  std::function<Array(const Array&)> g = spmd::pmap(center, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:42: warning: the pmap callable 'g' is declared with the explicit type 'std::function<Array (const Array &)>', which the migrated code (a lambda) cannot keep; declare it 'auto' [spmd-migrate-pmap-escape]
  corpus::show("y", g(iota(6).reshape({2, 3})));
}

void explicit_pmapped_type() {
  spmd::Pmapped<Array (*)(const Array&)> g = spmd::pmap(&center, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:46: warning: the pmap callable 'g' is declared with the explicit type 'spmd::Pmapped<Array (*)(const Array &)>', which the migrated code (a lambda) cannot keep; declare it 'auto' [spmd-migrate-pmap-escape]
  corpus::show("y", g(iota(8).reshape({2, 4})));
}

void never_called() {
  auto g = spmd::pmap(center, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: the pmap callable 'g' is never called, so its argument kinds are unknown; remove it or migrate it by hand [spmd-migrate-pmap-escape]
  fmt::print("made, not called\n");
}

void different_argument_kinds() {
  auto g = spmd::pmap([](const Array& v, const auto& k) { return v * k; }, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: this pmap callable is called with different argument kinds (Array or not) or result types at different calls; migrate it by hand [spmd-migrate-pmap-escape]
  Array x = iota(8).reshape({4, 2});
  corpus::show("static", g(x, 3));
  corpus::show("array", g(x, x));
}

void options_built_at_run_time(bool transposed) {
  spmd::PmapOptions options;
  if (transposed) options.in_axes = {1};
  Array x = iota(8).reshape({2, 4});
  corpus::show("y", spmd::pmap(center, "i", options)(x));
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:21: warning: the pmap options are built at run time (or through a variable that is not const), so in_axes/out_axes are unknown at compile time; write them inline or in a const variable [spmd-migrate-pmap-options]
}

void options_in_non_const_variable() {
  spmd::PmapOptions options{.out_axes = {1}};
  Array x = iota(6).reshape({3, 2});
  auto g = spmd::pmap(center, "i", options);
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: the pmap options are built at run time (or through a variable that is not const), so in_axes/out_axes are unknown at compile time; write them inline or in a const variable [spmd-migrate-pmap-options]
  corpus::show("y", g(x));
}

void axis_name_not_literal() {
  const std::string axis = "i";
  Array x = iota(8).reshape({4, 2});
  corpus::show("y", spmd::pmap([](const Array& v) { return v * 2; }, axis)(x));
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:21: warning: the axis name is not a string literal, so the mesh axis is unknown at compile time; give the literal name [spmd-migrate-pmap-options]
}

void out_axes_none_not_replicated() {
  Array x = iota(8).reshape({4, 2});
  auto g =
      spmd::pmap([](const Array& v) { return v + position(); }, "i", {.out_axes = {std::nullopt}});
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:7: warning: out_axes=std::nullopt returns device 0's value of output 0, and the tool cannot prove every device along 'i' computes the same value (pmap never checked); make the output replicated (psum/pmean/all_gather over 'i') or give it an integer out_axes [spmd-migrate-pmap-out-axes-none]
  corpus::show("y", g(x));
}

void out_axes_none_modified_local() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(
      // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: out_axes=std::nullopt returns device 0's value of output 1, and the tool cannot prove every device along 'i' computes the same value (pmap never checked); make the output replicated (psum/pmean/all_gather over 'i') or give it an integer out_axes [spmd-migrate-pmap-out-axes-none]
      [](const Array& v) {
        Array total = spmd::psum(v, "i");
        total = total + v;
        return std::make_tuple(v, total);
      },
      "i", {.out_axes = {0, std::nullopt}});
  corpus::show("y", g(x));
}

void out_axes_none_grouped_psum() {
  Array x = iota(8).reshape({4, 2});
  auto g = spmd::pmap(
      // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: out_axes=std::nullopt returns device 0's value of output 0, and the tool cannot prove every device along 'i' computes the same value (pmap never checked); make the output replicated (psum/pmean/all_gather over 'i') or give it an integer out_axes [spmd-migrate-pmap-out-axes-none]
      [](const Array& v) {
        return spmd::psum(v, "i", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      "i", {.out_axes = {std::nullopt}});
  corpus::show("y", g(x));
}

void negative_in_axes() {
  Array x = iota(8).reshape({2, 4});
  corpus::show("y", spmd::pmap(center, "i", {.in_axes = {-1}})(x));
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:21: warning: in_axes {-1} has a negative entry, which pmap counts from the end of each value's rank; write the non-negative axis (rank + axis) and run the tool again [spmd-migrate-pmap-negative-axis]
}

void negative_out_axes() {
  Array x = iota(12).reshape({4, 3});
  corpus::show("y", spmd::pmap(center, "i", {.out_axes = {-1}})(x));
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:21: warning: out_axes {-1} has a negative entry, which pmap counts from the end of each value's rank; write the non-negative axis (rank + axis) and run the tool again [spmd-migrate-pmap-negative-axis]
}

void imperfect_nest_with_donation() {
  Array x = iota(16).reshape({2, 8});
  auto inner = spmd::pmap([](const Array& v) { return v - spmd::psum(v, "j"); }, "j",
                          {.donate_argnums = {0}});
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-2]]:16: warning: this pmap is one level of a nest (the pmap at line [[@LINE-2]] runs inside the function the pmap at line [[@LINE+1]] maps), and it donates arguments (donate_argnums), which legacy pmap ignores in a pmap that runs inside another pmap's function but a migrated level would not, so none of the nest's pmaps is migrated; drop donate_argnums here and run the tool again [spmd-migrate-pmap-nested]
  auto outer = spmd::pmap([&](const Array& v) { return inner(v.reshape({4, 2})); }, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:16: warning: this pmap is one level of a nest, migrated whole or not at all, and the pmap at line [[@LINE-4]] is left as is: this pmap is one level of a nest {{.*}} [spmd-migrate-pmap-nested]
  corpus::show("y", outer(x));
}

// A class keeps a pmap callable as a member whose type is spelled with decltype.
struct Model {
  decltype(spmd::pmap(center, "i")) step = spmd::pmap(center, "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: this pmap is only the decltype(...) naming the type of the member 'step' of 'Model': it never runs, and it names the type of a pmap callable, which the migrated code (a lambda) cannot keep; hold the callable in a std::function (or a template parameter), or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-2]]:44: warning: the pmap callable is stored in the member 'step' of 'Model', where the tool cannot see its calls; keep it in a local 'auto' variable that is only called, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
};

void decltype_member() {
  Model model;
  corpus::show("y", model.step(iota(8).reshape({4, 2})));
}

void inner_pmap_with_donation() {
  Array x = iota(16).reshape({2, 4, 2});
  auto g = spmd::pmap(spmd::pmap(center, "j", {.donate_argnums = {0}}), "i");
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: an inner pmap of a nest gives devices or donate_argnums, which belong to the outer pmap (the nest runs as one shard_map over one mesh); move them to the outermost pmap [spmd-migrate-pmap-nested]
  corpus::show("y", g(x));
}

void in_function_template() {
  Array x = iota(6).reshape({3, 2});
  corpus::show("y", scaled_in_template(x, 2.5f));
}

void in_generic_lambda() {
  auto run = [](const auto& x) { return spmd::pmap(center, "i")(x); };
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:41: warning: this pmap is inside a template, where its types depend on template parameters; migrate it by hand (see docs/migration.md) [spmd-migrate-pmap-template]
  corpus::show("y", run(iota(8).reshape({4, 2})));
}

void in_axes_count_mismatch() {
  auto g = spmd::pmap(center, "i", {.in_axes = {0, 0}});
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: in_axes {0, 0} has 2 entries but the callable has 1 Array arguments, so pmap raises ValueError at the call; fix in_axes [spmd-migrate-pmap-options]
  try {
    corpus::show("y", g(iota(8).reshape({4, 2})));
  } catch (const std::exception&) {
    fmt::print("in_axes count rejected\n");
  }
}

// pmap (like JAX's) requires a mapped argument even with axis_size: ValueError at every call.
void axis_size_every_input_unmapped() {
  Array w = spmd::random::normal(spmd::random::PRNGKey(22), {3});
  auto g = spmd::pmap([](const Array& u) { return u + spmd::psum(u, "i"); }, "i",
                      {.in_axes = {std::nullopt}, .axis_size = 4});
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-2]]:12: warning: no Array argument is mapped over axis 'i', so pmap raises ValueError ('pmap must have at least one non-None value in in_axes') at every call, axis_size or not; map an argument [spmd-migrate-pmap-options]
  try {
    corpus::show("y", g(w));
  } catch (const std::exception&) {
    fmt::print("no mapped argument rejected\n");
  }
}

void axis_size_only_static_arguments() {
  auto g = spmd::pmap([](int k) { return spmd::axis_index("i") * k; }, "i", {.axis_size = 5});
  // CHECK-MESSAGES: 06_refused.cc:[[@LINE-1]]:12: warning: no Array argument is mapped over axis 'i', so pmap raises ValueError ('pmap must have at least one non-None value in in_axes') at every call, axis_size or not; map an argument [spmd-migrate-pmap-options]
  try {
    corpus::show("k=3", g(3));
  } catch (const std::exception&) {
    fmt::print("no mapped argument rejected\n");
  }
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = 8});
  corpus::run("in_macro", in_macro);
  corpus::run("passed_to_function", passed_to_function);
  corpus::run("returned_from_function", returned_from_function);
  corpus::run("stored_in_std_function", stored_in_std_function);
  corpus::run("explicit_pmapped_type", explicit_pmapped_type);
  corpus::run("never_called", never_called);
  corpus::run("different_argument_kinds", different_argument_kinds);
  corpus::run("options_built_at_run_time", [] { options_built_at_run_time(true); });
  corpus::run("options_in_non_const_variable", options_in_non_const_variable);
  corpus::run("axis_name_not_literal", axis_name_not_literal);
  corpus::run("out_axes_none_not_replicated", out_axes_none_not_replicated);
  corpus::run("out_axes_none_modified_local", out_axes_none_modified_local);
  corpus::run("out_axes_none_grouped_psum", out_axes_none_grouped_psum);
  corpus::run("negative_in_axes", negative_in_axes);
  corpus::run("negative_out_axes", negative_out_axes);
  corpus::run("imperfect_nest_with_donation", imperfect_nest_with_donation);
  corpus::run("decltype_member", decltype_member);
  corpus::run("namespace_scope_external", [] { corpus::show("y", shared_centering(iota(8).reshape({4, 2}))); });
  corpus::run("inner_pmap_with_donation", inner_pmap_with_donation);
  corpus::run("in_function_template", in_function_template);
  corpus::run("in_generic_lambda", in_generic_lambda);
  corpus::run("in_axes_count_mismatch", in_axes_count_mismatch);
  corpus::run("axis_size_every_input_unmapped", axis_size_every_input_unmapped);
  corpus::run("axis_size_only_static_arguments", axis_size_only_static_arguments);
}
