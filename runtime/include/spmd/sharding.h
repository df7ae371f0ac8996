// SPDX-License-Identifier: Apache-2.0
// File: spmd/sharding.h
//
// How an array's elements are laid out over devices.
//
// NamedSharding(mesh, spec) splits each dimension over the mesh axes its PartitionSpec entry names
// (mixed radix, first name most significant) and replicates over the mesh axes the spec leaves
// out. Every mesh device holds one shard; devices that differ only in unmentioned axes hold equal
// index ranges. A Sharding is either a NamedSharding or a single device (where host-created arrays
// live, like JAX's SingleDeviceSharding).
//
// Example:
//   spmd::NamedSharding s(spmd::make_mesh({4}, {"i"}), spmd::P("i"));
//   s.shard_shape({8, 3});               // {2, 3}
//   s.device_indices({8, 3})[1];         // {{2, 4}, {0, 3}}: rows 2..3 on the mesh's device 1
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spmd/device.h"
#include "spmd/dtype.h"
#include "spmd/format.h"
#include "spmd/mesh.h"
#include "spmd/partition_spec.h"

namespace spmd {

// Per-dimension half-open ranges [start, stop) of a shard inside its global array.
using Index = std::vector<std::pair<int64_t, int64_t>>;

class NamedSharding {
 public:
  // Throws ValueError when the spec names an axis the mesh lacks or names an axis twice
  // ("A single NamedSharding spec specification can map every mesh axis to at most one
  // positional dimension, but P('x', 'x') has duplicate entries for `x`").
  NamedSharding(Mesh mesh, PartitionSpec spec);

  const Mesh& mesh() const { return mesh_; }
  const PartitionSpec& spec() const { return spec_; }

  // Shape of every shard of an array of `global_shape`. ValueError when the spec is longer than
  // the rank, a split dimension is not divisible or the shape is not a valid shape.
  Shape shard_shape(const Shape& global_shape) const;
  // The index of each mesh device's shard, in mesh (row-major) order.
  std::vector<Index> device_indices(const Shape& global_shape) const;

  // "NamedSharding(mesh=Mesh('i': 4), spec=P('i',))".
  std::string str() const;
  bool operator==(const NamedSharding& o) const { return mesh_ == o.mesh_ && spec_ == o.spec_; }

 private:
  Mesh mesh_;
  PartitionSpec spec_;
};

class Sharding {
 public:
  explicit Sharding(Device device) : device_(device) {}
  explicit Sharding(NamedSharding named) : named_(std::move(named)) {}

  bool is_named() const { return named_.has_value(); }
  // The NamedSharding; TypeError for a single-device sharding (check is_named() first).
  const NamedSharding& named() const;
  // Every device that holds a shard, in mesh order.
  std::vector<Device> devices() const;
  std::string str() const;  // "SingleDeviceSharding(cpu:0)" or the NamedSharding form
  bool operator==(const Sharding& o) const = default;

 private:
  std::optional<NamedSharding> named_;
  Device device_;
};

// Print str().
std::ostream& operator<<(std::ostream& os, const NamedSharding& sharding);
std::ostream& operator<<(std::ostream& os, const Sharding& sharding);

}  // namespace spmd

template <>
struct fmt::formatter<spmd::NamedSharding> : spmd::internal::StrFormatter<spmd::NamedSharding> {};
template <>
struct fmt::formatter<spmd::Sharding> : spmd::internal::StrFormatter<spmd::Sharding> {};
