// SPDX-License-Identifier: Apache-2.0
// Internal: this thread's context mesh for shard_map's launch path, without copying it (a Mesh copy
// or a default Mesh costs an atomic or an allocation on every call; spmd/mesh_context.h).
#pragma once

#include "spmd/mesh.h"

namespace spmd::internal {

// The mesh spmd::use_mesh / spmd::set_mesh made current on this thread, or null when none.
const Mesh* thread_context_mesh();

}  // namespace spmd::internal
