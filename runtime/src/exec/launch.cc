// SPDX-License-Identifier: Apache-2.0
// The launch path of mapped calls (launch.h).
#include "exec/launch.h"

#include <fmt/format.h>

#include <algorithm>

#include "array_impl.h"
#include "exec/executor.h"
#include "exec/processes.h"
#include "layout.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

// The state of one launch, on the heap: a body its caller stopped waiting for (see
// Executor::Owner::poll) may still use it. `body` lives on the caller's stack: a body reaches it
// only after CallContext::start says the call is alive, and by then the caller waits for it until
// the body enters user code (invoke_with_blocks reads what it needs of the caller's frame before
// begin_user_code marks that).
// When user code returns in a call abandoned meanwhile, leave_user_code throws the abort, so
// nothing of that frame is touched again.
struct Launch {
  Launch(CallSpec spec, DeviceBodyFn body_fn, void* body_object)
      : call(std::move(spec)), fn(body_fn), body(body_object), outputs(call.mesh().size()) {}
  CallContext call;
  DeviceBodyFn fn;
  void* body;
  DeviceOutputs outputs;
  Executor::Launch* executor = nullptr;
  // In a multi-process run, the mesh positions of this process's devices by launch index (each
  // process runs only its own devices' bodies); empty in one process, where they coincide.
  std::vector<int> ranks;
};

int rank_of(const Launch& launch, int index) {
  return launch.ranks.empty() ? index : launch.ranks[index];
}

int index_of(const Launch& launch, int rank) {
  if (launch.ranks.empty()) return rank;
  return static_cast<int>(std::find(launch.ranks.begin(), launch.ranks.end(), rank) -
                          launch.ranks.begin());
}

void run_device(void* arg, int index) {
  Launch& launch = *static_cast<Launch*>(arg);
  const int rank = rank_of(launch, index);
  if (!launch.call.start(rank)) return;
  const Mesh& mesh = launch.call.mesh();
  DeviceContext ctx;
  ctx.call = &launch.call;
  ctx.rank = rank;
  ctx.device = mesh.devices()[rank];
  ctx.bound = launch.call.manual_mask();
  ctx.track_vma = launch.call.check_vma();
  {
    DeviceScope scope(&ctx);
    try {
      launch.outputs[rank] = launch.fn(launch.body, ctx);
      launch.call.finish(rank);
    } catch (...) {
      if (!ctx.threw_abort) launch.call.fail(rank, std::current_exception());
    }
  }
  launch.call.done(rank);
}

Executor::Verdict poll(void* arg) {
  Launch& launch = *static_cast<Launch*>(arg);
  Settlement s = launch.call.settle();
  for (int& stuck : s.stuck) stuck = index_of(launch, stuck);  // mesh positions to launch indices
  return Executor::Verdict{s.abandon, std::move(s.stuck), std::move(s.why), s.until};
}

void device_lost(void* arg, int index, const std::string& why) {
  Launch& launch = *static_cast<Launch*>(arg);
  launch.call.lose(rank_of(launch, index), why);
}

constexpr Executor::Owner kOwner{&run_device, &poll, &device_lost};

}  // namespace

DeviceOutputs launch_erased(const CallSpec& spec, DeviceBodyFn fn, void* body) {
  // The launch keeps its own copy of the spec: a quarantined body may outlive the caller.
  auto launch = std::make_shared<Launch>(spec, fn, body);
  launch->call.set_listener(
      {.aborted = [](void* l) { Executor::wake(static_cast<Launch*>(l)->executor); },
       .waits = [](void* l) { Executor::body_waits(static_cast<Launch*>(l)->executor); },
       .stalled = [](void* l) { Executor::rewake(static_cast<Launch*>(l)->executor); },
       .arg = launch.get()});
  const Mesh& mesh = launch->call.mesh();
  const std::vector<Device>* run_on = &mesh.devices();
  std::vector<Device> local;
  if (process_layout().count > 1) {
    for (int r = 0; r < mesh.size(); ++r) {
      if (!is_addressable(mesh.devices()[r])) continue;
      local.push_back(mesh.devices()[r]);
      launch->ranks.push_back(r);
    }
    if (local.empty()) {
      throw NotImplementedError(fmt::format(
          "'{}' maps over {}, none of whose devices belongs to process {}; in a multi-process "
          "run every process must own at least one device of the mesh (build it from "
          "spmd::devices()).",
          launch->call.fun_name(), mesh.str(), process_layout().index));
    }
    run_on = &local;
  }
  Executor::instance().run(*run_on, kOwner, launch.get(), launch, &launch->executor, spec.site);
  if (std::exception_ptr error = launch->call.take_error()) std::rethrow_exception(error);
  launch->call.return_communicators();
  DeviceOutputs& outputs = launch->outputs;
  const int first = rank_of(*launch, 0);
  const size_t count = outputs[first].size();
  for (int i = 1; i < static_cast<int>(run_on->size()); ++i) {
    const int r = rank_of(*launch, i);
    if (outputs[r].size() != count) {
      throw ValueError(fmt::format(
          "the body of '{}' returned {} outputs on {} but {} on {}; every device must return the "
          "same number of outputs.",
          launch->call.fun_name(), count, mesh.devices()[first].str(), outputs[r].size(),
          mesh.devices()[r].str()));
    }
  }
  // Other processes' devices ran the same program: they stand in with this process's first
  // blocks for the type checks, and assemble() leaves their shards non-addressable.
  if (!launch->ranks.empty()) {
    for (int r = 0; r < mesh.size(); ++r) {
      if (!is_addressable(mesh.devices()[r])) outputs[r] = outputs[first];
    }
  }
  return std::move(outputs);
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
    if (!is_addressable(device)) {
      shards.push_back(
          ShardData{device, block_index(mesh, out_spec, global, r), block_shape, nullptr, 0});
      continue;
    }
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
