// SPDX-License-Identifier: Apache-2.0
// Internal: what the legacy pmap and the compat shim share, so that both give the same
// (legacy, pmap-level) errors and the same nested-pmap behaviour:
//   - argument checks with JAX <= 0.7.2's messages (docs/conformance.md, C32-C45);
//   - the device choice for a (nested) call;
//   - nested pmap: the inner call inside a device body, and the discovery of its axis;
//   - donation.
//
// Nested pmap runs as one call over a grid of devices with one mesh axis per pmap level (outer
// axis major, as legacy JAX numbered devices). Every device runs the outer body (devices that
// differ only in inner coordinates compute the same values); when the body reaches the inner
// pmap, each device runs the inner body on its own slice and the results are gathered over the
// inner axis, so the outer body sees the stacked result as in JAX. The inner axis size is only
// known when the body reaches the inner pmap: the first call throws NestedDiscovery from there,
// and the caller reruns on the larger grid (remembered in the PmapCache).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "array_impl.h"
#include "exec/call_context.h"
#include "spmd/pmap.h"

namespace spmd::internal {
// Sends a warning to the handler installed with spmd::set_warning_handler (default: stderr).
void warn(const std::string& message);
}  // namespace spmd::internal

namespace spmd::internal::pmap {

// Thrown from an inner pmap whose axis the current call does not have yet. Not an
// std::exception: user code that catches std::exception in a body must not swallow it.
struct NestedDiscovery : ControlFlow {
  PmapLevel level;
};

// The dtype and shape of an argument, without its data: what the argument checks read (an inner
// level of spmd::pmap_mesh checks the blocks the outer level would make).
struct ArgType {
  DType dtype_;
  Shape shape_;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
};

// The mapped axis of each Array leaf, validated and normalised (non-negative): in_axes holds one
// entry for all, or one per mapped argument (applying to every element of a container). `Arg` is
// Array or ArgType.
template <class Arg>
std::vector<std::optional<int>> resolve_in_axes(const PmapPlan& plan, const std::vector<Arg>& args,
                                                const ArgLayout& layout);

// The mapped size shared by every mapped argument (legacy errors when there is none or they
// disagree, or when it contradicts options.axis_size).
template <class Arg>
int64_t mapped_size(const PmapPlan& plan, const std::vector<Arg>& args, const ArgLayout& layout,
                    const std::vector<std::optional<int>>& in_axes);

// The size of the mapped axis over every process (JAX's global_axis_size) given this process's
// mapped size: the same in one process; in a multi-process run the number of devices passed to
// pmap, else the mapped size times the process count, each process mapping over all of its
// devices (legacy's errors otherwise, and when options.axis_size is not that size).
int64_t global_axis_size(const PmapPlan& plan, int64_t local_size);

// The out_axes entry of each output, normalised against the stacked rank.
std::vector<std::optional<int>> resolve_out_axes(const PmapPlan& plan,
                                                 const std::vector<Array>& outputs);

// The devices of a call with the given levels (outer first): options.devices or the first
// devices, with legacy's errors when there are too few or the count does not match. In a
// multi-process run the devices of every process (levels[0] has the global size), and a
// NotImplementedError for nested levels. `probing`:
// inner levels may still be undiscovered, so options.devices may cover a larger grid than
// `levels`; a prefix of it is used until the levels are known (check_device_count then checks).
std::vector<Device> select_devices(const PmapPlan& plan, const std::vector<PmapLevel>& levels,
                                   bool probing);

// Legacy's error when options.devices does not match the grid of every level (once known).
void check_device_count(const PmapPlan& plan, const std::vector<PmapLevel>& levels);

// The mesh of a call: one axis per level (the last one is kept in `cache`: building and validating
// a Mesh costs as much as a small call).
Mesh level_mesh(const std::vector<Device>& devices, const std::vector<PmapLevel>& levels);
Mesh level_mesh(const std::vector<Device>& devices, const std::vector<PmapLevel>& levels,
                PmapCache& cache);

// Runs a pmap call made inside a device body (a nested pmap); see the file comment.
std::vector<Array> run_nested(const PmapPlan& plan, const std::vector<Array>& args,
                              const ArgLayout& layout, BodyRef body);

// Runs `execute(levels, probing)` for the top-level call, rerunning on a larger grid whenever the
// body discovers an inner pmap, and remembering the levels in `cache` (`probing` until they are
// known for these argument types).
template <class Execute>
std::vector<Array> with_levels(const PmapPlan& plan, const std::vector<Array>& args, int64_t size,
                               PmapCache& cache, Execute&& execute);

// The flow both implementations share: a call inside a body is a nested pmap; otherwise check
// the arguments, run `execute(in_axes, levels, probing)` (rerunning on a larger grid when the body
// discovers an inner pmap), and delete donated arguments.
template <class Execute>
std::vector<Array> run(const PmapPlan& plan, const std::vector<Array>& args,
                       const ArgLayout& layout, BodyRef body, PmapCache& cache, Execute&& execute) {
  if (current_device_context() != nullptr) return run_nested(plan, args, layout, body);
  std::vector<std::optional<int>> in_axes = resolve_in_axes(plan, args, layout);
  int64_t size = global_axis_size(plan, mapped_size(plan, args, layout, in_axes));
  check_donation(plan.options.donate_argnums, layout.leaf_positions());
  std::vector<Array> results =
      with_levels(plan, args, size, cache, [&](const std::vector<PmapLevel>& levels, bool probing) {
        return execute(in_axes, levels, probing);
      });
  donate(plan.options.donate_argnums, args, layout.leaf_positions());
  return results;
}

// Marks the body of a pmap level as running on this device thread (enables nested pmap calls and
// collectives over the level's axis) for the lifetime of the guard.
class LevelScope {
 public:
  explicit LevelScope(int mesh_axis);
  ~LevelScope();
  LevelScope(const LevelScope&) = delete;
  LevelScope& operator=(const LevelScope&) = delete;

 private:
  DeviceContext* ctx_;
  uint64_t saved_bound_;
  int saved_depth_;
};

// The slice of the mapped arguments that the device at mesh position `rank` of a call's mesh
// takes along the outermost level: its coordinate there, counted among this process's devices in
// a multi-process run (each process passes only its devices' slices).
int64_t local_coord(const Mesh& mesh, int rank);

// The key under which a PmapCache remembers levels: a hash of the argument types.
uint64_t cache_key(const std::vector<Array>& args);

// ---- template implementation ----

// The inner levels remembered for `key`; nullopt until a call with those argument types completed.
std::optional<std::vector<PmapLevel>> cached_levels(PmapCache& cache, uint64_t key);
void remember_levels(PmapCache& cache, uint64_t key, const std::vector<PmapLevel>& levels);

template <class Execute>
std::vector<Array> with_levels(const PmapPlan& plan, const std::vector<Array>& args, int64_t size,
                               PmapCache& cache, Execute&& execute) {
  uint64_t key = cache_key(args);
  std::vector<PmapLevel> levels{PmapLevel{plan.axis_name, size}};
  std::optional<std::vector<PmapLevel>> known = cached_levels(cache, key);
  if (known) levels.insert(levels.end(), known->begin(), known->end());
  for (;;) {
    try {
      std::vector<Array> results = execute(levels, !known.has_value());
      if (!known) {
        remember_levels(cache, key, {levels.begin() + 1, levels.end()});
        check_device_count(plan, levels);
      }
      return results;
    } catch (const NestedDiscovery& discovery) {
      levels.push_back(discovery.level);
      remember_levels(cache, key, {levels.begin() + 1, levels.end()});
    }
  }
}

}  // namespace spmd::internal::pmap
