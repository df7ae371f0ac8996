// SPDX-License-Identifier: Apache-2.0
// The native legacy pmap (JAX <= 0.7.2 semantics), library spmd::pmap_legacy_impl.
//
// It launches the body on the devices directly (not through shard_map): device d receives slice d
// of every mapped argument with the mapped axis removed, and the outputs are stacked from the
// devices' results. In a multi-process run each process passes and gets the slices of its own
// devices (the mapped axis spans every process's devices, so collectives do too). It shares the
// launch path (exec/launch.h: call state, collectives, fault handling, assembly) and the argument
// checks with the compat shim, so that the two differ only in how blocks are formed and results
// assembled, which is what the side-by-side tests compare.
#include "array_impl.h"
#include "exec/launch.h"
#include "layout.h"
#include "pmap/pmap_common.h"
#include "spmd/make_array.h"
#include "spmd/ops.h"

namespace spmd::legacy {
namespace {

using internal::ArgLayout;
using internal::BodyRef;
using internal::CallSpec;
using internal::DeviceContext;
using internal::DeviceOutputs;
using internal::PmapLevel;
using internal::PmapPlan;

// Stacks output `o` of every device along its out_axis (or takes device 0's for nullopt).
spmd::Array stack_output(const CallSpec& call, const DeviceOutputs& outputs, size_t o,
                         std::optional<int> out_axis) {
  const spmd::Array& first = outputs[0][o];
  PartitionSpec spec = internal::axis_spec(out_axis, call.mesh.axis_names()[0]);
  Shape block = first.shape();
  if (out_axis) block.insert(block.begin() + *out_axis, 1);
  Shape global = block;
  if (out_axis) global[*out_axis] = call.mesh.axis_sizes()[0];
  spmd::Array stacked = internal::assemble(call, spec, global, block, outputs, o);
  // In a multi-process run each process gets the part of its own devices, as legacy JAX did.
  if (process_count() > 1) return global_array_to_host_local_array(stacked, call.mesh, spec);
  return stacked;
}

std::vector<spmd::Array> execute(const PmapPlan& plan, const std::vector<spmd::Array>& args,
                                 const std::vector<std::optional<int>>& in_axes,
                                 const std::vector<PmapLevel>& levels, BodyRef body, bool probing,
                                 internal::PmapCache& cache) {
  std::vector<Device> devices = internal::pmap::select_devices(plan, levels, probing);
  CallSpec call{internal::pmap::level_mesh(devices, levels, cache),
                /*manual_mask=*/0,
                /*check_vma=*/false,
                collective_timeout_s(),
                plan.fun_name,
                /*discovers_nest=*/false,
                reinterpret_cast<const void*>(body.call)};
  DeviceOutputs outputs = internal::launch(call, [&](DeviceContext& ctx) {
    internal::pmap::LevelScope level(0);
    const int64_t index = internal::pmap::local_coord(ctx.call->mesh(), ctx.rank);
    std::vector<spmd::Array> blocks;
    for (size_t i = 0; i < args.size(); ++i) {
      blocks.push_back(in_axes[i] ? take(args[i], index, *in_axes[i]) : args[i]);
    }
    return internal::call_body(body, blocks);
  });
  std::vector<std::optional<int>> out_axes = internal::pmap::resolve_out_axes(plan, outputs[0]);
  std::vector<spmd::Array> results;
  for (size_t o = 0; o < out_axes.size(); ++o) {
    results.push_back(stack_output(call, outputs, o, out_axes[o]));
  }
  return results;
}

}  // namespace

std::vector<spmd::Array> run_pmap(const PmapPlan& plan, const std::vector<spmd::Array>& args,
                                  const ArgLayout& layout, BodyRef body,
                                  int /*num_outputs: counted when the body returns*/,
                                  internal::PmapCache& cache) {
  return internal::pmap::run(
      plan, args, layout, body, cache,
      [&](const std::vector<std::optional<int>>& in_axes, const std::vector<PmapLevel>& levels,
          bool probing) { return execute(plan, args, in_axes, levels, body, probing, cache); });
}

}  // namespace spmd::legacy
