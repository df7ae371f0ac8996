// SPDX-License-Identifier: Apache-2.0
// The main demo: a 2x4 mesh of CPU devices, a sharded array, and shard_map with collectives.
//
//   SPMD_CPU_DEVICES=8 build/examples/mesh_basics/mesh_basics
//
// Every number printed is deterministic: reductions run in a fixed order on every device.
#include <fmt/core.h>
#include <spmd/spmd.h>

int main() {
  using spmd::Array;
  using spmd::P;

  spmd::Mesh mesh = spmd::make_mesh({2, 4}, {"data", "model"});
  fmt::print("{}\n", spmd::describe_mesh(mesh));

  // An 8x8 matrix sharded rows over "data" and columns over "model".
  Array x = spmd::arange(64, spmd::DType::kFloat32).reshape({8, 8});
  Array sharded = spmd::device_put(x, spmd::NamedSharding(mesh, P("data", "model")));
  fmt::print("{}\n", spmd::visualize_array_sharding(sharded));

  // Row sums: each device sums its 4x2 block, then psum over "model" completes the rows.
  auto row_sums =
      spmd::shard_map([](const Array& block) { return spmd::psum(spmd::sum(block, 1), "model"); },
                      mesh, P("data", "model"), P("data"));
  fmt::print("row sums      {}\n", row_sums(sharded).str());

  // Global mean and max over every device, and each device's position on the mesh.
  auto stats = spmd::shard_map(
      [](const Array& block) {
        Array mean = spmd::pmean(spmd::mean(block), {"data", "model"});
        Array max = spmd::pmax(spmd::max(block), {"data", "model"});
        Array where = spmd::axis_index({"data", "model"}).reshape({1, 1});
        return std::make_tuple(mean, max, where);
      },
      mesh, P("data", "model"), {P(), P(), P("data", "model")});
  auto [mean, max, where] = stats(sharded);
  fmt::print("mean          {}\nmax           {}\naxis_index    {}\n", mean.str(), max.str(),
             where.str());

  // A ring shift of column blocks along "model" (ppermute) and an all_gather back to full rows.
  auto shift = spmd::shard_map(
      [](const Array& block) {
        Array moved = spmd::ppermute(block, "model", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
        return spmd::all_gather(moved, "model",
                                {.axis = 1, .tiled = true, .to = spmd::To::kInvariant});
      },
      mesh, P("data", "model"), P("data"));
  fmt::print("shifted rows 0 and 4\n{}\n{}\n", shift(sharded)[0].str(), shift(sharded)[4].str());
  return 0;
}
