// Rule pmap, nesting: a pmap reached from another pmap's function is found through the call graph
// (a captured callable, helpers, a functor, a virtual method) and every pmap of such an imperfect
// nest is left and reported; a function whose body the tool cannot see, or a call through a
// function pointer, leaves the pmap that may reach it. A perfect nest written through a variable
// (`auto inner = pmap(f, "j"); auto outer = pmap(inner, "i");`) migrates as one shard_map.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

Array rows(const Array& v) { return v - spmd::psum(v, "j"); }

Array helper(const Array& r) { return spmd::pmap(rows, "j")(r.reshape({4, 2})); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:39: warning: this pmap runs inside the function the pmap at line [[@LINE+23]] maps (through the lambda at line [[@LINE+23]], 'two_levels' (line [[@LINE+2]]), 'helper' (line [[@LINE-1]])); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]

Array two_levels(const Array& r) { return helper(r) * 2; }

Array elsewhere(const Array& r);  // defined in no file given to the tool

struct Base {
  virtual ~Base() = default;
  virtual Array step(const Array& r) const { return r; }
};
struct Nested : Base {
  Array step(const Array& r) const override { return helper(r); }
};

Array captured(const Array& x) {
  auto inner = spmd::pmap(rows, "j");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:16: warning: this pmap runs inside the function the pmap at line [[@LINE+1]] maps (through the lambda at line [[@LINE+1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  auto outer = spmd::pmap([&inner](const Array& r) { return inner(r.reshape({4, 2})); }, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:16: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls the pmap callable 'inner' (line [[@LINE-1]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
  return outer(x);
}

Array through_helpers(const Array& x) {
  return spmd::pmap([](const Array& r) { return two_levels(r) + 1; }, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls 'two_levels' (line [[@LINE-22]]), which calls 'helper' (line [[@LINE-25]]), which runs the pmap it makes (line [[@LINE-25]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
}

Array through_a_virtual_method(const Array& x, const Base& model) {
  return spmd::pmap([&model](const Array& r) { return model.step(r); }, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: this pmap runs another pmap inside the function it maps: the lambda at line [[@LINE-1]] calls 'Nested::step' (line [[@LINE-18]]), which calls 'helper' (line [[@LINE-30]]), which runs the pmap it makes (line [[@LINE-30]]); one shard_map cannot express this imperfect nest, so none of its pmaps is migrated; nest the calls directly, pmap(pmap(f, "j", ...), "i", ...), with any reshapes outside, and run the tool again [spmd-migrate-pmap-nested]
}

Array unseen(const Array& x) { return spmd::pmap(elsewhere, "i")(x); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:39: warning: the tool cannot tell whether the function this pmap maps runs another pmap (a nest one shard_map cannot express): 'elsewhere' (declared at line [[@LINE-29]], defined in no file of this run); run the tool on the file that defines it too, or migrate this pmap by hand [spmd-migrate-pmap-unseen-callee]

Array through_a_pointer(const Array& x, Array (*fp)(const Array&)) {
  return spmd::pmap([fp](const Array& r) { return fp(r); }, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: the tool cannot tell whether the function this pmap maps runs another pmap (a nest one shard_map cannot express): the lambda at line [[@LINE-1]] calls through the function pointer 'fp' (line [[@LINE-1]]); call a named function there, or migrate this pmap by hand [spmd-migrate-pmap-unseen-callee]
}

Array perfect_through_a_variable(const Array& x) {
  auto inner = rows;
  auto outer = [f = inner](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}, {"j", {1}}});
    auto block = [&](const spmd::Array& b0) {
      spmd::Array y = f(spmd::squeeze(b0, std::vector<int>{0, 2}));
      return spmd::expand_dims(spmd::expand_dims(y, 0), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i", spmd::None, "j"), spmd::P("i", "j"),
                           {.check_vma = false})(a0);
  };
  return outer(x);
}

Array inner_also_called(const Array& x, const Array& y) {
  auto inner = [f = rows](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"j"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("j"), spmd::P("j"), {.check_vma = false})(a0);
  };
  auto outer = [f = rows](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}, {"j"}});
    auto block = [&](const spmd::Array& b0) {
      spmd::Array y = f(spmd::squeeze(b0, std::vector<int>{0, 1}));
      return spmd::expand_dims(spmd::expand_dims(y, 0), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i", "j"), spmd::P("i", "j"),
                           {.check_vma = false})(a0);
  };
  return outer(x) + inner(y);
}

Array inner_lambda_also_called(const Array& x, const Array& y) {
  auto inner = spmd::pmap([](const Array& v) { return v * 2; }, "j");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:16: warning: this pmap is one level of a nest written through variables, migrated whole or not at all, and the pmap at line [[@LINE+1]] is left as is: the pmap callable 'inner' is mapped by this pmap and also called directly, so the nest must name its function again, and that function is written in place or its name means something else here; give it a name of its own (auto body = ...;) and run the tool again [spmd-migrate-pmap-nested]
  auto outer = spmd::pmap(inner, "i");
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:16: warning: the pmap callable 'inner' is mapped by this pmap and also called directly, so the nest must name its function again, and that function is written in place or its name means something else here; give it a name of its own (auto body = ...;) and run the tool again [spmd-migrate-pmap-nested]
  return outer(x) + inner(y);
}

}  // namespace app
