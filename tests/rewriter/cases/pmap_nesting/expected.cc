// Rule pmap, nesting: a pmap reached from another pmap's function is found through the call graph
// (a captured callable, helpers, a functor, a virtual method) and every level of such an imperfect
// nest migrates to spmd::PmapNest; a function whose body the tool cannot see, or a call through a
// function pointer, leaves the pmap that may reach it, and with it every level of its nest. A
// perfect nest written through a variable (`auto inner = pmap(f, "j"); auto outer = pmap(inner,
// "i");`) migrates as one shard_map.
#include <spmd/pmap.h>
#include <spmd/spmd.h>

namespace app {

using spmd::Array;

Array rows(const Array& v) { return v - spmd::psum(v, "j"); }

Array helper(const Array& r) {
  return [f = rows, nest = spmd::PmapNest()](const spmd::Array& a0) {
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return nest.run({a0}, {{"j"}}, [&] {
      return spmd::shard_map(block, spmd::P("j"), spmd::P("j"),
                             {.check_vma = false, .axis_names = {"j"}})(a0);
    });
  }(r.reshape({4, 2}));
}

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
  auto inner = [f = rows, nest = spmd::PmapNest()](const spmd::Array& a0) {
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return nest.run({a0}, {{"j"}}, [&] {
      return spmd::shard_map(block, spmd::P("j"), spmd::P("j"),
                             {.check_vma = false, .axis_names = {"j"}})(a0);
    });
  };
  auto outer = [f =
                    [&inner](const Array& r) {
                      return inner(r.reshape({4, 2}));
                    },
                nest = spmd::PmapNest()](const spmd::Array& a0) {
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return nest.run({a0}, {{"i"}}, [&] {
      return spmd::shard_map(block, spmd::P("i"), spmd::P("i"),
                             {.check_vma = false, .axis_names = {"i"}})(a0);
    });
  };
  return outer(x);
}

Array through_helpers(const Array& x) {
  return [f = [](const Array& r) { return two_levels(r) + 1; },
          nest = spmd::PmapNest()](const spmd::Array& a0) {
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return nest.run({a0}, {{"i"}}, [&] {
      return spmd::shard_map(block, spmd::P("i"), spmd::P("i"),
                             {.check_vma = false, .axis_names = {"i"}})(a0);
    });
  }(x);
}

Array through_a_virtual_method(const Array& x, const Base& model) {
  return [f = [&model](const Array& r) { return model.step(r); },
          nest = spmd::PmapNest()](const spmd::Array& a0) {
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return nest.run({a0}, {{"i"}}, [&] {
      return spmd::shard_map(block, spmd::P("i"), spmd::P("i"),
                             {.check_vma = false, .axis_names = {"i"}})(a0);
    });
  }(x);
}

Array unseen(const Array& x) { return spmd::pmap(elsewhere, "i")(x); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:39: warning: the tool cannot tell whether the function this pmap maps runs another pmap (a nest whose levels must be migrated together): 'elsewhere' (declared at line {{[0-9]+}}, defined in no file of this run); run the tool on the file that defines it too, or migrate this pmap by hand [spmd-migrate-pmap-unseen-callee]

Array through_a_pointer(const Array& x, Array (*fp)(const Array&)) {
  return spmd::pmap([fp](const Array& r) { return fp(r); }, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: the tool cannot tell whether the function this pmap maps runs another pmap (a nest whose levels must be migrated together): the lambda at line [[@LINE-1]] calls through the function pointer 'fp' (line [[@LINE-1]]); call a named function there, or migrate this pmap by hand [spmd-migrate-pmap-unseen-callee]
}

// A nest whose outer level may also reach code the tool cannot see: every level is left.
Array other_helper(const Array& r) { return spmd::pmap(rows, "j")(r.reshape({2, 4})); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:45: warning: this pmap is one level of a nest, migrated whole or not at all, and the pmap at line [[@LINE+3]] is left as is: the tool cannot tell whether {{.*}} [spmd-migrate-pmap-nested]

Array partly_unseen(const Array& x) {
  return spmd::pmap([](const Array& r) { return other_helper(r) + elsewhere(r); }, "i")(x);
  // CHECK-MESSAGES: input.cc:[[@LINE-1]]:10: warning: the tool cannot tell whether the function this pmap maps runs another pmap (a nest whose levels must be migrated together): the lambda at line [[@LINE-1]] calls 'elsewhere' (declared at line {{[0-9]+}}, defined in no file of this run); run the tool on the file that defines it too, or migrate this pmap by hand [spmd-migrate-pmap-unseen-callee]
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
