// SPDX-License-Identifier: Apache-2.0
// smap (jax.smap): shard_map over one mesh axis with specs written as axes, the shortest way from
// a pmap-style in_axes/out_axes to shard_map. Unlike pmap it keeps ranks (no squeeze) and tracks
// replication (check_vma).
//
//   SPMD_CPU_DEVICES=8 build/examples/smap_basics/smap_basics
#include <spmd/spmd.h>

int main() {
  using spmd::Array;

  spmd::Mesh mesh = spmd::make_mesh({8}, {"batch"});
  Array x = spmd::arange(32, spmd::float32).reshape({8, 4});
  Array w = spmd::Array::from_vector<float>({1, 0, -1, 2});

  // in_axes {0, nullopt}: x is split along dimension 0, w goes whole to every device.
  // out_axes {0}: the per-device results are concatenated along dimension 0.
  auto scores = spmd::smap(
      [](const Array& rows, const Array& weights) {
        return spmd::sum(rows * weights, 1);  // f32[1] per device
      },
      mesh, "batch", {0, std::nullopt}, {0});
  fmt::print("scores        {}\n", scores(x, w));

  // Normalising by a global statistic: pmean over the mapped axis gives a replicated value,
  // which an out_axes of nullopt (P()) may return.
  auto normalise = spmd::smap(
      [](const Array& rows) {
        Array mean = spmd::pmean(spmd::mean(rows), "batch");
        return std::make_tuple(rows - mean, mean);
      },
      mesh, "batch", {0}, {0, std::nullopt});
  auto [centred, mean] = normalise(x);
  fmt::print("global mean   {}\ncentred row 0 {}\n", mean, centred[0]);

  // Splitting dimension 1 instead: each device gets one column of 8 rows of x.T's shape.
  auto column_max =
      spmd::smap([](const Array& col) { return spmd::max(col, 0, /*keepdims=*/true); }, mesh,
                 "batch", {1}, {1});
  fmt::print("column maxima {}\n", column_max(x.transpose()));
  return 0;
}
