// SPDX-License-Identifier: Apache-2.0
// NamedSharding, Sharding and the spec arithmetic of layout.h.
#include "spmd/sharding.h"

#include <fmt/format.h>

#include <set>

#include "checks.h"
#include "layout.h"
#include "spmd/errors.h"

namespace spmd {
namespace internal {

int64_t entry_size(const Mesh& mesh, const PartitionSpec::Entry& entry) {
  int64_t m = 1;
  for (const std::string& name : entry.names()) m *= mesh.axis_sizes()[mesh.axis_index(name)];
  return m;
}

int64_t entry_block(const Mesh& mesh, const PartitionSpec::Entry& entry,
                    const std::vector<int64_t>& coords) {
  int64_t k = 0;
  for (const std::string& name : entry.names()) {
    int a = mesh.axis_index(name);
    k = k * mesh.axis_sizes()[a] + coords[a];
  }
  return k;
}

Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  Shape block = global;
  for (size_t d = 0; d < spec.size() && d < block.size(); ++d) {
    block[d] /= entry_size(mesh, spec[d]);
  }
  return block;
}

Index block_index(const Mesh& mesh, const PartitionSpec& spec, const Shape& global,
                  int64_t linear) {
  std::vector<int64_t> coords = mesh.coords(linear);
  Index index(global.size());
  for (size_t d = 0; d < global.size(); ++d) {
    if (d >= spec.size() || spec[d].is_none()) {
      index[d] = {0, global[d]};
      continue;
    }
    int64_t b = global[d] / entry_size(mesh, spec[d]);
    int64_t k = entry_block(mesh, spec[d], coords);
    index[d] = {k * b, (k + 1) * b};
  }
  return index;
}

void check_spec_axes(const Mesh& mesh, const PartitionSpec& spec) {
  std::set<std::string> seen;
  for (const std::string& name : spec.axis_names()) {
    if (mesh.axis_index(name) < 0) {
      throw ValueError(fmt::format("Resource axis: {} of {} is not found in mesh: {}.", name,
                                   spec.str(), mesh.names_str()));
    }
    if (!seen.insert(name).second) {
      throw ValueError(fmt::format(
          "A single NamedSharding spec specification can map every mesh axis to at most one "
          "positional dimension, but {} has duplicate entries for `{}`",
          spec.str(), name));
    }
  }
}

}  // namespace internal

NamedSharding::NamedSharding(Mesh mesh, PartitionSpec spec)
    : mesh_(std::move(mesh)), spec_(std::move(spec)) {
  internal::check_spec_axes(mesh_, spec_);
}

Shape NamedSharding::shard_shape(const Shape& global_shape) const {
  internal::checked_size(global_shape, "NamedSharding::shard_shape", "global_shape");
  if (spec_.size() > global_shape.size()) {
    throw ValueError(fmt::format(
        "{} has {} entries but the array has rank {} (shape {}); a PartitionSpec may not be "
        "longer than the array's rank.",
        spec_.str(), spec_.size(), global_shape.size(), shape_tuple_string(global_shape)));
  }
  for (size_t d = 0; d < spec_.size(); ++d) {
    int64_t m = internal::entry_size(mesh_, spec_[d]);
    if (global_shape[d] % m != 0) {
      throw ValueError(fmt::format(
          "{} maps array axis {} (of size {}) to mesh axes {} (of total size {}), but {} does "
          "not evenly divide {}. Mesh: {}.",
          spec_.str(), d, global_shape[d], spec_[d].str(), m, m, global_shape[d], mesh_.str()));
    }
  }
  return internal::block_shape(mesh_, spec_, global_shape);
}

std::vector<Index> NamedSharding::device_indices(const Shape& global_shape) const {
  shard_shape(global_shape);  // validates
  std::vector<Index> out;
  for (int64_t d = 0; d < mesh_.size(); ++d) {
    out.push_back(internal::block_index(mesh_, spec_, global_shape, d));
  }
  return out;
}

std::string NamedSharding::str() const {
  return fmt::format("NamedSharding(mesh={}, spec={})", mesh_.str(), spec_.str());
}

const NamedSharding& Sharding::named() const {
  if (!named_) {
    throw TypeError(fmt::format(
        "Sharding::named(): {} is not a NamedSharding (a single-device array has no mesh); check "
        "Sharding::is_named() first",
        str()));
  }
  return *named_;
}

std::vector<Device> Sharding::devices() const {
  return named_ ? named_->mesh().devices() : std::vector<Device>{device_};
}

std::string Sharding::str() const {
  return named_ ? named_->str() : fmt::format("SingleDeviceSharding({})", device_.str());
}

}  // namespace spmd
