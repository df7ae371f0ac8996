// SPDX-License-Identifier: Apache-2.0
// File: spmd/mesh.h
//
// A Mesh arranges devices in an n-dimensional grid with one name per axis (JAX's
// jax.sharding.Mesh). The device at mesh coordinates (c_0, ..., c_{k-1}) is devices()[linear]
// where linear is the row-major flattening of the coordinates.
//
// Example:
//   spmd::Mesh mesh = spmd::make_mesh({4, 2}, {"data", "model"});
//   mesh.axis_size("model");  // 2
//   mesh.str();               // "Mesh('data': 4, 'model': 2)"
//
// Meshes are immutable values, cheap to copy; equal when devices, sizes and names are equal.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmd/device.h"
#include "spmd/dtype.h"
#include "spmd/format.h"

namespace spmd {

class Mesh {
 public:
  // The empty mesh (no devices, no axes). shard_map rejects it.
  Mesh();
  // `devices` in row-major order over `axis_sizes`. Throws ValueError when the counts disagree,
  // an axis size is not positive (or the sizes multiply past int64), an axis name repeats or is
  // empty, or a device repeats or is not a device of this runtime (an id past the platform's
  // device count, a platform not in use).
  Mesh(std::vector<Device> devices, Shape axis_sizes, std::vector<std::string> axis_names);

  const std::vector<Device>& devices() const;
  const Shape& axis_sizes() const;
  const std::vector<std::string>& axis_names() const;
  // Ordered (name, size) pairs, like JAX's mesh.shape.
  std::vector<std::pair<std::string, int64_t>> shape() const;
  int ndim() const;
  int64_t size() const;  // number of devices
  bool empty() const;

  // Index of the axis called `name`, or -1.
  int axis_index(std::string_view name) const;
  // Size of axis `name`; ValueError if the mesh has no such axis.
  int64_t axis_size(std::string_view name) const;

  // Row-major coordinates of the device at linear position `linear`, and back. IndexError for a
  // position or coordinates outside the mesh.
  std::vector<int64_t> coords(int64_t linear) const;
  int64_t linear_index(const std::vector<int64_t>& coords) const;
  // Linear position of `device` in this mesh, or -1.
  int64_t position_of(const Device& device) const;

  // "Mesh('data': 4, 'model': 2)".
  std::string str() const;
  // "(4, 2)" and "('data', 'model')": the forms JAX's error messages print.
  std::string sizes_str() const;
  std::string names_str() const;

  bool operator==(const Mesh& other) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};
// Prints mesh.str().
std::ostream& operator<<(std::ostream& os, const Mesh& mesh);

// The first prod(axis_sizes) devices of `devices` (default: spmd::devices()) reshaped row-major.
// Throws ValueError "Number of devices {n} must be >= the product of mesh_shape {sizes}", and the
// Mesh constructor's errors.
Mesh make_mesh(Shape axis_sizes, std::vector<std::string> axis_names,
               std::optional<std::vector<Device>> devices = std::nullopt);

}  // namespace spmd

template <>
struct fmt::formatter<spmd::Mesh> : spmd::internal::StrFormatter<spmd::Mesh> {};
