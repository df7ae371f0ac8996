// SPDX-License-Identifier: Apache-2.0
// Internal: the arithmetic of PartitionSpecs over a mesh (JAX's block formation: the block of a
// device is, per dimension, the slice its coordinates along the entry's axes select, first name
// most significant), shared by NamedSharding, device_put and shard_map.
#pragma once

#include <cstdint>
#include <vector>

#include "spmd/mesh.h"
#include "spmd/partition_spec.h"
#include "spmd/sharding.h"

namespace spmd::internal {

// The product of the sizes of the axes an entry names (1 for None).
int64_t entry_size(const Mesh& mesh, const PartitionSpec::Entry& entry);
// The coordinate along mesh axis `axis` of the device at row-major mesh position `linear`
// (Mesh::coords without the vector: this runs per device on every call).
int64_t coord_along(const Mesh& mesh, int64_t linear, int axis);
// The shape of one block (extents already known to divide).
Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
// The index range of the block held by the device at mesh position `linear`.
Index block_index(const Mesh& mesh, const PartitionSpec& spec, const Shape& global, int64_t linear);
// ValueError unless every axis `spec` names is in `mesh` and none repeats.
void check_spec_axes(const Mesh& mesh, const PartitionSpec& spec);

}  // namespace spmd::internal
