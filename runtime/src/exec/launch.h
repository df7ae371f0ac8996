// SPDX-License-Identifier: Apache-2.0
// Internal: the one launch path of every mapped call (shard_map, the legacy pmap and, through
// shard_map, the compat shim). It owns the call state (CallContext), dispatches one body per
// device onto the executor, propagates faults (the first error of the call is rethrown to the
// caller), checks what the bodies returned, and assembles output blocks into global arrays.
// Launching only the devices a process owns (multi-process runs) belongs here.
#pragma once

#include <vector>

#include "exec/call_context.h"
#include "spmd/array.h"

namespace spmd::internal {

// What each device's body returned, by mesh position.
using DeviceOutputs = std::vector<std::vector<Array>>;

// Runs `body(ctx)` on every device of spec.mesh, concurrently, each with its DeviceContext
// installed (ctx.bound = spec.manual_mask); returns the outputs once every body has returned,
// after checking that every device returned as many outputs. Rethrows the call's first error.
template <class Body>
DeviceOutputs launch(const CallSpec& spec, Body&& body);

// Builds output `j` from every device's block: the block of mesh position r becomes the shard at
// block_index(mesh, spec, global, r), with shape `block_shape` (the block's own shape, or a
// reshape of it with the same elements), copied to its device when it lives elsewhere. ValueError
// when devices returned different dtypes or shapes.
Array assemble(const CallSpec& spec, const PartitionSpec& out_spec, const Shape& global,
               const Shape& block_shape, const DeviceOutputs& outputs, size_t j);

// ValueError unless every device returned output `j` with the dtype and shape of device 0's.
void check_same_types(const CallSpec& spec, const DeviceOutputs& outputs, size_t j);

// ---- implementation ----

using DeviceBodyFn = std::vector<Array> (*)(void* body, DeviceContext& ctx);
DeviceOutputs launch_erased(const CallSpec& spec, DeviceBodyFn fn, void* body);

template <class Body>
DeviceOutputs launch(const CallSpec& spec, Body&& body) {
  using B = std::remove_reference_t<Body>;
  return launch_erased(
      spec, [](void* b, DeviceContext& ctx) { return (*static_cast<B*>(b))(ctx); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace spmd::internal
