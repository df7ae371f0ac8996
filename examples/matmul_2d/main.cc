// SPDX-License-Identifier: Apache-2.0
// Matrix multiplication on a 2x4 mesh, the two classic ways of sharding the contraction:
//
//   all_gather:   A is split over both axes; each device gathers its row block of A along "y"
//                 and multiplies by its column block of B: C comes out split over both axes.
//   psum_scatter: A's columns and B's rows are split over "y"; each device multiplies its
//                 pieces, a partial sum of C's row block, and psum_scatter adds the partials
//                 while handing each device one column block of the sum.
//
// Both match the unsharded matmul exactly (integer-valued floats), and move different data: the
// first gathers A (the input), the second reduces C (the output).
//
//   SPMD_CPU_DEVICES=8 build/examples/matmul_2d/matmul_2d
#include <fmt/ranges.h>
#include <spmd/spmd.h>

int main() {
  using spmd::Array;
  using spmd::None;
  using spmd::P;

  spmd::Mesh mesh = spmd::make_mesh({2, 4}, {"x", "y"});
  fmt::print("{}\n", spmd::describe_mesh(mesh));
  Array a = (spmd::arange(8 * 16) % 7 - 3).astype(spmd::float32).reshape({8, 16});
  Array b = (spmd::arange(16 * 12) % 5 - 2).astype(spmd::float32).reshape({16, 12});
  Array expected = spmd::matmul(a, b);  // f32[8,12]

  // A: P("x", "y") gives each device a 4x4 block; B: P(None, "y") a 16x3 column block.
  auto gather_matmul = spmd::shard_map(
      [](const Array& a_block, const Array& b_cols) {
        Array a_rows = spmd::all_gather(a_block, "y", {.axis = 1, .tiled = true});  // 4x16
        return spmd::matmul(a_rows, b_cols);                                        // 4x3
      },
      mesh, {P("x", "y"), P(None, "y")}, P("x", "y"));
  Array c1 = gather_matmul(a, b);

  // A: P("x", "y") again; B: P("y", None) gives each device a 4x12 row block.
  auto scatter_matmul = spmd::shard_map(
      [](const Array& a_block, const Array& b_rows) {
        Array partial = spmd::matmul(a_block, b_rows);  // 4x12, one term of the sum over "y"
        return spmd::psum_scatter(partial, "y", {.scatter_dimension = 1, .tiled = true});  // 4x3
      },
      mesh, {P("x", "y"), P("y", None)}, P("x", "y"));
  Array c2 = scatter_matmul(a, b);

  fmt::print("C = A @ B, {} sharded as {}\n", c1.shape(), c1.sharding());
  fmt::print("{}\n", spmd::visualize_array_sharding(c1));
  fmt::print("row 0 of C: {}\n", c1[0]);
  fmt::print("all_gather version equals matmul:   {}\n", spmd::array_equal(c1, expected));
  fmt::print("psum_scatter version equals matmul: {}\n", spmd::array_equal(c2, expected));
  return spmd::array_equal(c1, expected) && spmd::array_equal(c2, expected) ? 0 : 1;
}
