// SPDX-License-Identifier: Apache-2.0
// make_array_from_callback and make_array_from_process_local_data (spmd/make_array.h).
#include "spmd/make_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "array_impl.h"
#include "exec/processes.h"
#include "layout.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

// The mesh positions of `sharding`'s devices that belong to this process (never none).
std::vector<int64_t> addressable_positions(const NamedSharding& sharding, const char* api) {
  const Mesh& mesh = sharding.mesh();
  std::vector<int64_t> out;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    if (internal::is_addressable(mesh.devices()[r])) out.push_back(r);
  }
  if (out.empty()) {
    throw ValueError(fmt::format(
        "{}: none of the devices of {} belongs to process {}, so it has no shard to fill; build "
        "the mesh from spmd::devices(), which every process shares.",
        api, mesh.str(), process_index()));
  }
  return out;
}

// The callback's array for `index`, checked against the shard it fills.
Array checked_block(const std::function<Array(const Index&)>& data_callback, const Index& index,
                    const Shape& block, std::optional<DType>& dtype) {
  Array data = data_callback(index);
  if (!data.valid()) {
    throw ValueError(
        fmt::format("make_array_from_callback: the callback returned an invalid Array for index {}",
                    internal::index_str(index)));
  }
  if (data.shape() != block) {
    throw ValueError(fmt::format(
        "make_array_from_callback: the callback returned {} for index {}, but the shards of this "
        "sharding have shape ({}); return the global value's slice at that index.",
        internal::long_type(data), internal::index_str(index), fmt::join(block, ", ")));
  }
  if (dtype && data.dtype() != *dtype) {
    throw ValueError(fmt::format(
        "make_array_from_callback: the callback returned {} for index {} but {} for an earlier "
        "index; every shard must have the same dtype.",
        internal::long_type(data), internal::index_str(index), *dtype));
  }
  dtype = data.dtype();
  return data;
}

}  // namespace

Array make_array_from_callback(const Shape& shape, const NamedSharding& sharding,
                               const std::function<Array(const Index&)>& data_callback) {
  const Shape block = sharding.shard_shape(shape);  // validates rank and divisibility
  const Mesh& mesh = sharding.mesh();
  const std::vector<int64_t> mine = addressable_positions(sharding, "make_array_from_callback");
  std::vector<internal::ShardData> shards;
  shards.reserve(mesh.size());
  for (int64_t r = 0; r < mesh.size(); ++r) {
    shards.push_back(internal::ShardData{mesh.devices()[r],
                                         internal::block_index(mesh, sharding.spec(), shape, r),
                                         block, nullptr, 0});
  }
  // Devices that replicate a block share one call (JAX calls once per device, or once in all
  // when fully replicated: same values, fewer loads).
  std::map<Index, Array> fetched;
  std::optional<DType> dtype;
  for (int64_t r : mine) {
    internal::ShardData& s = shards[r];
    auto it = fetched.find(s.index);
    if (it == fetched.end()) {
      it = fetched.emplace(s.index, checked_block(data_callback, s.index, block, dtype)).first;
    }
    Array on_device = device_put(it->second, s.device);
    const internal::ShardData& held = internal::single_shard(on_device);
    s.buffer = held.buffer;
    s.offset = held.offset;
  }
  return internal::make_sharded_array(*dtype, shape, sharding, std::move(shards));
}

namespace {

// Along one dimension: the distinct block starts of the whole sharding and of this process's
// devices, in increasing order.
struct DimBlocks {
  std::vector<int64_t> all;
  std::vector<int64_t> mine;
};

std::vector<DimBlocks> blocks_by_dim(const NamedSharding& sharding, const Shape& unit_shape,
                                     const std::vector<int64_t>& mine) {
  const Mesh& mesh = sharding.mesh();
  std::vector<DimBlocks> dims(unit_shape.size());
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const Index index = internal::block_index(mesh, sharding.spec(), unit_shape, r);
    const bool held = std::find(mine.begin(), mine.end(), r) != mine.end();
    for (size_t d = 0; d < dims.size(); ++d) {
      dims[d].all.push_back(index[d].first);
      if (held) dims[d].mine.push_back(index[d].first);
    }
  }
  for (DimBlocks& b : dims) {
    for (std::vector<int64_t>* v : {&b.all, &b.mine}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  }
  return dims;
}

// The global shape local_data implies when each dimension holds as many blocks in every process.
Shape inferred_global_shape(const Shape& local, const std::vector<DimBlocks>& dims) {
  Shape global(local.size());
  for (size_t d = 0; d < local.size(); ++d) {
    const int64_t held = static_cast<int64_t>(dims[d].mine.size());
    if (local[d] % held != 0) {
      throw ValueError(fmt::format(
          "make_array_from_process_local_data: dimension {} of the local data has {} elements, "
          "which does not split into the {} blocks this process's devices hold along it; pass "
          "global_shape, or local data with a multiple of {} elements there.",
          d, local[d], held, held));
    }
    global[d] = local[d] / held * static_cast<int64_t>(dims[d].all.size());
  }
  return global;
}

}  // namespace

Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_data,
                                         std::optional<Shape> global_shape) {
  const Shape& local = local_data.shape();
  if (process_count() == 1) {
    if (global_shape && *global_shape != local) {
      throw ValueError(fmt::format(
          "make_array_from_process_local_data: in a single-process run the local data is the "
          "whole array, but it has shape ({}) and global_shape is ({}).",
          fmt::join(local, ", "), fmt::join(*global_shape, ", ")));
    }
    return device_put(local_data, sharding);
  }
  const std::vector<int64_t> mine =
      addressable_positions(sharding, "make_array_from_process_local_data");
  // Block starts in units of one block: the index arithmetic of a shape whose blocks have
  // extent 1.
  Shape units(local.size(), 1);
  for (size_t d = 0; d < local.size() && d < sharding.spec().size(); ++d) {
    units[d] = internal::entry_size(sharding.mesh(), sharding.spec()[d]);
  }
  sharding.shard_shape(units);  // validates the rank
  const std::vector<DimBlocks> dims = blocks_by_dim(sharding, units, mine);
  const Shape global = global_shape ? *global_shape : inferred_global_shape(local, dims);
  const Shape block = sharding.shard_shape(global);
  std::vector<bool> whole(local.size());
  for (size_t d = 0; d < local.size(); ++d) {
    const int64_t held = static_cast<int64_t>(dims[d].mine.size()) * block[d];
    whole[d] = local[d] == global[d];
    if (!whole[d] && local[d] != held) {
      throw ValueError(fmt::format(
          "make_array_from_process_local_data: dimension {} of the local data has {} elements; "
          "it must have either the global extent {} (global_shape ({})) or the {} elements "
          "this process's devices hold there ({} blocks of {}).",
          d, local[d], global[d], fmt::join(global, ", "), held, dims[d].mine.size(), block[d]));
    }
  }
  return make_array_from_callback(global, sharding, [&](const Index& index) {
    Index region(index.size());
    for (size_t d = 0; d < index.size(); ++d) {
      if (whole[d]) {
        region[d] = index[d];
        continue;
      }
      // The block's place among this process's blocks along d is its place in local_data.
      const std::vector<int64_t>& starts = dims[d].mine;
      const int64_t unit = block[d] == 0 ? 0 : index[d].first / block[d];
      const int64_t k = std::find(starts.begin(), starts.end(), unit) - starts.begin();
      region[d] = {k * block[d], (k + 1) * block[d]};
    }
    return internal::read_region(local_data, region, internal::default_device());
  });
}

Mesh local_mesh(const Mesh& mesh) {
  if (process_count() == 1) return mesh;
  // The coordinates this process's devices have along each axis.
  std::vector<std::vector<int64_t>> kept(mesh.ndim());
  int64_t owned = 0;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    if (!internal::is_addressable(mesh.devices()[r])) continue;
    ++owned;
    std::vector<int64_t> c = mesh.coords(r);
    for (int a = 0; a < mesh.ndim(); ++a) kept[a].push_back(c[a]);
  }
  if (owned == 0) {
    throw ValueError(fmt::format("local_mesh: none of the devices of {} belongs to process {}.",
                                 mesh.str(), process_index()));
  }
  Shape sizes;
  for (std::vector<int64_t>& k : kept) {
    std::sort(k.begin(), k.end());
    k.erase(std::unique(k.begin(), k.end()), k.end());
    sizes.push_back(static_cast<int64_t>(k.size()));
  }
  // This process's devices form a sub-grid exactly when they fill the grid of the coordinates
  // they have (they are distinct and lie in it).
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>()) != owned) {
    throw ValueError(fmt::format(
        "local_mesh: the {} devices of process {} in {} do not form a sub-grid of it (their "
        "coordinates span a ({}) grid); order the mesh's devices so that each process's "
        "devices form a block, as make_mesh over spmd::devices() does.",
        owned, process_index(), mesh.str(), fmt::join(sizes, ", ")));
  }
  std::vector<Device> devices;
  std::vector<int64_t> local(mesh.ndim(), 0), global(mesh.ndim());
  for (int64_t n = 0; n < owned; ++n) {
    for (int a = 0; a < mesh.ndim(); ++a) global[a] = kept[a][local[a]];
    devices.push_back(mesh.devices()[mesh.linear_index(global)]);
    for (int a = mesh.ndim() - 1; a >= 0 && ++local[a] == sizes[a]; --a) local[a] = 0;
  }
  return Mesh(std::move(devices), std::move(sizes), mesh.axis_names());
}

Array host_local_array_to_global_array(const Array& local, const Mesh& global_mesh,
                                       const PartitionSpec& spec) {
  return make_array_from_process_local_data(NamedSharding(global_mesh, spec), local);
}

Array global_array_to_host_local_array(const Array& global, const Mesh& global_mesh,
                                       const PartitionSpec& spec) {
  const NamedSharding sharding(global_mesh, spec);
  const Array laid_out = global.sharding().is_named() && global.sharding().named() == sharding
                             ? global
                             : device_put(global, sharding);
  if (process_count() == 1) return laid_out;
  const Mesh local = local_mesh(global_mesh);
  const Shape block = sharding.shard_shape(laid_out.shape());
  Shape shape = block;
  for (size_t d = 0; d < shape.size() && d < spec.size(); ++d) {
    shape[d] *= internal::entry_size(local, spec[d]);
  }
  const internal::ArrayImpl& impl = internal::ArrayAccess::impl(laid_out);
  std::vector<internal::ShardData> shards;
  shards.reserve(local.size());
  for (int64_t r = 0; r < local.size(); ++r) {
    // The local mesh keeps the global order of coordinates, so block k of this process along a
    // dimension is its k-th block there: the local index of the same shard.
    const internal::ShardData& s = impl.shards[global_mesh.position_of(local.devices()[r])];
    shards.push_back(internal::ShardData{s.device, internal::block_index(local, spec, shape, r),
                                         block, s.buffer, s.offset});
  }
  return internal::make_sharded_array(laid_out.dtype(), shape, NamedSharding(local, spec),
                                      std::move(shards));
}

}  // namespace spmd
