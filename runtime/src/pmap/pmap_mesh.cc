// SPDX-License-Identifier: Apache-2.0
// spmd::pmap_mesh (spmd/pmap_mesh.h): legacy pmap's argument and device checks, level by level in
// legacy's order, on the argument types alone, then the mesh.
#include "spmd/pmap_mesh.h"

#include <fmt/format.h>

#include <numeric>

#include "mesh_context_internal.h"
#include "pmap/pmap_common.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

// What legacy pmap knew of one level: its name and options.
internal::PmapPlan level_plan(const PmapAxis& axis, const PmapMeshOptions& options, bool outer) {
  internal::PmapPlan plan;
  plan.axis_name = axis.name;
  plan.options.in_axes.assign(axis.in_axes.begin(), axis.in_axes.end());
  plan.options.axis_size = axis.size;
  if (outer) plan.options.devices = options.devices;
  plan.fun_name = "pmap_mesh";
  return plan;
}

// The blocks a level hands to the next one: each mapped argument loses its mapped dimension.
std::vector<internal::pmap::ArgType> blocks(std::vector<internal::pmap::ArgType> args,
                                            const std::vector<std::optional<int>>& in_axes) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (in_axes[i]) args[i].shape_.erase(args[i].shape_.begin() + *in_axes[i]);
  }
  return args;
}

// The levels `axes` make of `args`, checked as legacy pmap checked them (legacy's messages).
struct CheckedLevels {
  std::vector<internal::PmapLevel> levels;
  std::vector<Device> devices;  // with `place`: the outer level's devices for `levels`
};

// With `place`, each level is placed before the next one is checked, as legacy pmap placed a level
// before its body reached the next one (so a grid too large for the devices is reported at the
// first level that makes it so), and errors of inner levels name the first device, where legacy
// raised them. `probing`: inner levels may follow (see select_devices).
CheckedLevels checked_levels(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
                             const PmapMeshOptions& options, bool place, bool probing) {
  if (axes.empty()) throw ValueError("pmap_mesh needs at least one axis (one per pmap level)");
  std::vector<int> positions = options.arg_positions;
  if (positions.empty()) {
    positions.resize(args.size());
    std::iota(positions.begin(), positions.end(), 0);
  }
  if (positions.size() != args.size()) {
    throw ValueError(fmt::format(
        "pmap_mesh got {} Array arguments but {} arg_positions; give one position per argument",
        args.size(), positions.size()));
  }
  internal::ArgLayout layout;
  for (int position : positions) layout.add(position, 1, /*container=*/false);
  std::vector<internal::pmap::ArgType> view;
  for (const Array& a : args) view.push_back({a.dtype(), a.shape()});
  const internal::PmapPlan outer = level_plan(axes[0], options, true);
  CheckedLevels out;
  for (size_t l = 0; l < axes.size(); ++l) {
    const internal::PmapPlan plan = l == 0 ? outer : level_plan(axes[l], options, false);
    std::vector<std::optional<int>> in_axes;
    try {
      in_axes = internal::pmap::resolve_in_axes(plan, view, layout);
      const int64_t size = internal::pmap::mapped_size(plan, view, layout, in_axes);
      out.levels.push_back(
          {plan.axis_name, l == 0 ? internal::pmap::global_axis_size(plan, size) : size});
    } catch (Error& e) {
      if (place && l > 0) e.set_device(out.devices[0]);
      throw;
    }
    if (place) {
      out.devices =
          internal::pmap::select_devices(outer, out.levels, probing || l + 1 < axes.size());
    }
    view = blocks(std::move(view), in_axes);
  }
  return out;
}

// A level of a nest inside the enclosing level's body: its axes must be the context mesh's next
// automatic axes, with the sizes its arguments map. An axis the mesh lacks is discovered when a
// PmapNest runs the enclosing call.
void check_inner_level(const internal::DeviceContext& ctx, const std::vector<Array>& args,
                       const std::vector<PmapAxis>& axes, const PmapMeshOptions& options) {
  if (options.devices) throw ValueError("Nested pmap with explicit devices argument.");
  const std::vector<internal::PmapLevel> levels =
      checked_levels(args, axes, options, /*place=*/false, /*probing=*/false).levels;
  const Mesh& mesh = ctx.call->mesh();
  const int depth = __builtin_popcountll(ctx.bound);
  for (size_t l = 0; l < levels.size(); ++l) {
    const int a = depth + static_cast<int>(l);
    if (a >= mesh.ndim()) {
      if (ctx.call->discovers_nest()) throw internal::pmap::NestedDiscovery{{}, levels[l]};
      throw ValueError(fmt::format(
          "a pmap level over '{}' (size {}) runs inside the body of '{}', whose mesh {} has no "
          "automatic axis left for it: an inner level of a nest maps an axis of the enclosing "
          "call's mesh. Run the enclosing call through spmd::PmapNest as well (spmd-migrate "
          "writes every level of a nest so), or give its mesh an axis '{}' of size {} that its "
          "axis_names leave automatic.",
          levels[l].name, levels[l].size, ctx.call->fun_name(), AbstractMesh(mesh, ctx.bound).str(),
          levels[l].name, levels[l].size));
    }
    if (mesh.axis_names()[a] != levels[l].name || mesh.axis_sizes()[a] != levels[l].size) {
      throw ValueError(fmt::format(
          "this nested pmap maps axis '{}' of size {}, but earlier calls with the same argument "
          "types reached a nested pmap over '{}' of size {}; nested pmaps must have the same "
          "structure on every call",
          levels[l].name, levels[l].size, mesh.axis_names()[a], mesh.axis_sizes()[a]));
    }
  }
}

}  // namespace

Mesh pmap_mesh(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
               const PmapMeshOptions& options) {
  CheckedLevels checked = checked_levels(args, axes, options, /*place=*/true, /*probing=*/false);
  return internal::pmap::level_mesh(checked.devices, checked.levels);
}

namespace internal {

// What the callables of one PmapNest (and its copies) share: the inner levels discovered per
// argument types, and the last mesh.
struct PmapNestState {
  PmapCache cache;
};

}  // namespace internal

PmapNest::PmapNest() : state_(std::make_shared<internal::PmapNestState>()) {}

void PmapNest::run_levels(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
                          const PmapMeshOptions& options, const std::function<void()>& call) const {
  if (const internal::DeviceContext* ctx = internal::current_device_context()) {
    check_inner_level(*ctx, args, axes, options);
    call();
    return;
  }
  internal::PmapCache& cache = state_->cache;
  const uint64_t key = internal::pmap::cache_key(args);
  std::optional<std::vector<internal::PmapLevel>> known = internal::pmap::cached_levels(cache, key);
  std::vector<internal::PmapLevel> inner = known.value_or(std::vector<internal::PmapLevel>{});
  const internal::PmapPlan outer = level_plan(axes[0], options, true);
  // The outer levels are checked and placed first, as legacy pmap did before running the body.
  const std::vector<internal::PmapLevel> outer_levels =
      checked_levels(args, axes, options, /*place=*/true, /*probing=*/true).levels;
  for (;;) {
    std::vector<internal::PmapLevel> levels = outer_levels;
    levels.insert(levels.end(), inner.begin(), inner.end());
    const bool probing = !known.has_value();
    Mesh mesh = internal::pmap::level_mesh(internal::pmap::select_devices(outer, levels, probing),
                                           levels, cache);
    try {
      internal::NestScope scope(std::move(mesh));
      call();
      if (probing) {
        internal::pmap::remember_levels(cache, key, inner);
        internal::pmap::check_device_count(outer, levels);
      }
      return;
    } catch (const internal::pmap::NestedDiscovery& discovery) {
      inner.push_back(discovery.level);
      internal::pmap::remember_levels(cache, key, inner);
    }
  }
}

}  // namespace spmd
