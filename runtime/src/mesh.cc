// SPDX-License-Identifier: Apache-2.0
// Mesh and make_mesh (spmd/mesh.h).
#include "spmd/mesh.h"

#include <fmt/format.h>

#include <set>

#include "backend/registry.h"
#include "checks.h"
#include "spmd/errors.h"

namespace spmd {

struct Mesh::Impl {
  std::vector<Device> devices;
  Shape sizes;
  std::vector<std::string> names;
};

namespace {

std::string quoted_names(const std::vector<std::string>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) {
    out += fmt::format("{}'{}'", i ? ", " : "", names[i]);
  }
  return out + (names.size() == 1 ? ",)" : ")");
}

// The number of devices a mesh of `sizes` holds; ValueError unless every size is positive and the
// product fits in int64.
int64_t device_count_of(const Shape& sizes, const char* api) {
  for (int64_t s : sizes) {
    if (s <= 0) {
      throw ValueError(
          fmt::format("{} axis sizes must be positive, got {}", api, shape_tuple_string(sizes)));
    }
  }
  int64_t n = 0;
  if (!internal::checked_product(sizes, n)) {
    throw ValueError(fmt::format(
        "{} axis sizes {} multiply to more devices than fit in int64; a mesh holds one device per "
        "element of the product.",
        api, shape_tuple_string(sizes)));
  }
  return n;
}

}  // namespace

Mesh::Mesh() : impl_(std::make_shared<const Impl>()) {}

Mesh::Mesh(std::vector<Device> devices, Shape axis_sizes, std::vector<std::string> axis_names) {
  if (axis_sizes.size() != axis_names.size()) {
    throw ValueError(fmt::format(
        "Mesh requires the ndim of its devices grid to equal the length of axis_names, but got "
        "devices.ndim == {} and len(axis_names) == {}.",
        axis_sizes.size(), axis_names.size()));
  }
  std::set<std::string> seen;
  for (const std::string& name : axis_names) {
    if (name.empty()) throw ValueError("Mesh axis names must be non-empty strings");
    if (!seen.insert(name).second) {
      throw ValueError(fmt::format("Mesh axis names must be unique, but '{}' appears twice in {}",
                                   name, quoted_names(axis_names)));
    }
  }
  const int64_t n = device_count_of(axis_sizes, "Mesh");
  if (static_cast<int64_t>(devices.size()) != n) {
    throw ValueError(fmt::format("Mesh of shape {} needs {} devices, but {} were given",
                                 shape_tuple_string(axis_sizes), n, devices.size()));
  }
  internal::check_devices(devices, "Mesh devices");
  impl_ = std::make_shared<const Impl>(
      Impl{std::move(devices), std::move(axis_sizes), std::move(axis_names)});
}

const std::vector<Device>& Mesh::devices() const { return impl_->devices; }
const Shape& Mesh::axis_sizes() const { return impl_->sizes; }
const std::vector<std::string>& Mesh::axis_names() const { return impl_->names; }
int Mesh::ndim() const { return static_cast<int>(impl_->sizes.size()); }
int64_t Mesh::size() const { return static_cast<int64_t>(impl_->devices.size()); }
bool Mesh::empty() const { return impl_->devices.empty(); }

std::vector<std::pair<std::string, int64_t>> Mesh::shape() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (int i = 0; i < ndim(); ++i) out.emplace_back(impl_->names[i], impl_->sizes[i]);
  return out;
}

int Mesh::axis_index(std::string_view name) const {
  for (int i = 0; i < ndim(); ++i) {
    if (impl_->names[i] == name) return i;
  }
  return -1;
}

int64_t Mesh::axis_size(std::string_view name) const {
  int i = axis_index(name);
  if (i < 0) {
    throw ValueError(fmt::format("{} has no axis named '{}'", str(), name));
  }
  return impl_->sizes[i];
}

std::vector<int64_t> Mesh::coords(int64_t linear) const {
  if (linear < 0 || linear >= size()) {
    throw IndexError(fmt::format("Mesh::coords: position {} is out of range for {} of {} devices",
                                 linear, str(), size()));
  }
  std::vector<int64_t> c(ndim());
  for (int i = ndim() - 1; i >= 0; --i) {
    c[i] = linear % impl_->sizes[i];
    linear /= impl_->sizes[i];
  }
  return c;
}

int64_t Mesh::linear_index(const std::vector<int64_t>& coords) const {
  bool valid = static_cast<int>(coords.size()) == ndim();
  for (int i = 0; valid && i < ndim(); ++i) valid = coords[i] >= 0 && coords[i] < impl_->sizes[i];
  if (!valid) {
    throw IndexError(fmt::format("Mesh::linear_index: coordinates {} are not a position of {}",
                                 shape_tuple_string(coords), str()));
  }
  int64_t linear = 0;
  for (int i = 0; i < ndim(); ++i) linear = linear * impl_->sizes[i] + coords[i];
  return linear;
}

int64_t Mesh::position_of(const Device& device) const {
  for (size_t i = 0; i < impl_->devices.size(); ++i) {
    if (impl_->devices[i] == device) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string Mesh::str() const {
  std::string out = "Mesh(";
  for (int i = 0; i < ndim(); ++i) {
    out += fmt::format("{}'{}': {}", i ? ", " : "", impl_->names[i], impl_->sizes[i]);
  }
  return out + ")";
}

std::string Mesh::sizes_str() const { return shape_tuple_string(impl_->sizes); }
std::string Mesh::names_str() const { return quoted_names(impl_->names); }

bool Mesh::operator==(const Mesh& other) const {
  return impl_ == other.impl_ ||
         (impl_->devices == other.impl_->devices && impl_->sizes == other.impl_->sizes &&
          impl_->names == other.impl_->names);
}

Mesh make_mesh(Shape axis_sizes, std::vector<std::string> axis_names,
               std::optional<std::vector<Device>> devices) {
  std::vector<Device> pool = devices ? std::move(*devices) : spmd::devices();
  const int64_t n = device_count_of(axis_sizes, "make_mesh");
  if (static_cast<int64_t>(pool.size()) < n) {
    const Platform platform = pool.empty() ? internal::platform_in_use("") : pool.front().platform;
    const std::string advice = internal::backend_for(platform).more_devices_advice(n);
    throw ValueError(fmt::format(
        "Number of devices {} must be >= the product of mesh_shape {}. Start the program with "
        "more devices{}.",
        pool.size(), shape_tuple_string(axis_sizes), advice.empty() ? "" : " (" + advice + ")"));
  }
  pool.resize(static_cast<size_t>(n));
  return Mesh(std::move(pool), std::move(axis_sizes), std::move(axis_names));
}

}  // namespace spmd
