// SPDX-License-Identifier: Apache-2.0
// spmd::pmap_mesh (spmd/pmap_mesh.h): legacy pmap's argument and device checks, level by level in
// legacy's order, on the argument types alone, then the mesh.
#include "spmd/pmap_mesh.h"

#include <fmt/format.h>

#include <numeric>

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

}  // namespace

Mesh pmap_mesh(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
               const PmapMeshOptions& options) {
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
  std::vector<internal::PmapLevel> levels;
  std::vector<Device> devices;
  for (size_t l = 0; l < axes.size(); ++l) {
    const internal::PmapPlan plan = l == 0 ? outer : level_plan(axes[l], options, false);
    std::vector<std::optional<int>> in_axes;
    try {
      in_axes = internal::pmap::resolve_in_axes(plan, view, layout);
      const int64_t size = internal::pmap::mapped_size(plan, view, layout, in_axes);
      levels.push_back(
          {plan.axis_name, l == 0 ? internal::pmap::global_axis_size(plan, size) : size});
    } catch (Error& e) {
      // Legacy pmap checks an inner level in the outer level's body, on every device: the
      // error names the first one.
      if (l > 0) e.set_device(devices[0]);
      throw;
    }
    // Legacy pmap places each level before its body reaches the next one, so a grid too large
    // for the devices is reported at the first level that makes it so.
    devices = internal::pmap::select_devices(outer, levels, /*probing=*/l + 1 < axes.size());
    view = blocks(std::move(view), in_axes);
  }
  return internal::pmap::level_mesh(devices, levels);
}

}  // namespace spmd
