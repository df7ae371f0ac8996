// SPDX-License-Identifier: Apache-2.0
// Internal: this thread's context mesh for shard_map's launch path, without copying it (a Mesh copy
// or a default Mesh costs an atomic or an allocation on every call; spmd/mesh_context.h).
#pragma once

#include "spmd/mesh.h"
#include "spmd/mesh_context.h"

namespace spmd::internal {

// The mesh spmd::use_mesh / spmd::set_mesh made current on this thread, or null when none.
const Mesh* thread_context_mesh();

// While spmd::PmapNest runs a level on this thread: `mesh` is the context mesh, and the calls
// started here let inner levels discover axes their mesh lacks (thread_discovers_nest).
class NestScope {
 public:
  explicit NestScope(Mesh mesh);
  ~NestScope();
  NestScope(const NestScope&) = delete;
  NestScope& operator=(const NestScope&) = delete;

 private:
  MeshScope mesh_;
  bool previous_;
};

// Whether a NestScope is active on this thread.
bool thread_discovers_nest();

}  // namespace spmd::internal
