// SPDX-License-Identifier: Apache-2.0
// File: spmd/debug.h
//
// Text pictures of meshes and shardings (JAX's jax.debug.visualize_array_sharding), for logs and
// terminals. Plain ASCII, deterministic, so they also serve as golden-file tests of the layout
// arithmetic.
//
// Example:
//   fmt::print("{}", spmd::describe_mesh(spmd::make_mesh({2, 4}, {"data", "model"})));
//   // Mesh('data': 2, 'model': 4), 8 devices
//   //            model=0  model=1  model=2  model=3
//   //   data=0 | cpu:0  | cpu:1  | cpu:2  | cpu:3  |
//   //   data=1 | cpu:4  | cpu:5  | cpu:6  | cpu:7  |
//
//   fmt::print("{}", spmd::visualize_array_sharding(x));   // one box per distinct shard
#pragma once

#include <string>

#include "spmd/array.h"
#include "spmd/mesh.h"

namespace spmd {

// The mesh as a grid of devices: rows are the first axis, columns the second; meshes with more
// axes print one grid per index of the leading axes.
std::string describe_mesh(const Mesh& mesh);

// A 1-D or 2-D array's shards as boxes (rows x columns of the array), each labelled with the
// devices that hold it. ValueError for other ranks.
std::string visualize_array_sharding(const Array& x);

}  // namespace spmd
