// SPDX-License-Identifier: Apache-2.0
// File: spmd/vmap.h
//
// vmap maps a function over an axis of its arguments (JAX's jax.vmap, eager): result[b] =
// f(args[b]) stacked along out_axes, where args[b] takes index b of each batched argument along
// its in_axes entry (that dimension removed) and passes unbatched arguments (nullopt) unchanged.
// It composes with the rest of spmd: inside a shard_map or pmap body it maps over that device's
// values, and collectives over mesh axes inside f run once per batch element, in batch order.
//
// Example:
//   auto f = spmd::vmap([](const spmd::Array& row) { return spmd::sum(row); });
//   spmd::Array totals = f(x);  // for x of shape (4, 3): the 4 row sums, shape (4,)
//
// Collectives over the batch axis: with VmapOptions::axis_name, f may name it like a mesh axis
// (psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute, pshuffle,
// pbroadcast, axis_index, axis_size), with the same semantics and messages:
//   auto normalize = spmd::vmap([](const spmd::Array& v) { return v / spmd::psum(v, "b"); },
//                               {0}, {0}, {.axis_name = "b"});
// How it runs: without axis_name, batch elements run one after another on the calling thread
// (a loop). With axis_name, every batch element runs on its own host thread so that they can
// meet in collectives (the device's collectives over its batch, through the backend's
// communicator); collectives over other axes (mesh axes, an enclosing vmap's axis) are taken in
// batch order, so every device runs them in the same order. Results do not depend on timing
// either way. A vmap with axis_name on a CUDA device raises NotImplementedError (the backend
// seam drives each device from one thread at a time). docs/user-guide.md, "vmap", has the
// measured costs.
//
// vmap of a shard_map (spmd::vmap(spmd::shard_map(...), ...)) is JAX's batching rule for
// shard_map: one call whose specs gain the batch dimension, split over
// VmapOptions::spmd_axis_name (replicated without it), and whose body is vmapped over each
// device's part of the batch. vmap of a pmap (spmd/pmap.h) is the same for pmap: one pmap whose
// mapped dimension steps over the batch dimension, with f vmapped on each device, so that f may
// name the vmap's axis as well as the pmap's.
//
// Differences from JAX, deliberate: out_axes nullopt accepts an output that is equal for every
// batch element (JAX decides by data dependence when it traces f; spmd runs f eagerly); a batch
// of size 0 is refused (f never runs, so its output shapes are unknown).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/array.h"
#include "spmd/shard_map.h"

namespace spmd {

struct VmapOptions {
  // The batch axis's name for collectives inside f (JAX's axis_name); empty: f may not name it,
  // and the batch elements run in a loop on the calling thread.
  std::string axis_name = "";
  // Mesh axes the batch dimension is split over when f is a shard_map (JAX's spmd_axis_name);
  // they must not appear in its specs. For other functions it places nothing and is ignored, as
  // in eager JAX.
  std::vector<std::string> spmd_axis_name = {};
  // Name of the mapped function in error messages; empty: derived from the callable's type.
  std::string name = "";
};

namespace internal {

// Everything vmap knows before it sees arguments.
struct VmapPlan {
  std::vector<std::optional<int>> in_axes;
  std::vector<std::optional<int>> out_axes;
  VmapOptions options;
  std::string fun_name;
};

// Runs the body once per batch element and stacks the outputs (the non-template part of vmap).
// `leaves` holds the Array leaves, `layout` where they come from; `num_outputs` as for
// run_shard_map.
std::vector<Array> run_vmap(const VmapPlan& plan, std::vector<Array> leaves,
                            const ArgLayout& layout, BodyRef body, int num_outputs);

// The shard_map plan of vmap(shard_map(...)): specs with the batch dimension inserted.
ShardMapPlan batch_shard_map_plan(const ShardMapPlan& plan, const VmapPlan& vmap);

}  // namespace internal

// The callable vmap returns. Call it with the arguments of f.
template <class F>
using Vmapped = internal::Mapped<F, internal::VmapPlan, &internal::run_vmap>;

namespace internal {
// Mapped callables with a batching rule of their own (an overload of vmap below, and one in
// spmd/pmap.h for Pmapped).
template <class F>
inline constexpr bool kHasBatchingRule = false;
template <class G>
inline constexpr bool kHasBatchingRule<ShardMapped<G>> = true;

template <class F>
internal::VmapPlan make_vmap_plan(std::vector<std::optional<int>> in_axes,
                                  std::vector<std::optional<int>> out_axes, VmapOptions options,
                                  const char* file, int line) {
  std::string name =
      options.name.empty() ? callable_name(typeid(std::decay_t<F>), file, line) : options.name;
  return VmapPlan{std::move(in_axes), std::move(out_axes), std::move(options), std::move(name)};
}
}  // namespace internal

// Maps f over the batch axis; see the file comment. in_axes: one entry for every Array argument,
// or one per Array argument (a std::vector<Array> / std::tuple argument's entry applies to each
// of its elements); nullopt passes the argument unbatched. out_axes: one entry for every output
// or one per output; negative axes count from the end. Checked when the mapped function is
// called, with JAX's messages.
template <class F, std::enable_if_t<!internal::kHasBatchingRule<std::decay_t<F>>, int> = 0>
Vmapped<std::decay_t<F>> vmap(F&& f, std::vector<std::optional<int>> in_axes = {0},
                              std::vector<std::optional<int>> out_axes = {0},
                              VmapOptions options = {}, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  internal::VmapPlan plan = internal::make_vmap_plan<F>(std::move(in_axes), std::move(out_axes),
                                                        std::move(options), file, line);
  return Vmapped<std::decay_t<F>>(std::forward<F>(f), std::move(plan));
}

// vmap of a shard_map: one shard_map call over the batch (see the file comment).
template <class G>
ShardMapped<Vmapped<G>> vmap(const ShardMapped<G>& f, std::vector<std::optional<int>> in_axes = {0},
                             std::vector<std::optional<int>> out_axes = {0},
                             VmapOptions options = {}, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  internal::VmapPlan plan = internal::make_vmap_plan<G>(std::move(in_axes), std::move(out_axes),
                                                        std::move(options), file, line);
  internal::ShardMapPlan batched = internal::batch_shard_map_plan(f.plan(), plan);
  return ShardMapped<Vmapped<G>>(Vmapped<G>(f.function(), std::move(plan)), std::move(batched));
}

}  // namespace spmd
