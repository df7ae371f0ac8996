// SPDX-License-Identifier: Apache-2.0
// File: spmd/shard_map.h
//
// shard_map maps a function over the blocks of its arguments, one block per mesh device, running
// every device concurrently (JAX's jax.shard_map, eager): each device's body runs on a host
// thread, its own worker's or one idle in the call (the caller's included), so a body must not
// assume which thread runs it.
//
// For an Array argument of shape S with in_spec p, the device at mesh coordinate c receives the
// block whose dimension d is slice k of S[d] / m, where the spec entry for d names axes with total
// size m and k is c's mixed-radix index over those axes (first name most significant). Rank is
// preserved. Axes the spec does not mention replicate the block. A std::vector<Array> or
// std::tuple<Array...> argument is mapped element by element (one spec for all its elements, or
// one per element: see Specs); other arguments are passed unchanged to every device. Outputs are
// assembled the other way round from out_specs; an axis an out_spec leaves out means "equal on
// every device along it" and is checked at run time by check_vma (JAX's varying-manual-axes types,
// tracked per value), never by comparing data.
//
// Example:
//   spmd::Mesh mesh = spmd::make_mesh({4}, {"i"});
//   auto f = spmd::shard_map([](const spmd::Array& b) { return spmd::psum(b, "i"); },
//                            mesh, spmd::P("i"), spmd::P());
//   spmd::Array y = f(x);   // for x of shape (16,), y has shape (4,) = the sum of the 4 blocks
//
//   auto [a, b] = spmd::shard_map(g, mesh, {spmd::P("i"), spmd::P()}, {spmd::P("i"), spmd::P()})(x,
//   w);
//
// Without a mesh, shard_map and smap map over the context mesh (spmd/mesh_context.h). Inside a
// body that makes a shard_map over the axes still automatic there: each device slices its values
// over the new manual axes, runs the inner body with the outer and the new axes bound (collectives
// may name either or both), and receives the inner outputs gathered over the new axes, so the
// outer body carries on with whole values (JAX's nested partial-manual shard_map):
//   auto outer = spmd::shard_map([](const spmd::Array& b) {
//     return spmd::shard_map(inner, spmd::P(None, "j"), spmd::P(None, "j"))(b);
//   }, mesh, spmd::P("i"), spmd::P("i"), {.axis_names = {"i"}});
//
// Errors (ValueError, TypeError, NameError) carry JAX's message for the same mistake, naming the
// argument, spec and mesh, and the function by ShardMapOptions::name or, without one, by where
// shard_map was called ("<lambda> at train.cc:42"). A device that throws aborts the whole call and
// the first error is rethrown here with the device recorded. Calls from several host threads are
// safe; each device runs its calls in launch order.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "spmd/array.h"
#include "spmd/mesh.h"
#include "spmd/partition_spec.h"

namespace spmd {

struct ShardMapOptions {
  // Track the mesh axes each value may vary over and reject out_specs that claim replication the
  // body does not guarantee (JAX's check_vma). false: no tracking, no check; outputs an out_spec
  // declares replicated are read from the first device along the missing axes.
  bool check_vma = true;
  // The manual axes; empty: every mesh axis. Other axes compute redundantly (partial manual).
  std::set<std::string> axis_names = {};
  // Name of the mapped function in error messages; empty: derived from the callable's type.
  std::string name = "";
  // Collective deadline for this call in seconds, positive and at most 1e9 (ValueError otherwise,
  // as for InitOptions); empty: spmd::collective_timeout_s().
  std::optional<double> collective_timeout_s = std::nullopt;
  // Positions (among all of f's arguments) of Array arguments the call consumes (JAX's
  // jit(shard_map(...), donate_argnums)): deleted after the call; a later use is a ValueError.
  std::vector<int> donate_argnums = {};
};

// One in_specs entry: a PartitionSpec, which applies to an Array argument or to every element of
// a container argument (JAX's pytree prefix rule), or a braced list of PartitionSpecs, one per
// element of a std::vector<Array> / std::tuple<Array...> argument.
class SpecEntry {
 public:
  SpecEntry(PartitionSpec spec) : specs_{std::move(spec)}, per_element_(false) {}
  SpecEntry(std::initializer_list<PartitionSpec> per_element)
      : specs_(per_element), per_element_(true) {}
  // A list of one spec per element, built at run time.
  static SpecEntry list(std::vector<PartitionSpec> per_element) {
    SpecEntry e(PartitionSpec{});
    e.specs_ = std::move(per_element);
    e.per_element_ = true;
    return e;
  }

  // True for a list of one spec per element.
  bool per_element() const { return per_element_; }
  const std::vector<PartitionSpec>& specs() const { return specs_; }
  // "P('i',)" or "[P('i',), P()]".
  std::string str() const;

 private:
  std::vector<PartitionSpec> specs_;
  bool per_element_;
};

// in_specs / out_specs: one PartitionSpec for every Array (argument or output), or one entry per
// mapped argument (an Array, a std::vector<Array> or a std::tuple of Arrays) or per output, in
// order:
//   shard_map(f, mesh, {P("i"), {P("i"), P()}}, P("i"))(x, std::vector<Array>{a, b})
// gives x P("i"), a P("i") and b P(); {P("i"), P()} would give both a and b P().
class Specs {
 public:
  Specs(std::initializer_list<SpecEntry> entries) : entries_(entries), single_(false) {}
  Specs(PartitionSpec spec) : entries_{SpecEntry(std::move(spec))}, single_(true) {}
  Specs(std::vector<PartitionSpec> specs) : entries_(specs.begin(), specs.end()), single_(false) {}
  // One entry per argument or output, built at run time.
  static Specs list(std::vector<SpecEntry> entries) {
    Specs s(PartitionSpec{});
    s.entries_ = std::move(entries);
    s.single_ = false;
    return s;
  }

  // True when one spec applies to every leaf.
  bool is_single() const { return single_; }
  const std::vector<SpecEntry>& entries() const { return entries_; }
  // "P('i',)" or "[P('i',), [P('i',), P()]]".
  std::string str() const;

 private:
  std::vector<SpecEntry> entries_;
  bool single_;
};

namespace internal {

// Everything shard_map knows before it sees arguments.
struct ShardMapPlan {
  Mesh mesh;
  Specs in_specs;
  Specs out_specs;
  ShardMapOptions options;
  std::string fun_name;
  // When set, out_specs are computed from the first device's outputs instead (the compat pmap's
  // out_axes depend on the outputs' ranks).
  std::function<Specs(const std::vector<Array>& outputs)> out_specs_from = nullptr;
  // in_specs holds one spec per Array leaf rather than one entry per argument (the compat pmap,
  // which resolves in_axes per leaf).
  bool in_specs_per_leaf = false;
  // `mesh` is empty and the call maps over the context mesh (spmd/mesh_context.h).
  bool mesh_from_context = false;
  // The call maps over `mesh` whatever the context mesh (the compat pmap, process_allgather).
  bool ignores_context = false;
};

// Where the Array leaves of a call come from: each mapped argument of f (an Array, or a
// std::vector<Array> / std::tuple of Arrays, one leaf per element) in order.
class ArgLayout {
 public:
  struct Arg {
    int position;    // among all of f's arguments
    size_t first;    // its first leaf
    size_t count;    // its number of leaves
    bool container;  // a std::vector or std::tuple (its leaves are its elements)
  };
  void add(int position, size_t count, bool container);
  const std::vector<Arg>& args() const { return args_; }
  size_t leaf_count() const { return leaf_positions_.size(); }
  // The position among f's arguments of each leaf.
  std::span<const int> leaf_positions() const { return leaf_positions_; }
  // The index in args() of the argument a leaf belongs to.
  size_t arg_of(size_t leaf) const;
  // "args[1]" or, for element 2 of a container argument, "args[1][2]".
  std::string leaf_name(size_t leaf) const;

 private:
  // Built on every call: two vectors, the rest derived on demand (errors, pmap's in_axes).
  std::vector<Arg> args_;
  std::vector<int> leaf_positions_;
};

// A non-owning callable: blocks of this device -> outputs of this device. `user_code`: it is
// the user's function (false for spmd's own adapters around it, such as the compat pmap's).
struct BodyRef {
  const void* object;
  std::vector<Array> (*call)(const void* object, const std::vector<Array>& blocks);
  bool user_code = true;
};

// Runs the body on every mesh device and assembles the outputs (the non-template part of
// shard_map). `args` holds the Array leaves, `layout` where they come from. `num_outputs` is the
// output count known from the body's return type, or -1 when it is only known at run time
// (std::vector<Array>).
std::vector<Array> run_shard_map(const ShardMapPlan& plan, std::vector<Array> args,
                                 const ArgLayout& layout, BodyRef body, int num_outputs);

// P(None x axis, name) for an int axis, P() for nullopt (pmap/smap in_axes -> PartitionSpec).
// ValueError for a negative axis.
PartitionSpec axis_spec(std::optional<int> axis, const std::string& name);

// A readable name for a type, for messages: the demangled name ("std::runtime_error"), or
// "<lambda>" or "<function>" for a lambda's or a function pointer's type.
std::string type_name(const std::type_info& type);

// A readable name for a callable type created at file:line, for messages: "<lambda> at
// main.cc:12", "<function> at main.cc:12", or the functor's class name and the place.
std::string callable_name(const std::type_info& type, const char* file, int line);

template <class T>
inline constexpr bool kIsArray = std::is_same_v<std::decay_t<T>, Array>;

// How an argument type maps: Arrays are split into blocks, std::vector<Array> and std::tuple of
// Arrays element by element; anything else is passed unchanged to every device.
template <class T>
struct ArgLeaves {
  static constexpr bool kMapped = false;
};
template <>
struct ArgLeaves<Array> {
  static constexpr bool kMapped = true;
  static constexpr bool kContainer = false;
  static size_t count(const Array&) { return 1; }
  static void append(const Array& a, std::vector<Array>& out) { out.push_back(a); }
  static const Array& block(const std::vector<Array>& blocks, size_t first, const Array&) {
    return blocks[first];
  }
};
template <>
struct ArgLeaves<std::vector<Array>> {
  static constexpr bool kMapped = true;
  static constexpr bool kContainer = true;
  static size_t count(const std::vector<Array>& v) { return v.size(); }
  static void append(const std::vector<Array>& v, std::vector<Array>& out) {
    out.insert(out.end(), v.begin(), v.end());
  }
  static std::vector<Array> block(const std::vector<Array>& blocks, size_t first,
                                  const std::vector<Array>& v) {
    auto begin = blocks.begin() + static_cast<std::ptrdiff_t>(first);
    return std::vector<Array>(begin, begin + static_cast<std::ptrdiff_t>(v.size()));
  }
};
template <class... Ts>
struct ArgLeaves<std::tuple<Ts...>> {
  static_assert((kIsArray<Ts> && ...) || (!kIsArray<Ts> && ...),
                "a std::tuple argument of shard_map/pmap holds only Arrays (mapped element by "
                "element) or no Array at all (passed unchanged to every device)");
  static constexpr bool kMapped = sizeof...(Ts) > 0 && (kIsArray<Ts> && ...);
  static constexpr bool kContainer = true;
  static size_t count(const std::tuple<Ts...>&) { return sizeof...(Ts); }
  static void append(const std::tuple<Ts...>& t, std::vector<Array>& out) {
    std::apply([&out](const auto&... a) { (out.push_back(a), ...); }, t);
  }
  static std::tuple<Ts...> block(const std::vector<Array>& blocks, size_t first,
                                 const std::tuple<Ts...>&) {
    return make(blocks, first, std::index_sequence_for<Ts...>{});
  }
  template <size_t... Is>
  static std::tuple<Ts...> make(const std::vector<Array>& blocks, size_t first,
                                std::index_sequence<Is...>) {
    return std::tuple<Ts...>(blocks[first + Is]...);
  }
};

template <class T>
inline constexpr bool kIsMapped = ArgLeaves<std::decay_t<T>>::kMapped;

// What f receives for an argument of type Arg: its block(s), or the argument itself.
template <class Arg>
decltype(auto) block_or_static(const std::vector<Array>& blocks, size_t first, const Arg& arg) {
  if constexpr (kIsMapped<Arg>) {
    return ArgLeaves<Arg>::block(blocks, first, arg);
  } else {
    return static_cast<const Arg&>(arg);
  }
}
template <class Arg>
using BodyArg = decltype(block_or_static<Arg>(std::declval<const std::vector<Array>&>(), size_t{},
                                              std::declval<const Arg&>()));

template <class R>
struct OutputTraits {
  static_assert(sizeof(R) == 0,
                "a shard_map/pmap body returns void, spmd::Array, std::tuple<Array, ...> or "
                "std::vector<Array>; convert other values (a float, a std::pair, ...) to Arrays");
  // Declared only so that the assertion above is the one error reported.
  static constexpr int kCount = 0;
  static std::vector<Array> flatten(R);
  static R unflatten(std::vector<Array>);
};
template <>
struct OutputTraits<Array> {
  static constexpr int kCount = 1;
  static std::vector<Array> flatten(Array a) { return {std::move(a)}; }
  static Array unflatten(std::vector<Array> v) { return std::move(v[0]); }
};
template <>
struct OutputTraits<void> {
  static constexpr int kCount = 0;
  static void unflatten(std::vector<Array>) {}
};
template <>
struct OutputTraits<std::vector<Array>> {
  static constexpr int kCount = -1;
  static std::vector<Array> flatten(std::vector<Array> v) { return v; }
  static std::vector<Array> unflatten(std::vector<Array> v) { return v; }
};
template <class... Ts>
struct OutputTraits<std::tuple<Ts...>> {
  static_assert((kIsArray<Ts> && ...),
                "a shard_map/pmap body returns void, spmd::Array, std::tuple<Array, ...> or "
                "std::vector<Array>: every element of a returned tuple must be an Array");
  static constexpr int kCount = sizeof...(Ts);
  static std::vector<Array> flatten(std::tuple<Ts...> t) {
    return std::apply([](auto&&... a) { return std::vector<Array>{Array(a)...}; }, std::move(t));
  }
  static std::tuple<Ts...> unflatten(std::vector<Array> v) {
    return unflatten_impl(std::move(v), std::index_sequence_for<Ts...>{});
  }
  template <size_t... Is>
  static std::tuple<Ts...> unflatten_impl(std::vector<Array> v, std::index_sequence<Is...>) {
    return std::tuple<Ts...>(std::move(v[Is])...);
  }
};

// True when f can be called with the blocks in place of Args (through a const reference).
template <class F, class... Args>
inline constexpr bool kBodyCallable = std::is_invocable_v<const F&, BodyArg<Args>...>;

// f's result type when called with blocks in place of its mapped arguments.
template <class F, class... Args>
using MappedResult = std::decay_t<std::invoke_result_t<const F&, BodyArg<Args>...>>;

// Marks that this device now runs the user's function (its caller may stop waiting for it once
// a deadline passes). Called by invoke_with_blocks once it has read everything it needs from the
// caller's frame; a no-op outside a device body or when already in user code.
void begin_user_code();

// Calls f with the blocks in place of its mapped arguments (argument I's leaves start at
// first[I]) and the other arguments unchanged, and flattens its result. `first` and `args` live
// in the caller's frame: they are read into `inputs` before the user code begins.
template <class F, size_t... Is, class... Args>
std::vector<Array> invoke_with_blocks(const F& f, const std::vector<Array>& blocks,
                                      const std::array<size_t, sizeof...(Args)>& first,
                                      std::index_sequence<Is...>, const Args&... args) {
  using R = MappedResult<F, Args...>;
  std::tuple<BodyArg<Args>...> inputs(block_or_static<Args>(blocks, first[Is], args)...);
  begin_user_code();
  if constexpr (std::is_void_v<R>) {
    std::apply(f, std::move(inputs));
    return {};
  } else {
    return OutputTraits<R>::flatten(std::apply(f, std::move(inputs)));
  }
}

// What shard_map and pmap do with a call's arguments: hand `run` the Array leaves, their layout,
// a body that calls f per device, and the output count; unflatten what it returns.
template <class F, class Run, class... Args>
auto call_mapped(const F& f, Run&& run, const Args&... args) {
  static_assert(kBodyCallable<F, Args...>,
                "the mapped function cannot be called with the blocks of these arguments: it "
                "must be callable as const (no mutable lambda) and take each Array argument as "
                "`const spmd::Array&` or `spmd::Array` (not `spmd::Array&`), each "
                "std::vector<Array> / std::tuple<Array...> argument as the same container, and "
                "other arguments as given");
  if constexpr (kBodyCallable<F, Args...>) {
    using Traits = OutputTraits<MappedResult<F, Args...>>;
    std::vector<Array> leaves;
    ArgLayout layout;
    std::array<size_t, sizeof...(Args)> first{};
    int position = 0;
    [[maybe_unused]] auto collect = [&](const auto& arg) {
      using Arg = std::decay_t<decltype(arg)>;
      if constexpr (kIsMapped<Arg>) {
        first[static_cast<size_t>(position)] = leaves.size();
        layout.add(position, ArgLeaves<Arg>::count(arg), ArgLeaves<Arg>::kContainer);
        ArgLeaves<Arg>::append(arg, leaves);
      }
      ++position;
    };
    (collect(args), ...);
    auto call = [&](const std::vector<Array>& blocks) {
      return invoke_with_blocks(f, blocks, first, std::index_sequence_for<Args...>{}, args...);
    };
    BodyRef body{&call, [](const void* object, const std::vector<Array>& blocks) {
                   return (*static_cast<const decltype(call)*>(object))(blocks);
                 }};
    return Traits::unflatten(run(std::move(leaves), layout, body, Traits::kCount));
  }
}

}  // namespace internal

namespace internal {

// A mapped function: f and its plan. Calling it hands f's Array leaves, their layout, a body that
// calls f and the output count to Run (run_shard_map, run_vmap), and unflattens what Run returns.
template <class F, class Plan,
          std::vector<Array> (*Run)(const Plan&, std::vector<Array>, const ArgLayout&, BodyRef,
                                    int)>
class Mapped {
 public:
  Mapped(F f, Plan plan) : f_(std::move(f)), plan_(std::move(plan)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return call_mapped(
        f_,
        [this](std::vector<Array> leaves, const ArgLayout& layout, BodyRef body, int count) {
          return Run(plan_, std::move(leaves), layout, body, count);
        },
        args...);
  }

  const Plan& plan() const { return plan_; }
  const F& function() const { return f_; }

 private:
  F f_;
  Plan plan_;
};

}  // namespace internal

// The callable shard_map returns. Call it with the arguments of f.
template <class F>
using ShardMapped = internal::Mapped<F, internal::ShardMapPlan, &internal::run_shard_map>;

namespace internal {
// Both shard_map overloads: the plan, with the function's name for messages.
template <class F>
ShardMapped<std::decay_t<F>> make_shard_map(F&& f, Mesh mesh, bool mesh_from_context,
                                            Specs in_specs, Specs out_specs,
                                            ShardMapOptions options, const char* file, int line) {
  std::string name =
      options.name.empty() ? callable_name(typeid(std::decay_t<F>), file, line) : options.name;
  ShardMapPlan plan{std::move(mesh), std::move(in_specs), std::move(out_specs), std::move(options),
                    std::move(name)};
  plan.mesh_from_context = mesh_from_context;
  return ShardMapped<std::decay_t<F>>(std::forward<F>(f), std::move(plan));
}
}  // namespace internal

// Maps f over mesh; see the file comment. Specs are validated when the mapped function is called.
// `file` and `line` locate the call for messages when options.name is empty (defaulted with
// __builtin_FILE/__builtin_LINE: libstdc++ 12 with Clang 14 lacks std::source_location).
template <class F>
ShardMapped<std::decay_t<F>> shard_map(F&& f, Mesh mesh, Specs in_specs, Specs out_specs,
                                       ShardMapOptions options = {},
                                       const char* file = __builtin_FILE(),
                                       int line = __builtin_LINE()) {
  return internal::make_shard_map(std::forward<F>(f), std::move(mesh), false, std::move(in_specs),
                                  std::move(out_specs), std::move(options), file, line);
}

// Maps f over the context mesh (spmd/mesh_context.h), read when the mapped function is called:
// the mesh of spmd::use_mesh / spmd::set_mesh, or inside a shard_map body the call's mesh, where
// this shard_map makes manual the axes options.axis_names names (default: every mesh axis; axes
// already manual stay manual) and its outputs are gathered over them on every device; it runs
// under the enclosing call's collective deadline (options.collective_timeout_s is refused there).
// ValueError "The context mesh cannot be empty" without a context.
template <class F>
ShardMapped<std::decay_t<F>> shard_map(F&& f, Specs in_specs, Specs out_specs,
                                       ShardMapOptions options = {},
                                       const char* file = __builtin_FILE(),
                                       int line = __builtin_LINE()) {
  return internal::make_shard_map(std::forward<F>(f), Mesh(), true, std::move(in_specs),
                                  std::move(out_specs), std::move(options), file, line);
}

namespace internal {
// smap's specs: in_axes/out_axes entry k -> P(None x k, axis_name), nullopt -> P().
Specs smap_specs(const std::vector<std::optional<int>>& axes, const std::string& axis_name);

// Both smap overloads.
template <class F>
ShardMapped<std::decay_t<F>> make_smap(F&& f, Mesh mesh, bool mesh_from_context,
                                       const std::string& axis_name,
                                       const std::vector<std::optional<int>>& in_axes,
                                       const std::vector<std::optional<int>>& out_axes,
                                       const char* file, int line) {
  ShardMapOptions options;
  options.axis_names = {axis_name};
  return make_shard_map(std::forward<F>(f), std::move(mesh), mesh_from_context,
                        smap_specs(in_axes, axis_name), smap_specs(out_axes, axis_name),
                        std::move(options), file, line);
}
}  // namespace internal

// jax.smap: a shard_map over the single axis `axis_name` of the context mesh (see the shard_map
// overload without a mesh), with specs written as axes: in_axes/out_axes entry k means
// P(None x k, axis_name), nullopt means P(). One entry applies to every Array argument (output),
// or give one per Array argument (output). Rank-preserving (no squeeze, unlike pmap); check_vma
// on; the other mesh axes stay non-manual, so an smap inside its body can map over them.
template <class F>
ShardMapped<std::decay_t<F>> smap(F&& f, std::string axis_name,
                                  std::vector<std::optional<int>> in_axes,
                                  std::vector<std::optional<int>> out_axes,
                                  const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return internal::make_smap(std::forward<F>(f), Mesh(), true, axis_name, in_axes, out_axes, file,
                             line);
}

// smap over `mesh` instead of the context mesh (which, when set, must match it).
template <class F>
ShardMapped<std::decay_t<F>> smap(F&& f, Mesh mesh, std::string axis_name,
                                  std::vector<std::optional<int>> in_axes,
                                  std::vector<std::optional<int>> out_axes,
                                  const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return internal::make_smap(std::forward<F>(f), std::move(mesh), false, axis_name, in_axes,
                             out_axes, file, line);
}

}  // namespace spmd
