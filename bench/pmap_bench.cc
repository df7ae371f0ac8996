// SPDX-License-Identifier: Apache-2.0
// pmap paths benchmark: µs per call of the same work through the native legacy pmap, the compat
// shim (pmap on shard_map) and a direct shard_map, on 8 devices, interleaved rep by rep. The
// ratios compat / shard_map and legacy / shard_map are the results (target: compat within 1.10x).
//
//   build/bench/pmap_bench [--reps=7] [--quick]
#include <fmt/core.h>
#include <unistd.h>

#include "bench_util.h"
#include "spmd/pmap.h"
#include "spmd/spmd.h"

int main(int argc, char** argv) {
  using namespace spmd;
  using namespace spmd::bench;
  const auto [quick, reps, target] = run_settings(argc, argv);
  initialize({.cpu_devices = 8});
  Mesh mesh = make_mesh({8}, {"i"});
  Array x = arange(8 * 16, DType::kFloat32).reshape({8, 16});

  auto trivial = [](const Array& v) { return v * 2.0f; };
  auto reduce = [](const Array& v) { return psum(v, "i"); };
  auto adapted = [](auto f) {
    return [f](const Array& b) { return expand_dims(f(squeeze(b, std::vector<int>{0})), 0); };
  };
  struct Row {
    const char* name;
    std::function<void()> shard_map_call, legacy_call, compat_call;
  };
  auto sm_trivial = shard_map(adapted(trivial), mesh, P("i"), P("i"), {.check_vma = false});
  auto sm_reduce = shard_map(adapted(reduce), mesh, P("i"), P("i"), {.check_vma = false});
  auto legacy_trivial = legacy::pmap(trivial, "i");
  auto legacy_reduce = legacy::pmap(reduce, "i");
  auto compat_trivial = compat::pmap(trivial, "i");
  auto compat_reduce = compat::pmap(reduce, "i");
  std::vector<Row> rows{
      {"x * 2", [&] { sm_trivial(x); }, [&] { legacy_trivial(x); }, [&] { compat_trivial(x); }},
      {"psum(x)", [&] { sm_reduce(x); }, [&] { legacy_reduce(x); }, [&] { compat_reduce(x); }}};

  fmt::print(
      "spmd pmap paths: {} cores, 8 devices, f32[8,16], median µs per call over {} reps "
      "(ratios per rep, then median)\n",
      sysconf(_SC_NPROCESSORS_ONLN), reps);
  fmt::print(
      "| body | shard_map µs | legacy pmap µs | compat pmap µs | legacy / shard_map | "
      "compat / shard_map |\n|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    std::vector<std::function<void(int64_t)>> paths;
    for (const std::function<void()>* call :
         {&row.shard_map_call, &row.legacy_call, &row.compat_call}) {
      paths.push_back([call](int64_t k) {
        for (int64_t i = 0; i < k; ++i) (*call)();
      });
    }
    std::vector<int64_t> k;
    for (auto& p : paths) k.push_back(calibrate(p, target));
    std::vector<std::vector<double>> t(3);
    std::vector<double> legacy_ratio, compat_ratio;
    for (int rep = 0; rep < reps; ++rep) {
      for (int p = 0; p < 3; ++p) t[p].push_back(time_per_iteration(paths[p], k[p]) * 1e6);
      legacy_ratio.push_back(t[1].back() / t[0].back());
      compat_ratio.push_back(t[2].back() / t[0].back());
    }
    fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |\n", row.name, median(t[0]),
               median(t[1]), median(t[2]), median(legacy_ratio), median(compat_ratio));
    std::fflush(stdout);
  }
  return 0;
}
