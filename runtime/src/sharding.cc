// SPDX-License-Identifier: Apache-2.0
// NamedSharding, Sharding and the spec arithmetic of layout.h.
#include "spmd/sharding.h"

#include <fmt/format.h>

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

Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  Shape block = global;
  for (size_t d = 0; d < spec.size() && d < block.size(); ++d) {
    block[d] /= entry_size(mesh, spec[d]);
  }
  return block;
}

int64_t coord_along(const Mesh& mesh, int64_t linear, int axis) {
  const Shape& sizes = mesh.axis_sizes();
  for (int i = mesh.ndim() - 1; i > axis; --i) linear /= sizes[i];
  return linear % sizes[axis];
}

namespace {

// The block index an entry gives the device at mesh position `linear`: mixed radix over the
// entry's axes, first name most significant (no coordinate vector: block_index runs for every
// input and output of every device on every call).
int64_t entry_block(const Mesh& mesh, const PartitionSpec::Entry& entry, int64_t linear) {
  int64_t k = 0;
  for (const std::string& name : entry.names()) {
    const int a = mesh.axis_index(name);
    k = k * mesh.axis_sizes()[a] + coord_along(mesh, linear, a);
  }
  return k;
}

// Whether `name` is named in `spec` before position `i` of entry `d`.
bool named_before(const PartitionSpec& spec, size_t d, size_t i, const std::string& name) {
  for (size_t e = 0; e <= d; ++e) {
    const std::vector<std::string>& names = spec[e].names();
    const size_t end = e == d ? i : names.size();
    for (size_t j = 0; j < end; ++j) {
      if (names[j] == name) return true;
    }
  }
  return false;
}

}  // namespace

Index block_index(const Mesh& mesh, const PartitionSpec& spec, const Shape& global,
                  int64_t linear) {
  Index index(global.size());
  for (size_t d = 0; d < global.size(); ++d) {
    if (d >= spec.size() || spec[d].is_none()) {
      index[d] = {0, global[d]};
      continue;
    }
    int64_t b = global[d] / entry_size(mesh, spec[d]);
    int64_t k = entry_block(mesh, spec[d], linear);
    index[d] = {k * b, (k + 1) * b};
  }
  return index;
}

// Runs on every call (each output's NamedSharding), so it allocates nothing.
void check_spec_axes(const Mesh& mesh, const PartitionSpec& spec) {
  for (size_t d = 0; d < spec.size(); ++d) {
    const std::vector<std::string>& names = spec[d].names();
    for (size_t i = 0; i < names.size(); ++i) {
      if (mesh.axis_index(names[i]) < 0) {
        throw ValueError(fmt::format("Resource axis: {} of {} is not found in mesh: {}.", names[i],
                                     spec.str(), mesh.names_str()));
      }
      if (named_before(spec, d, i, names[i])) {
        throw ValueError(fmt::format(
            "A single NamedSharding spec specification can map every mesh axis to at most one "
            "positional dimension, but {} has duplicate entries for `{}`",
            spec.str(), names[i]));
      }
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
