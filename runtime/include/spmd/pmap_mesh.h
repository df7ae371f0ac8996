// SPDX-License-Identifier: Apache-2.0
// File: spmd/pmap_mesh.h
//
// The mesh a pmap call becomes when it is migrated to shard_map, checked the way the legacy pmap
// checked its arguments: code written by spmd-migrate builds its mesh with pmap_mesh, so a call
// that legacy pmap rejected raises the same ValueError with the same message (a rank-0 argument or
// an in_axes entry beyond an argument's rank, mapped sizes that disagree or contradict axis_size,
// more devices than there are, a devices list whose size is not the grid's, two levels with one
// axis name). The mesh has one axis per pmap level, outer first, sized by that level's mapped
// dimension, over the first devices of spmd::devices() (or `devices`) in pmap's order.
//
// Example: `spmd::pmap(f, "i", {.in_axes = {0, std::nullopt}})(x, w)` migrated:
//   spmd::Mesh mesh = spmd::pmap_mesh({x, w}, {{"i", {0, std::nullopt}}});
//   auto y = spmd::shard_map(adapter_of_f, mesh, {spmd::P("i"), spmd::P()}, spmd::P("i"),
//                            {.check_vma = false})(x, w);
// and a nest `pmap(pmap(g, "j", {.in_axes = {1}}), "i")(x)`:
//   spmd::Mesh mesh = spmd::pmap_mesh({x}, {{"i"}, {"j", {1}}});  // Mesh(i: x.shape[0], j: ...)
//
// In a multi-process run the first axis spans every process's devices, as pmap's does (x holds
// this process's slices, so the axis has x.shape[0] x process_count() devices); the shard_map
// over it then takes global arguments: pass host_local_array_to_global_array(x, mesh, spec) and
// read outputs through global_array_to_host_local_array (spmd/make_array.h). spmd-migrate does
// not write these calls yet.
//
// An imperfect nest (a pmap that runs inside the function another pmap maps, through a helper or
// a captured callable) cannot be one shard_map, and its inner sizes are known only when the body
// reaches the inner level. Each of its levels runs through a PmapNest: at top level it maps over
// pmap_mesh's axes plus the inner axes the body discovers (legacy pmap's rule: the first call
// with new argument types runs on the outer grid until the body reaches an inner level, then
// reruns on the whole grid; later calls remember it), made the context mesh; inside the enclosing
// level's body it checks the arguments against the context mesh's next automatic axes. The
// shard_map it runs takes the context mesh and makes only its level's axes manual:
//
//   auto outer = [f = body, nest = spmd::PmapNest()](const spmd::Array& a0) {
//     auto block = [&](const spmd::Array& b0) {
//       return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
//     };
//     return nest.run({a0}, {{"i"}}, [&] {
//       return spmd::shard_map(block, spmd::P("i"), spmd::P("i"),
//                              {.check_vma = false, .axis_names = {"i"}})(a0);
//     });
//   };
//
// where `body` calls a helper that runs the inner level the same way over {{"j"}}.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/array.h"
#include "spmd/device.h"
#include "spmd/mesh.h"

namespace spmd {

// One pmap level: a mesh axis.
struct PmapAxis {
  // The axis name (pmap's axis_name).
  std::string name;
  // The mapped dimension of each Array argument as this level sees it (the outer levels'
  // dimensions removed, as in a nested pmap): one entry for all, or one per Array argument;
  // std::nullopt for an argument this level does not map; negative entries count from the end.
  std::vector<std::optional<int>> in_axes = {0};
  // pmap's axis_size option: when given, the mapped sizes must equal it.
  std::optional<int64_t> size;
};

struct PmapMeshOptions {
  // pmap's devices option: the mesh's devices in order, exactly one per element of the grid.
  // Default: the first devices of spmd::devices().
  std::optional<std::vector<Device>> devices;
  // The position of each Array argument among all the call's arguments, as the messages name
  // them ("args[2]"). Default: 0, 1, 2, ...
  std::vector<int> arg_positions;
};

// The mesh of a call with Array arguments `args` over `axes` (outer first); throws ValueError with
// legacy pmap's message for any argument legacy pmap rejected (see the file comment).
Mesh pmap_mesh(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
               const PmapMeshOptions& options = {});

namespace internal {
struct PmapNestState;
}  // namespace internal

// One level of an imperfect nest of pmaps, migrated (see the file comment). Copies share what
// earlier calls discovered, as copies of a pmap callable did.
class PmapNest {
 public:
  PmapNest();

  // Runs `call` (a shard_map over the context mesh with axis_names = the names of `axes`) as the
  // level `axes` of a nest with Array arguments `args`, and returns what it returns. At top level:
  // over pmap_mesh(args, axes, options) extended by the inner axes the body discovers. Inside the
  // body of an enclosing level: ValueError with legacy pmap's message when the arguments do not
  // fit the context mesh's next automatic axes, or when `options.devices` is given (an inner
  // level has no devices of its own).
  template <class Call>
  auto run(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
           const PmapMeshOptions& options, Call&& call) const {
    using Result = decltype(call());
    if constexpr (std::is_void_v<Result>) {
      run_levels(args, axes, options, std::forward<Call>(call));
    } else {
      std::optional<Result> result;
      run_levels(args, axes, options, [&] { result.emplace(call()); });
      return std::move(*result);
    }
  }
  template <class Call>
  auto run(const std::vector<Array>& args, const std::vector<PmapAxis>& axes, Call&& call) const {
    return run(args, axes, PmapMeshOptions{}, std::forward<Call>(call));
  }

 private:
  void run_levels(const std::vector<Array>& args, const std::vector<PmapAxis>& axes,
                  const PmapMeshOptions& options, const std::function<void()>& call) const;

  std::shared_ptr<internal::PmapNestState> state_;
};

}  // namespace spmd
