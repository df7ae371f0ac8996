// The native legacy pmap (JAX <= 0.7.2 semantics), library spmd::pmap_legacy_impl.
//
// It launches the body on the devices directly (not through shard_map): device d receives slice d
// of every mapped argument with the mapped axis removed, and the outputs are stacked from the
// devices' results. It shares the call machinery (executor, collectives, fault handling) and the
// argument checks with the compat shim, so that the two differ only in how blocks are formed and
// results assembled, which is what the side-by-side tests compare.
#include <fmt/format.h>

#include "array_impl.h"
#include "exec/executor.h"
#include "layout.h"
#include "pmap/pmap_common.h"
#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd::legacy {
namespace {

using internal::BodyRef;
using internal::CallContext;
using internal::DeviceContext;
using internal::PmapLevel;
using internal::PmapPlan;

struct Launch {
  const PmapPlan* plan;
  const std::vector<spmd::Array>* args;
  const std::vector<std::optional<int>>* in_axes;
  BodyRef body;
  CallContext* call;
  std::vector<std::vector<spmd::Array>> outputs;
};

void run_device(void* arg, int rank) {
  Launch& launch = *static_cast<Launch*>(arg);
  const Mesh& mesh = launch.call->mesh();
  DeviceContext ctx;
  ctx.call = launch.call;
  ctx.rank = rank;
  ctx.device = mesh.devices()[rank];
  ctx.coords = mesh.coords(rank);
  internal::DeviceScope scope(&ctx);
  try {
    internal::pmap::LevelScope level(0);
    const int64_t index = ctx.coords[0];
    std::vector<spmd::Array> blocks;
    for (size_t i = 0; i < launch.args->size(); ++i) {
      const std::optional<int>& k = (*launch.in_axes)[i];
      blocks.push_back(k ? take((*launch.args)[i], index, *k) : (*launch.args)[i]);
    }
    launch.outputs[rank] = launch.body.call(launch.body.object, blocks);
    launch.call->finish(rank);
  } catch (...) {
    if (!ctx.threw_abort) launch.call->fail(rank, std::current_exception());
  }
}

// Stacks output `o` of every device along its out_axis (or takes device 0's for nullopt).
spmd::Array stack_output(const PmapPlan& plan, const Mesh& mesh,
                         const std::vector<std::vector<spmd::Array>>& outputs, size_t o,
                         std::optional<int> out_axis) {
  const spmd::Array& first = outputs[0][o];
  for (int64_t r = 1; r < mesh.size(); ++r) {
    const spmd::Array& other = outputs[r][o];
    if (other.shape() != first.shape() || other.dtype() != first.dtype()) {
      throw ValueError(fmt::format(
          "the body of '{}' returned different types for output {} on different devices: {} on "
          "{} and {} on {}; pmap stacks equal shapes only.",
          plan.fun_name, o, type_string(first.dtype(), first.shape()), mesh.devices()[0].str(),
          type_string(other.dtype(), other.shape()), mesh.devices()[r].str()));
    }
  }
  PartitionSpec spec = internal::axis_spec(out_axis, plan.axis_name);
  Shape block = first.shape();
  if (out_axis) block.insert(block.begin() + *out_axis, 1);
  Shape global = block;
  if (out_axis) global[*out_axis] = mesh.axis_sizes()[0];
  std::vector<internal::ShardData> shards;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const Device& device = mesh.devices()[r];
    spmd::Array local = outputs[r][o];
    if (!internal::is_local(local, device)) {
      local = internal::read_region(local, internal::full_index(local.shape()), device);
    }
    const internal::ShardData& s = internal::single_shard(local);
    shards.push_back(internal::ShardData{device, internal::block_index(mesh, spec, global, r),
                                         block, s.buffer, s.offset});
  }
  return internal::make_sharded_array(first.dtype(), global, NamedSharding(mesh, spec),
                                      std::move(shards));
}

std::vector<spmd::Array> execute(const PmapPlan& plan, const std::vector<spmd::Array>& args,
                                 const std::vector<std::optional<int>>& in_axes, BodyRef body,
                                 const std::vector<PmapLevel>& levels, bool probing,
                                 internal::PmapCache& cache) {
  std::vector<Device> devices = internal::pmap::select_devices(plan, levels, probing);
  Mesh mesh = internal::pmap::level_mesh(devices, levels, cache);
  CallContext call(mesh, /*manual_mask=*/0, /*check_vma=*/false, collective_timeout_s(),
                   plan.fun_name);
  Launch launch{&plan, &args, &in_axes, body, &call, {}};
  launch.outputs.resize(mesh.size());
  internal::Executor::instance().run(mesh.devices(), &run_device, &launch);
  if (std::exception_ptr error = call.error()) std::rethrow_exception(error);

  size_t count = launch.outputs[0].size();
  for (const std::vector<spmd::Array>& outs : launch.outputs) {
    if (outs.size() != count) {
      throw ValueError(
          fmt::format("the body of '{}' returned different numbers of outputs on different devices",
                      plan.fun_name));
    }
  }
  std::vector<std::optional<int>> out_axes =
      internal::pmap::resolve_out_axes(plan, launch.outputs[0]);
  std::vector<spmd::Array> results;
  for (size_t o = 0; o < count; ++o) {
    results.push_back(stack_output(plan, mesh, launch.outputs, o, out_axes[o]));
  }
  return results;
}

}  // namespace

std::vector<spmd::Array> run_pmap(const PmapPlan& plan, const std::vector<spmd::Array>& args,
                                  std::span<const int> arg_positions, BodyRef body,
                                  int /*num_outputs: counted when the body returns*/,
                                  internal::PmapCache& cache) {
  return internal::pmap::run(
      plan, args, arg_positions, body, cache,
      [&](const std::vector<std::optional<int>>& in_axes, const std::vector<PmapLevel>& levels,
          bool probing) { return execute(plan, args, in_axes, body, levels, probing, cache); });
}

}  // namespace spmd::legacy
