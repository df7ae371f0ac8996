// SPDX-License-Identifier: Apache-2.0
// vmap benchmark: µs per call of the same batched work written three ways, interleaved rep by
// rep: the whole-array ops (what batched kernels would run), vmap without an axis name (a loop
// over the batch) and vmap with one (a host thread per element, meeting in collectives). The
// ratios loop / whole and threads / whole say what vmap's strategy costs (docs/user-guide.md,
// "vmap").
//
//   build/bench/vmap_bench [--reps=7] [--quick]
#include <fmt/core.h>
#include <unistd.h>

#include "bench_util.h"
#include "spmd/spmd.h"

int main(int argc, char** argv) {
  using namespace spmd;
  using namespace spmd::bench;
  const auto [quick, reps, target] = run_settings(argc, argv);
  struct Row {
    int64_t batch;
    int64_t width;
    bool reduce;  // f also sums over the batch axis
  };
  const std::vector<Row> rows = {{8, 16, false},    {64, 16, false}, {8, 4096, false},
                                 {64, 4096, false}, {8, 16, true},   {8, 4096, true}};
  fmt::print(
      "spmd vmap: {} cores, f32[batch, width], median µs per call over {} reps (ratios per rep, "
      "then median)\n",
      sysconf(_SC_NPROCESSORS_ONLN), reps);
  fmt::print(
      "| f | batch | width | whole-array µs | loop µs | threads µs | loop / whole | threads / "
      "whole |\n|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    Array x = arange(row.batch * row.width, DType::kFloat32).reshape({row.batch, row.width});
    std::function<void()> whole, loop, threads;
    auto affine = [](const Array& v) { return v * 2.0f + 1.0f; };
    auto loop_f = vmap(affine);
    auto threads_f = vmap(affine, {0}, {0}, {.axis_name = "b"});
    auto centred =
        vmap([](const Array& v) { return v - psum(v, "b"); }, {0}, {0}, {.axis_name = "b"});
    if (row.reduce) {
      whole = [&] { x - sum(x, 0, /*keepdims=*/true); };
      loop = nullptr;  // a loop cannot reduce over its own batch
      threads = [&] { centred(x); };
    } else {
      whole = [&] { affine(x); };
      loop = [&] { loop_f(x); };
      threads = [&] { threads_f(x); };
    }
    std::vector<std::function<void()>*> calls = {&whole, &loop, &threads};
    std::vector<std::function<void(int64_t)>> paths;
    std::vector<int64_t> k;
    for (std::function<void()>* call : calls) {
      paths.push_back([call](int64_t n) {
        for (int64_t i = 0; i < n; ++i) (*call)();
      });
      k.push_back(*call ? calibrate(paths.back(), target) : 0);
    }
    std::vector<std::vector<double>> t(3);
    std::vector<double> loop_ratio, threads_ratio;
    for (int rep = 0; rep < reps; ++rep) {
      for (size_t p = 0; p < 3; ++p) {
        if (*calls[p]) t[p].push_back(time_per_iteration(paths[p], k[p]) * 1e6);
      }
      if (loop) loop_ratio.push_back(t[1].back() / t[0].back());
      threads_ratio.push_back(t[2].back() / t[0].back());
    }
    auto cell = [](const std::vector<double>& v, const char* format) {
      return v.empty() ? std::string("—") : fmt::format(fmt::runtime(format), median(v));
    };
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} |\n",
               row.reduce ? "v - psum(v, 'b')" : "v * 2 + 1", row.batch, row.width,
               cell(t[0], "{:.1f}"), cell(t[1], "{:.1f}"), cell(t[2], "{:.1f}"),
               cell(loop_ratio, "{:.1f}"), cell(threads_ratio, "{:.1f}"));
    std::fflush(stdout);
  }
  return 0;
}
