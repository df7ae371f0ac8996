// SPDX-License-Identifier: Apache-2.0
// Global arrays built from the data each process has, and back (JAX's
// jax.make_array_from_callback, jax.make_array_from_process_local_data and multihost_utils'
// host_local_array_to_global_array / global_array_to_host_local_array). In a multi-process run
// (spmd/distributed.h) every process calls the same function with the same global shape and
// sharding; each fills only the shards of its own devices, so no process needs the whole value.
// In one process they are device_put with a different way to supply the data.
//
// Example: a data-parallel batch of 64 rows over the 8 devices of 2 processes; each process loads
// its own 32 rows.
//   spmd::Mesh mesh = spmd::make_mesh({8}, {"batch"});
//   spmd::NamedSharding rows(mesh, P("batch"));
//   spmd::Array mine = load_rows(32 * spmd::process_index(), 32);  // f32[32, 128]
//   spmd::Array batch = spmd::make_array_from_process_local_data(rows, mine);  // f32[64, 128]
//   spmd::Array same = spmd::make_array_from_callback({64, 128}, rows, [&](const spmd::Index&
//   index) {
//     return load_rows(index[0].first, index[0].second - index[0].first);
//   });
#pragma once

#include <functional>
#include <optional>

#include "spmd/array.h"
#include "spmd/mesh.h"
#include "spmd/partition_spec.h"
#include "spmd/sharding.h"

namespace spmd {

// An array of `shape` laid out with `sharding` whose shard at each index range comes from
// data_callback(index): it is called once per distinct index range held by this process's
// devices (replicated devices share one call), in mesh order, and must return an array of the
// shard's shape, with the same dtype every time. ValueError naming the index when it does not,
// and when `sharding` does not fit `shape` or none of its devices belongs to this process.
Array make_array_from_callback(const Shape& shape, const NamedSharding& sharding,
                               const std::function<Array(const Index& index)>& data_callback);

// The global array whose part held by this process's devices is `local_data`. Along each
// dimension local_data either has the global extent (every process passes the same values
// there) or the extent of the blocks this process's devices hold, laid side by side in index
// order. `global_shape` defaults to the shape this implies when every process holds the same
// number of blocks along each dimension; ValueError, naming the dimension and both extents, when
// local_data fits neither. With one process: device_put(local_data, sharding).
Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_data,
                                         std::optional<Shape> global_shape = std::nullopt);

// The part of `mesh` whose devices belong to this process (JAX's Mesh.local_mesh): the same axis
// names, each axis keeping the coordinates this process's devices have, in order. ValueError
// when this process owns none of the devices or they do not form such a sub-grid. In one
// process: `mesh`.
Mesh local_mesh(const Mesh& mesh);

// The global array laid out as P(spec) over `global_mesh` whose part on this process's devices
// is `local` (JAX's multihost_utils.host_local_array_to_global_array): make_array_from_process_
// local_data(NamedSharding(global_mesh, spec), local). A dimension that `spec` splits over axes
// spanning processes grows by the number of processes along them.
Array host_local_array_to_global_array(const Array& local, const Mesh& global_mesh,
                                       const PartitionSpec& spec);

// The part of `global` held by this process's devices, as an array laid out as P(spec) over
// local_mesh(global_mesh) (JAX's multihost_utils.global_array_to_host_local_array). Its shards
// are `global`'s (no copy). `global` is first laid out as P(spec) over `global_mesh` when it is
// not already (device_put). In one process: that layout of `global`.
Array global_array_to_host_local_array(const Array& global, const Mesh& global_mesh,
                                       const PartitionSpec& spec);

}  // namespace spmd
