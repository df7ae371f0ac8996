// SPDX-License-Identifier: Apache-2.0
// A model-parallel two-layer MLP forward pass on a 2 x 4 device grid, written against the legacy
// pmap API with nested pmap.
//
// y = tanh(x W1) W2 with x: f32[16, 32], W1: f32[32, 64], W2: f32[64, 32]. The outer pmap maps
// axis "data" over the batch rows (2 blocks of 8); the inner pmap maps axis "model" over the
// weights in the Megatron style: device (d, m) holds column block m of W1 and row block m of W2.
//   layer 1 (column parallel): h_m = tanh(x_d W1[:, m]), all_gather over "model" -> full rows of h
//   layer 2 (row parallel):    partial sums h_m W2[m, :], psum_scatter over "model" -> device
//                              (d, m) holds column block m of y's rows d
//   psum over ("data", "model") gives the global sum of squares of y.
// Each batch is compared with a direct spmd::matmul of the full arrays.
//
//   SPMD_CPU_DEVICES=8 build/examples/legacy/model_parallel_matmul/model_parallel_matmul_legacy
//   (model_parallel_matmul_compat is the same source linked with spmd::compat: same output, byte
//   for byte.)
#include <fmt/core.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

namespace {

using spmd::Array;
namespace rnd = spmd::random;

constexpr int64_t kData = 2, kModel = 4;  // the device grid
constexpr int64_t kBatch = 16, kIn = 32, kHidden = 64, kOut = 32;

float max_abs_diff(const Array& a, const Array& b) {
  return spmd::max(spmd::abs(a - b)).item<float>();
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = kData * kModel});

  // Nested pmap over the 2 x 4 grid: the outer pmap maps "data" over the batch rows, the inner
  // one maps "model" over the weight blocks. Device (d, m) gets x_rows f32[8, 32] (broadcast over
  // "model"), w1_block f32[32, 16] (in_axes 1 of W1 viewed as [32, 4, 16]) and w2_block
  // f32[16, 32] (in_axes 0 of W2 viewed as [4, 16, 32]).
  auto forward = spmd::pmap(
      spmd::pmap(
          [](const Array& x_rows, const Array& w1_block, const Array& w2_block) {
            Array h = spmd::tanh(spmd::matmul(x_rows, w1_block));                     // f32[8, 16]
            Array h_rows = spmd::all_gather(h, "model", {.axis = 1, .tiled = true});  // f32[8, 64]
            Array partial = spmd::matmul(h, w2_block);                                // f32[8, 32]
            // f32[8, 8]: the summed partials, column block m of them on device (d, m).
            Array y = spmd::psum_scatter(partial, "model", {.scatter_dimension = 1, .tiled = true});
            Array sum_sq = spmd::psum(spmd::sum(spmd::square(y)), {"data", "model"});
            return std::make_tuple(y, h_rows, sum_sq);
          },
          "model", {.in_axes = {std::nullopt, 1, 0}, .out_axes = {1, std::nullopt, std::nullopt}}),
      "data", {.in_axes = {0, std::nullopt, std::nullopt}, .out_axes = {0, 0, std::nullopt}});

  Array keys = rnd::split(rnd::PRNGKey(4), 3);
  Array w1 = rnd::normal(keys[0], {kIn, kHidden}) / std::sqrt(static_cast<float>(kIn));
  Array w2 = rnd::normal(keys[1], {kHidden, kOut}) / std::sqrt(static_cast<float>(kHidden));
  fmt::print("grid {} (data) x {} (model); x f32[{}, {}], W1 f32[{}, {}], W2 f32[{}, {}]\n", kData,
             kModel, kBatch, kIn, kIn, kHidden, kHidden, kOut);

  for (uint32_t batch = 0; batch < 3; ++batch) {
    Array x = rnd::normal(rnd::fold_in(keys[2], batch), {kBatch, kIn});
    auto [y, h, sum_sq] = forward(x.reshape({kData, kBatch / kData, kIn}),
                                  w1.reshape({kIn, kModel, kHidden / kModel}),
                                  w2.reshape({kModel, kHidden / kModel, kOut}));
    // y f32[2, 8, 4, 8]: for each batch row, the column blocks side by side are the row of y.
    y = y.reshape({kBatch, kOut});
    h = h.reshape({kBatch, kHidden});

    Array h_ref = spmd::tanh(spmd::matmul(x, w1));
    Array y_ref = spmd::matmul(h_ref, w2);
    fmt::print("batch {}: y f32[{}, {}]  sum {:+.6f}  sum_sq {:.6f} (direct {:.6f})\n", batch,
               y.shape()[0], y.shape()[1], spmd::sum(y).item<float>(), sum_sq.item<float>(),
               spmd::sum(spmd::square(y_ref)).item<float>());
    fmt::print("  max |h - direct| {:.3e}  max |y - direct| {:.3e}\n", max_abs_diff(h, h_ref),
               max_abs_diff(y, y_ref));
    fmt::print("  y[0, 0:4] {:+.6f} {:+.6f} {:+.6f} {:+.6f}\n", y[0][0].item<float>(),
               y[0][1].item<float>(), y[0][2].item<float>(), y[0][3].item<float>());
  }
  return 0;
}
