// SPDX-License-Identifier: Apache-2.0
// File: spmd/pmap.h
//
// The legacy pmap API (deprecated; migrate with spmd-migrate), with JAX's <= 0.7.2 semantics:
// `pmap(f, "i")(x)` runs f once per device, device d receiving slice d of x's mapped axis with
// that axis removed (rank - 1), and stacks the results along out_axes. Collectives inside f name
// the axis "i". Nested pmaps map several axes over a grid of devices (outer axis major).
//
// Which implementation runs is chosen at link time, with no source change:
//   - spmd::pmap_legacy: the native legacy implementation;
//   - spmd::compat: pmap implemented on shard_map (JAX's own design since 0.8), kept bit-for-bit
//     identical to the legacy results, nested pmap included.
// Both are also callable by name in one program (spmd::legacy::pmap, spmd::compat::pmap, with
// the libraries spmd::pmap_legacy_impl and spmd::compat_impl) so that spmd/testing.h can compare
// them side by side.
//
// Example:
//   auto f = spmd::pmap([](const spmd::Array& x) { return x - spmd::psum(x, "i"); }, "i");
//   spmd::Array y = f(spmd::arange(8, spmd::DType::kFloat32).reshape({4, 2}));  // on 4 devices
//   auto g = spmd::pmap(h, "i", {.in_axes = {1, std::nullopt}, .out_axes = {0}});
//
// The first call of a nested pmap runs the outer body once more than later calls: the inner
// pmap's axis size is only known when the body reaches it (JAX learns it by tracing).
// spmd::vmap of a pmap is one pmap with f vmapped on each device (JAX's batching rule), so f may
// name the vmap's axis and the pmap's.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/array.h"
#include "spmd/collectives.h"
#include "spmd/shard_map.h"
#include "spmd/vmap.h"

namespace spmd {

// One in_axes/out_axes entry: an integer axis, or std::nullopt for "not mapped". Only integers
// convert: JAX rejects float and bool entries (TypeError), and a plain std::optional<int> would
// silently turn 1.5 into axis 1 and true into axis 1.
class MapAxis {
 public:
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  MapAxis(T axis) : axis_(static_cast<int>(axis)) {}
  MapAxis(std::nullopt_t) {}
  MapAxis(std::optional<int> axis) : axis_(axis) {}
  operator std::optional<int>() const { return axis_; }
  bool operator==(const MapAxis&) const = default;

 private:
  std::optional<int> axis_;
};

struct PmapOptions {
  // Mapped axis of each Array argument (one entry for all, or one per Array argument; a
  // std::vector<Array> or std::tuple of Arrays takes one entry for all its elements); nullopt
  // broadcasts the argument whole to every device. Negative axes count from the end.
  std::vector<MapAxis> in_axes = {0};
  // Where each output's stacked axis goes (one entry for all, or one per output); nullopt returns
  // one unstacked copy (device 0's value: pmap never checked that the devices agree).
  std::vector<MapAxis> out_axes = {0};
  // The devices to run on, in order; their count must equal the mapped size. Default: the first
  // devices of spmd::devices().
  std::optional<std::vector<Device>> devices;
  // The mapped size, checked against the arguments when given.
  std::optional<int64_t> axis_size;
  // Positions (among all arguments) of Array arguments the call consumes: they are deleted after
  // the call, and any later use raises ValueError.
  std::vector<int> donate_argnums;
};

namespace internal {

// What pmap knows before it sees arguments.
struct PmapPlan {
  std::string axis_name;
  PmapOptions options;
  std::string fun_name;
  std::string call_site;  // "file:line" of the pmap(...) call, for warnings
};

// One mapped axis of a (possibly nested) pmap call: its name and size.
struct PmapLevel {
  std::string name;
  int64_t size;
  bool operator==(const PmapLevel&) const = default;
};

// The inner pmap levels that earlier calls of one pmap-ed function discovered, per argument
// types (see the file comment).
struct PmapCache {
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::vector<PmapLevel>>> inner_levels;  // by argument types
  std::optional<Mesh> mesh;  // the last call's mesh, and its levels
  std::vector<PmapLevel> mesh_levels;
  uint64_t prepared_key = 0;  // what an implementation prepared for the last call, and its key
  std::shared_ptr<const void> prepared;
};

using PmapRunner = std::vector<Array> (*)(const PmapPlan& plan, const std::vector<Array>& args,
                                          const ArgLayout& layout, BodyRef body, int num_outputs,
                                          PmapCache& cache);

// The implementation the program links (spmd::pmap_legacy or spmd::compat).
std::vector<Array> run_pmap(const PmapPlan& plan, const std::vector<Array>& args,
                            const ArgLayout& layout, BodyRef body, int num_outputs,
                            PmapCache& cache);

// Validates what pmap(...) itself checks (JAX raises these at decoration).
void check_pmap_options(const PmapPlan& plan);

// A fresh axis name for a pmap given none ("_internal_pmap_axis_name_<n>"): unique, so that
// nested unnamed pmaps map distinct axes, like legacy JAX's _TempAxisName.
std::string unnamed_axis();

}  // namespace internal

namespace legacy {
// The native legacy implementation (library spmd::pmap_legacy_impl).
std::vector<Array> run_pmap(const internal::PmapPlan& plan, const std::vector<Array>& args,
                            const internal::ArgLayout& layout, internal::BodyRef body,
                            int num_outputs, internal::PmapCache& cache);
}  // namespace legacy

namespace compat {
// pmap on shard_map (library spmd::compat_impl).
std::vector<Array> run_pmap(const internal::PmapPlan& plan, const std::vector<Array>& args,
                            const internal::ArgLayout& layout, internal::BodyRef body,
                            int num_outputs, internal::PmapCache& cache);
}  // namespace compat

// The callable pmap returns. Call it with the arguments of f.
template <class F>
class Pmapped {
 public:
  Pmapped(F f, internal::PmapPlan plan, internal::PmapRunner run)
      : f_(std::move(f)),
        plan_(std::move(plan)),
        runner_(run),
        cache_(std::make_shared<internal::PmapCache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return internal::call_mapped(
        f_,
        [this](std::vector<Array> arrays, const internal::ArgLayout& layout, internal::BodyRef body,
               int count) { return runner_(plan_, arrays, layout, body, count, *cache_); },
        args...);
  }

  const internal::PmapPlan& plan() const { return plan_; }
  const F& function() const { return f_; }
  internal::PmapRunner runner() const { return runner_; }

 private:
  F f_;
  internal::PmapPlan plan_;
  internal::PmapRunner runner_;
  std::shared_ptr<internal::PmapCache> cache_;
};

namespace internal {
// `file` and `line` locate the pmap(...) call (defaulted there with __builtin_FILE/__builtin_LINE,
// which GCC and Clang both provide, unlike std::source_location with libstdc++ 12 and Clang 14).
template <class F>
Pmapped<std::decay_t<F>> make_pmapped(F&& f, std::string axis_name, PmapOptions options,
                                      PmapRunner runner, const char* file, int line) {
  PmapPlan plan{axis_name.empty() ? unnamed_axis() : std::move(axis_name), std::move(options),
                callable_name(typeid(std::decay_t<F>), file, line),
                std::string(file) + ":" + std::to_string(line)};
  check_pmap_options(plan);
  return Pmapped<std::decay_t<F>>(std::forward<F>(f), std::move(plan), runner);
}
}  // namespace internal

// Maps f over the leading (or in_axes) dimension of its arguments; see the file comment.
template <class F>
[[deprecated(
    "spmd::pmap is deprecated: migrate to spmd::shard_map (run spmd-migrate over your sources); "
    "meanwhile link spmd::compat to run pmap on shard_map")]] Pmapped<std::decay_t<F>>
pmap(F&& f, std::string axis_name, PmapOptions options = {}, const char* file = __builtin_FILE(),
     int line = __builtin_LINE()) {
  return internal::make_pmapped(std::forward<F>(f), std::move(axis_name), std::move(options),
                                &internal::run_pmap, file, line);
}

namespace legacy {
// spmd::pmap bound to the native legacy implementation, whatever the program links.
template <class F>
Pmapped<std::decay_t<F>> pmap(F&& f, std::string axis_name, PmapOptions options = {},
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return internal::make_pmapped(std::forward<F>(f), std::move(axis_name), std::move(options),
                                &legacy::run_pmap, file, line);
}
}  // namespace legacy

namespace compat {
// spmd::pmap bound to the shard_map-based implementation, whatever the program links.
template <class F>
Pmapped<std::decay_t<F>> pmap(F&& f, std::string axis_name, PmapOptions options = {},
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return internal::make_pmapped(std::forward<F>(f), std::move(axis_name), std::move(options),
                                &compat::run_pmap, file, line);
}
}  // namespace compat

namespace internal {
template <class G>
inline constexpr bool kHasBatchingRule<Pmapped<G>> = true;

// The plans of vmap(pmap(...)): JAX's batching rule for pmap. The pmap maps the same dimension of
// each argument, counted with the batch dimension in place, and f is vmapped on each device over
// the batch dimension of its slice; outputs stack the batch at out_axes and the pmap's axis
// beside it. Non-negative axes only (NotImplementedError), and vmap out_axes integers.
std::pair<PmapPlan, VmapPlan> batch_pmap_plans(const PmapPlan& pmap, VmapPlan vmap);
}  // namespace internal

// vmap of a pmap: one pmap over the batch (see spmd/vmap.h).
template <class G>
Pmapped<Vmapped<G>> vmap(const Pmapped<G>& f, std::vector<std::optional<int>> in_axes = {0},
                         std::vector<std::optional<int>> out_axes = {0}, VmapOptions options = {},
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  auto [pmap_plan, vmap_plan] = internal::batch_pmap_plans(
      f.plan(), internal::make_vmap_plan<G>(std::move(in_axes), std::move(out_axes),
                                            std::move(options), file, line));
  return Pmapped<Vmapped<G>>(Vmapped<G>(f.function(), std::move(vmap_plan)), std::move(pmap_plan),
                             f.runner());
}

// ---- JAX's other deprecated pmap-era helpers ----

// jax.device_put_replicated: stacks n = devices.size() copies of x along a new leading axis, one
// per device (the layout pmap expects).
[[deprecated(
    "use spmd::device_put(x, NamedSharding(mesh, P())) (spmd-migrate rewrites this)")]] Array
device_put_replicated(const Array& x, const std::vector<Device>& devices);
// jax.device_put_sharded: stacks xs (one per device, equal shapes) along a new leading axis,
// xs[k] on devices[k].
[[deprecated(
    "use spmd::device_put(stack(xs), NamedSharding(mesh, P(\"x\"))) (spmd-migrate "
    "rewrites this)")]] Array
device_put_sharded(const std::vector<Array>& xs, const std::vector<Device>& devices);
// jax.lax.pvary, the old spelling of pcast(x, axes, To::kVarying).
[[deprecated("use spmd::pcast(x, axes, spmd::To::kVarying)")]] Array pvary(const Array& x,
                                                                           AxisNames axes);

// Where warnings of the pmap implementations go (default: standard error). Returns the previous
// handler. Used by the compat shim for out_axes=nullopt outputs that differ across devices.
using WarningHandler = std::function<void(const std::string& message)>;
WarningHandler set_warning_handler(WarningHandler handler);

}  // namespace spmd
