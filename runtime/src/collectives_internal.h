// SPDX-License-Identifier: Apache-2.0
// Internal collectives that are not part of JAX's API.
#pragma once

#include "spmd/collectives.h"
#include "spmd/partition_spec.h"

namespace spmd::internal {

// An empty collective over `axes`: returns once every device of the group has arrived. The
// benchmarks' synchronisation-floor reference.
void barrier(const AxisNames& axes);

// The whole value that this device's `block` is the block of under `spec`: tiled all_gathers over
// the axes of every dimension the spec splits (a nested shard_map's outputs, process_allgather).
Array gather_blocks(const Array& block, const PartitionSpec& spec);

}  // namespace spmd::internal
