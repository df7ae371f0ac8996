// SPDX-License-Identifier: Apache-2.0
// Kernel benchmark: a 2-D transpose (spmd::transpose, which writes a dense copy through a strided
// view) as a ratio to a dense copy of the same array (spmd::copy) in the same run, so that only
// the access pattern differs: same bytes, same allocation. Square f32 matrices, median (min) of
// reps of calibrated call counts.
//
//   build/bench/kernels_bench [--reps=7] [--quick]
#include <fmt/core.h>

#include "bench_util.h"
#include "spmd/spmd.h"

int main(int argc, char** argv) {
  using namespace spmd;
  using namespace spmd::bench;
  const auto [quick, reps, target] = run_settings(argc, argv);
  initialize({.cpu_devices = 1});
  fmt::print(
      "spmd kernels benchmark: transpose / dense copy of f32[n, n], median (min) over {} "
      "reps\n| n | copy µs | transpose µs | ratio |\n|---|---|---|---|\n",
      reps);
  for (int64_t n : quick ? std::vector<int64_t>{256} : std::vector<int64_t>{256, 1024, 4096}) {
    Array x = arange(n * n, DType::kFloat32).reshape({n, n});
    auto dense = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) copy(x);
    };
    auto transposed = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) transpose(x, {1, 0});
    };
    const int64_t k_dense = calibrate(dense, target), k_transposed = calibrate(transposed, target);
    std::vector<double> t_dense, t_transposed, ratio;
    for (int rep = 0; rep < reps; ++rep) {
      t_dense.push_back(time_per_iteration(dense, k_dense) * 1e6);
      t_transposed.push_back(time_per_iteration(transposed, k_transposed) * 1e6);
      ratio.push_back(t_transposed.back() / t_dense.back());
    }
    fmt::print("| {} | {:.1f} ({:.1f}) | {:.1f} ({:.1f}) | {:.2f} |\n", n, median(t_dense),
               minimum(t_dense), median(t_transposed), minimum(t_transposed), median(ratio));
    std::fflush(stdout);
  }
  return 0;
}
