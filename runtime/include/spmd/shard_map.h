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
// preserved. Axes the spec does not mention replicate the block. Non-Array arguments are passed
// unchanged to every device. Outputs are assembled the other way round from out_specs; an axis an
// out_spec leaves out means "equal on every device along it" and is checked at run time by
// check_vma (JAX's varying-manual-axes types, tracked per value), never by comparing data.
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
// Errors (ValueError, TypeError, NameError) carry JAX's message for the same mistake, naming the
// argument, spec and mesh. A device that throws aborts the whole call and the first error is
// rethrown here with the device recorded. Calls from several host threads are safe; each device
// runs its calls in launch order.
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

// in_specs / out_specs: one PartitionSpec for every Array argument (or output), or one per Array
// argument (or output), in order.
class Specs {
 public:
  Specs(std::initializer_list<PartitionSpec> specs) : specs_(specs), single_(false) {}
  Specs(PartitionSpec spec) : specs_{std::move(spec)}, single_(true) {}
  Specs(std::vector<PartitionSpec> specs) : specs_(std::move(specs)), single_(false) {}

  // True when one spec applies to every leaf.
  bool is_single() const { return single_; }
  const std::vector<PartitionSpec>& specs() const { return specs_; }
  // "P('i',)" or "[P('i',), P()]".
  std::string str() const;

 private:
  std::vector<PartitionSpec> specs_;
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
};

// A non-owning callable: blocks of this device -> outputs of this device. `user_code`: it is
// the user's function (false for spmd's own adapters around it, such as the compat pmap's).
struct BodyRef {
  const void* object;
  std::vector<Array> (*call)(const void* object, const std::vector<Array>& blocks);
  bool user_code = true;
};

// Runs the body on every mesh device and assembles the outputs (the non-template part of
// shard_map). `num_outputs` is the output count known from the body's return type, or -1 when
// it is only known at run time (std::vector<Array>).
// `arg_positions[i]` is the position of the i-th Array among all of f's arguments (for messages).
std::vector<Array> run_shard_map(const ShardMapPlan& plan, std::vector<Array> args,
                                 std::span<const int> arg_positions, BodyRef body, int num_outputs);

// P(None x axis, name) for an int axis, P() for nullopt (pmap/smap in_axes -> PartitionSpec).
// ValueError for a negative axis.
PartitionSpec axis_spec(std::optional<int> axis, const std::string& name);

// A readable name for a callable type: "<lambda>", "<function>", or the functor's class name.
std::string callable_name(const std::type_info& type);

template <class T>
inline constexpr bool kIsArray = std::is_same_v<std::decay_t<T>, Array>;

// Position of argument I among the Array arguments.
template <size_t I, class... Args>
constexpr size_t array_ordinal() {
  constexpr bool is_array[] = {kIsArray<Args>..., false};
  size_t n = 0;
  for (size_t k = 0; k < I; ++k) n += is_array[k] ? 1 : 0;
  return n;
}

// Positions of the Array arguments among Args.
template <class... Args>
struct ArrayPositions {
  static constexpr size_t kCount = (size_t{0} + ... + (kIsArray<Args> ? 1 : 0));
  static constexpr std::array<int, kCount> make() {
    std::array<int, kCount> out{};
    constexpr bool is_array[] = {kIsArray<Args>..., false};
    size_t n = 0;
    for (size_t k = 0; k < sizeof...(Args); ++k) {
      if (is_array[k]) out[n++] = static_cast<int>(k);
    }
    return out;
  }
  static constexpr std::array<int, kCount> kValue = make();
};

// The value f receives for argument I: its block, or the argument itself.
template <size_t I, class... Args, class Arg>
decltype(auto) block_or_static(const std::vector<Array>& blocks, const Arg& arg) {
  if constexpr (kIsArray<Arg>) {
    return static_cast<const Array&>(blocks[array_ordinal<I, Args...>()]);
  } else {
    return static_cast<const Arg&>(arg);
  }
}

template <class R>
struct OutputTraits;
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
  static_assert((kIsArray<Ts> && ...), "shard_map bodies return Array or a std::tuple of Arrays");
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

// f's result type when called with blocks in place of its Array arguments.
template <class F, class... Args>
using MappedResult =
    std::decay_t<std::invoke_result_t<const F&, decltype(block_or_static<0, Args...>(
                                                    std::declval<const std::vector<Array>&>(),
                                                    std::declval<const Args&>()))...>>;

// Calls f with `blocks` in place of its Array arguments and the other arguments unchanged, and
// flattens its result.
template <class F, size_t... Is, class... Args>
std::vector<Array> invoke_with_blocks(const F& f, const std::vector<Array>& blocks,
                                      std::index_sequence<Is...>, const Args&... args) {
  using R = decltype(f(block_or_static<Is, Args...>(blocks, args)...));
  if constexpr (std::is_void_v<R>) {
    f(block_or_static<Is, Args...>(blocks, args)...);
    return {};
  } else {
    return OutputTraits<std::decay_t<R>>::flatten(f(block_or_static<Is, Args...>(blocks, args)...));
  }
}

// What shard_map and pmap do with a call's arguments: hand `run` the Array arguments, their
// positions, a body that calls f per device, and the output count; unflatten what it returns.
template <class F, class Run, class... Args>
auto call_mapped(const F& f, Run&& run, const Args&... args) {
  using Traits = OutputTraits<MappedResult<F, Args...>>;
  std::vector<Array> arrays;
  [[maybe_unused]] auto collect = [&arrays](const auto& arg) {
    if constexpr (kIsArray<decltype(arg)>) arrays.push_back(arg);
  };
  (collect(args), ...);
  auto call = [&](const std::vector<Array>& blocks) {
    return invoke_with_blocks(f, blocks, std::index_sequence_for<Args...>{}, args...);
  };
  BodyRef body{&call, [](const void* object, const std::vector<Array>& blocks) {
                 return (*static_cast<const decltype(call)*>(object))(blocks);
               }};
  return Traits::unflatten(
      run(std::move(arrays), ArrayPositions<Args...>::kValue, body, Traits::kCount));
}

}  // namespace internal

// The callable shard_map returns. Call it with the arguments of f.
template <class F>
class ShardMapped {
 public:
  ShardMapped(F f, internal::ShardMapPlan plan) : f_(std::move(f)), plan_(std::move(plan)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return internal::call_mapped(
        f_,
        [this](std::vector<Array> arrays, std::span<const int> positions, internal::BodyRef body,
               int count) {
          return internal::run_shard_map(plan_, std::move(arrays), positions, body, count);
        },
        args...);
  }

  const internal::ShardMapPlan& plan() const { return plan_; }

 private:
  F f_;
  internal::ShardMapPlan plan_;
};

// Maps f over mesh; see the file comment. Specs are validated when the mapped function is called.
template <class F>
ShardMapped<std::decay_t<F>> shard_map(F&& f, Mesh mesh, Specs in_specs, Specs out_specs,
                                       ShardMapOptions options = {}) {
  std::string name =
      options.name.empty() ? internal::callable_name(typeid(std::decay_t<F>)) : options.name;
  return ShardMapped<std::decay_t<F>>(
      std::forward<F>(f),
      internal::ShardMapPlan{std::move(mesh), std::move(in_specs), std::move(out_specs),
                             std::move(options), std::move(name)});
}

// jax.smap: a shard_map over the single axis `axis_name` of `mesh`, with specs written as axes:
// in_axes/out_axes entry k means P(None x k, axis_name), nullopt means P(). One entry applies to
// every Array argument (output), or give one per Array argument (output). Rank-preserving (no
// squeeze, unlike pmap); check_vma on; the other mesh axes stay non-manual.
template <class F>
ShardMapped<std::decay_t<F>> smap(F&& f, Mesh mesh, std::string axis_name,
                                  std::vector<std::optional<int>> in_axes,
                                  std::vector<std::optional<int>> out_axes) {
  auto to_specs = [&](const std::vector<std::optional<int>>& axes) {
    std::vector<PartitionSpec> specs;
    for (const std::optional<int>& a : axes) specs.push_back(internal::axis_spec(a, axis_name));
    return specs.size() == 1 ? Specs(specs[0]) : Specs(std::move(specs));
  };
  ShardMapOptions options;
  options.axis_names = {axis_name};
  return shard_map(std::forward<F>(f), std::move(mesh), to_specs(in_axes), to_specs(out_axes),
                   std::move(options));
}

}  // namespace spmd
