// The launch path of mapped calls (launch.h).
#include "exec/launch.h"

#include <fmt/format.h>

#include "array_impl.h"
#include "exec/executor.h"
#include "layout.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

struct Launch {
  CallContext* call;
  DeviceBodyFn fn;
  void* body;
  DeviceOutputs outputs;
};

void run_device(void* arg, int rank) {
  Launch& launch = *static_cast<Launch*>(arg);
  const Mesh& mesh = launch.call->mesh();
  DeviceContext ctx;
  ctx.call = launch.call;
  ctx.rank = rank;
  ctx.device = mesh.devices()[rank];
  ctx.coords = mesh.coords(rank);
  ctx.bound = launch.call->manual_mask();
  DeviceScope scope(&ctx);
  try {
    launch.outputs[rank] = launch.fn(launch.body, ctx);
    launch.call->finish(rank);
  } catch (...) {
    if (!ctx.threw_abort) launch.call->fail(rank, std::current_exception());
  }
}

}  // namespace

DeviceOutputs launch_erased(const CallSpec& spec, DeviceBodyFn fn, void* body) {
  CallContext call(spec);
  const Mesh& mesh = call.mesh();
  Launch launch{&call, fn, body, DeviceOutputs(mesh.size())};
  Executor::instance().run(mesh.devices(), &run_device, &launch);
  if (std::exception_ptr error = call.error()) std::rethrow_exception(error);
  const size_t count = launch.outputs[0].size();
  for (int64_t r = 1; r < mesh.size(); ++r) {
    if (launch.outputs[r].size() != count) {
      throw ValueError(fmt::format(
          "the body of '{}' returned {} outputs on {} but {} on {}; every device must return the "
          "same number of outputs.",
          call.fun_name(), count, mesh.devices()[0].str(), launch.outputs[r].size(),
          mesh.devices()[r].str()));
    }
  }
  return std::move(launch.outputs);
}

void check_same_types(const CallSpec& spec, const DeviceOutputs& outputs, size_t j) {
  const Array& first = outputs[0][j];
  for (size_t r = 1; r < outputs.size(); ++r) {
    const Array& block = outputs[r][j];
    if (block.shape() == first.shape() && block.dtype() == first.dtype()) continue;
    throw ValueError(fmt::format(
        "the body of '{}' returned blocks of different types for output {}: {} returned {} and "
        "{} returned {}. Every device must return the same dtype and shape (the body is one SPMD "
        "program).",
        spec.fun_name, j, spec.mesh.devices()[0].str(), long_type(first),
        spec.mesh.devices()[r].str(), long_type(block)));
  }
}

Array assemble(const CallSpec& spec, const PartitionSpec& out_spec, const Shape& global,
               const Shape& block_shape, const DeviceOutputs& outputs, size_t j) {
  check_same_types(spec, outputs, j);
  const Mesh& mesh = spec.mesh;
  std::vector<ShardData> shards;
  shards.reserve(mesh.size());
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const Device& device = mesh.devices()[r];
    Array block = outputs[r][j];
    if (!is_local(block, device)) block = read_region(block, full_index(block.shape()), device);
    const ShardData& s = single_shard(block);
    shards.push_back(
        ShardData{device, block_index(mesh, out_spec, global, r), block_shape, s.buffer, s.offset});
  }
  return make_sharded_array(outputs[0][j].dtype(), global, NamedSharding(mesh, out_spec),
                            std::move(shards));
}

}  // namespace spmd::internal
