// Rule pmap, where a pmap callable goes: every site left for a human says what the tool saw (a
// decltype member, a member, a static member, a namespace-scope variable with external linkage,
// a return, a call argument, a copy), and a namespace-scope callable of this file only (internal
// linkage) that is only called migrates.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

using spmd::Array;

Array center(const Array& v) { return v - spmd::pmean(v, "i"); }

auto exported = spmd::pmap(center, "i");
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:17: warning: the pmap callable 'exported' is a namespace-scope variable with external linkage, which other files may use where this run cannot see; give it internal linkage (static, or an unnamed namespace) so that the tool sees every use, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]

namespace {

auto local_to_this_file = spmd::pmap(center, "i");

struct Model {
  decltype(spmd::pmap(center, "i")) step = spmd::pmap(center, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:12: warning: this pmap is only the decltype(...) naming the type of the member 'step' of 'Model': it never runs, and it names the type of a pmap callable, which the migrated code (a lambda) cannot keep; hold the callable in a std::function (or a template parameter), or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  // CHECK-MESSAGES: input.cc:[[@LINE-2]]:44: warning: the pmap callable is stored in the member 'step' of 'Model', where the tool cannot see its calls; keep it in a local 'auto' variable that is only called, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  static inline auto shared = spmd::pmap(center, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:31: warning: the pmap callable 'shared' is a static member of 'Model', which other files may use where this run cannot see; keep it in a local 'auto' variable, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
};

auto make() { return spmd::pmap(center, "i"); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:22: warning: the pmap callable is returned from 'make', where the tool cannot see its calls; keep it in a local 'auto' variable that is only called, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]

template <class F>
Array apply(const F& f, const Array& x) {
  return f(x);
}

}  // namespace

Array use(const Array& x) {
  Model model;
  auto passed = spmd::pmap(center, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:17: warning: the pmap callable 'passed' is passed to 'apply' (line [[@LINE+5]]), where the tool cannot see its calls; call it only directly, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  auto copied = spmd::pmap(center, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:17: warning: the pmap callable 'copied' is copied into the variable 'copy' (line [[@LINE+1]]), where the tool cannot see its calls; call it only directly, or migrate it by hand to spmd::shard_map (see docs/migration.md) [spmd-migrate-pmap-escape]
  auto copy = copied;
  return local_to_this_file(x) + exported(x) + model.step(x) + Model::shared(x) + make()(x) +
         apply(passed, x) + copy(x);
}
