// SPDX-License-Identifier: Apache-2.0
// File: spmd/mesh_context.h
//
// The context mesh (JAX's jax.set_mesh): the mesh that shard_map and smap use when they are given
// none. Outside mapped bodies it is per host thread: spmd::use_mesh(mesh) sets it for a scope,
// spmd::set_mesh(mesh) until changed. Inside a shard_map body it is the call's mesh with the
// call's manual axes marked Manual, so that a shard_map there without a mesh maps over the axes
// still automatic (JAX's partial-manual nesting):
//
//   spmd::Mesh mesh = spmd::make_mesh({2, 4}, {"i", "j"});
//   auto scope = spmd::use_mesh(mesh);
//   auto inner = [](const spmd::Array& b) { return spmd::psum(b, {"i", "j"}); };
//   auto outer = [&](const spmd::Array& x) {
//     // the context is AbstractMesh('i': 2, 'j': 4, axis_types=(Manual, Auto))
//     return spmd::shard_map(inner, spmd::P("j"), spmd::P())(x);
//   };
//   spmd::shard_map(outer, spmd::P("i"), spmd::P(), {.axis_names = {"i"}})(x);
//
// The rules are JAX's: a mesh given to shard_map must match a non-empty context mesh (its axis
// names, sizes and types; so a mesh given inside a body, where some axes are Manual, never does);
// with no mesh and an empty context, shard_map raises "The context mesh cannot be empty". pmap,
// legacy and compat alike, maps over its own devices whatever the context mesh (pmap predates
// it), and neither pmap nor shard_map may be called inside a pmap body with a different mesh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spmd/format.h"
#include "spmd/mesh.h"

namespace spmd {

// A mesh's axis names and sizes and whether each axis is Manual (inside a shard_map body that
// maps over it) or Auto (JAX's AbstractMesh; spmd has no Explicit axes).
class AbstractMesh {
 public:
  // The empty mesh: no context.
  AbstractMesh() = default;
  // `mesh` with the axes in the bit mask `manual` (bit a: axis a) marked Manual.
  AbstractMesh(const Mesh& mesh, uint64_t manual);

  bool empty() const { return names_.empty(); }
  const Shape& axis_sizes() const { return sizes_; }
  const std::vector<std::string>& axis_names() const { return names_; }
  // The Manual and the Auto axes, in mesh order.
  std::vector<std::string> manual_axes() const;
  std::vector<std::string> auto_axes() const;
  // "AbstractMesh('i': 2, 'j': 4, axis_types=(Manual, Auto))".
  std::string str() const;

  bool operator==(const AbstractMesh& other) const = default;

 private:
  Shape sizes_;
  std::vector<std::string> names_;
  uint64_t manual_ = 0;
};

// Restores the context mesh it replaced when it goes out of scope (see use_mesh).
class [[nodiscard]] MeshScope {
 public:
  explicit MeshScope(Mesh mesh);
  ~MeshScope();
  MeshScope(const MeshScope&) = delete;
  MeshScope& operator=(const MeshScope&) = delete;

 private:
  Mesh previous_;
};

// Makes `mesh` this thread's context mesh until the returned scope ends (`with jax.set_mesh(m):`).
// ValueError inside a mapped body, whose context is its call's mesh.
MeshScope use_mesh(Mesh mesh);

// Makes `mesh` this thread's context mesh until changed (bare `jax.set_mesh(m)`); an empty Mesh()
// clears it. ValueError inside a mapped body.
void set_mesh(Mesh mesh);

// The context mesh: this thread's, or inside a mapped body the call's mesh. Empty when none.
Mesh get_mesh();

// The context mesh with its axis types: inside a shard_map body the axes manual there are Manual.
AbstractMesh get_abstract_mesh();

}  // namespace spmd

template <>
struct fmt::formatter<spmd::AbstractMesh> : spmd::internal::StrFormatter<spmd::AbstractMesh> {};
