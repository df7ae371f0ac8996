// SPDX-License-Identifier: Apache-2.0
// The context mesh (spmd/mesh_context.h): a per-thread Mesh outside bodies, the call's mesh inside.
#include "spmd/mesh_context.h"

#include <fmt/format.h>

#include "exec/call_context.h"
#include "mesh_context_internal.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

// This thread's context mesh outside mapped bodies, and whether it is set: a plain flag, so that
// calls on a thread that never set one do not construct the Mesh (thread_context_mesh).
thread_local bool has_thread_mesh = false;

Mesh& thread_mesh() {
  thread_local Mesh mesh;
  return mesh;
}

void set_thread_mesh(Mesh mesh) {
  has_thread_mesh = !mesh.empty();
  thread_mesh() = std::move(mesh);
}

void check_outside_body(const char* api) {
  internal::DeviceContext* ctx = internal::current_device_context();
  if (ctx == nullptr) return;
  throw ValueError(fmt::format(
      "spmd::{} can only be used outside of a shard_map or pmap body: inside the body of '{}' the "
      "context mesh is {}, the call's mesh with its manual axes. Nest a shard_map without a mesh "
      "to map over the axes still automatic there.",
      api, ctx->call->fun_name(), get_abstract_mesh().str()));
}

}  // namespace

AbstractMesh::AbstractMesh(const Mesh& mesh, uint64_t manual)
    : sizes_(mesh.axis_sizes()), names_(mesh.axis_names()), manual_(manual) {}

std::vector<std::string> AbstractMesh::manual_axes() const {
  std::vector<std::string> out;
  for (size_t a = 0; a < names_.size(); ++a) {
    if (manual_ >> a & 1) out.push_back(names_[a]);
  }
  return out;
}

std::vector<std::string> AbstractMesh::auto_axes() const {
  std::vector<std::string> out;
  for (size_t a = 0; a < names_.size(); ++a) {
    if (!(manual_ >> a & 1)) out.push_back(names_[a]);
  }
  return out;
}

std::string AbstractMesh::str() const {
  if (empty()) return "AbstractMesh((), axis_types=())";
  std::string axes;
  std::string types;
  for (size_t a = 0; a < names_.size(); ++a) {
    axes += fmt::format("{}'{}': {}", a ? ", " : "", names_[a], sizes_[a]);
    types += fmt::format("{}{}", a ? ", " : "", manual_ >> a & 1 ? "Manual" : "Auto");
  }
  return fmt::format("AbstractMesh({}, axis_types=({}{}))", axes, types,
                     names_.size() == 1 ? "," : "");
}

MeshScope::MeshScope(Mesh mesh) : previous_(thread_mesh()) {
  check_outside_body("use_mesh");
  set_thread_mesh(std::move(mesh));
}

MeshScope::~MeshScope() { set_thread_mesh(std::move(previous_)); }

MeshScope use_mesh(Mesh mesh) { return MeshScope(std::move(mesh)); }

void set_mesh(Mesh mesh) {
  check_outside_body("set_mesh");
  set_thread_mesh(std::move(mesh));
}

Mesh get_mesh() {
  internal::DeviceContext* ctx = internal::current_device_context();
  return ctx != nullptr ? ctx->call->mesh() : thread_mesh();
}

AbstractMesh get_abstract_mesh() {
  internal::DeviceContext* ctx = internal::current_device_context();
  if (ctx == nullptr) return AbstractMesh(thread_mesh(), 0);
  return AbstractMesh(ctx->call->mesh(), ctx->bound);
}

namespace internal {

const Mesh* thread_context_mesh() { return has_thread_mesh ? &thread_mesh() : nullptr; }

namespace {
thread_local bool discovers_nest = false;
}  // namespace

NestScope::NestScope(Mesh mesh) : mesh_(std::move(mesh)), previous_(discovers_nest) {
  discovers_nest = true;
}

NestScope::~NestScope() { discovers_nest = previous_; }

bool thread_discovers_nest() { return discovers_nest; }

}  // namespace internal
}  // namespace spmd
