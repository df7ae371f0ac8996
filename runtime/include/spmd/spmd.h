// SPDX-License-Identifier: Apache-2.0
// File: spmd/spmd.h
//
// The umbrella header: everything a program written against spmd needs (spmd/testing.h, the
// legacy spmd/pmap.h and spmd/version.h, which CMake generates in the build tree, are included
// separately).
//
// Example:
//   #include <spmd/spmd.h>
//   int main() {
//     spmd::initialize({.cpu_devices = 8});
//     spmd::Mesh mesh = spmd::make_mesh({8}, {"i"});
//     auto total = spmd::shard_map([](const spmd::Array& b) { return spmd::psum(b, "i"); },
//                                  mesh, spmd::P("i"), spmd::P());
//     fmt::print("{}\n", total(spmd::arange(16)));  // [56, 64]
//   }
#pragma once

#include "spmd/array.h"
#include "spmd/collectives.h"
#include "spmd/debug.h"
#include "spmd/device.h"
#include "spmd/distributed.h"
#include "spmd/dtype.h"
#include "spmd/errors.h"
#include "spmd/format.h"
#include "spmd/make_array.h"
#include "spmd/mesh.h"
#include "spmd/mesh_context.h"
#include "spmd/npy.h"
#include "spmd/ops.h"
#include "spmd/partition_spec.h"
#include "spmd/pmap_mesh.h"
#include "spmd/random.h"
#include "spmd/shard_map.h"
#include "spmd/sharding.h"
#include "spmd/vmap.h"
