// SPDX-License-Identifier: Apache-2.0
// Dispatch benchmark: µs per call of a shard_map whose body does (almost) nothing, so the time is
// the runtime's own overhead: launching the call on every device's worker thread, forming the
// blocks, running the body, and assembling the outputs. Reported per device count, median and
// min of reps of calibrated call counts. The last column makes a new Mesh and shard_map for every
// call (same devices): what a program that builds its mapped functions in a loop pays, including
// finding the communicator for the psum.
//
//   build/bench/dispatch_bench [--reps=7] [--quick]
//   build/bench/dispatch_bench --only=2          the table's row of 2 devices only
//   build/bench/dispatch_bench --calls=N --column=0..3 [--devices=1]
//     makes N calls of one column's function and prints nothing: what
//     bench/dispatch_instructions.sh runs under callgrind to count instructions per call, a figure
//     that load does not move.
#include <fmt/core.h>
#include <unistd.h>

#include "bench_util.h"
#include "spmd/spmd.h"

int main(int argc, char** argv) {
  using namespace spmd;
  using namespace spmd::bench;
  const auto [quick, reps, target] = run_settings(argc, argv);
  const int64_t fixed_calls = std::stoll(flag(argc, argv, "calls", "0"));
  const int fixed_column = std::stoi(flag(argc, argv, "column", "0"));
  const int fixed_devices = std::stoi(flag(argc, argv, "devices", "1"));
  const int only = std::stoi(flag(argc, argv, "only", "0"));
  initialize({.cpu_devices = 8});
  if (fixed_calls == 0) {
    fmt::print("spmd dispatch benchmark: {} cores, median (min) µs per call over {} reps\n",
               sysconf(_SC_NPROCESSORS_ONLN), reps);
    fmt::print(
        "| devices | identity body | empty body | psum of 64 B | psum of 64 B, new mesh |\n"
        "|---|---|---|---|---|\n");
  }
  std::vector<int> counts{1, 2, 4, 8};
  if (fixed_calls > 0 || only > 0) counts = {fixed_calls > 0 ? fixed_devices : only};
  for (int n : counts) {
    Mesh mesh = make_mesh({n}, {"i"});
    Array x = arange(2 * n);
    Array y = arange(16 * n, DType::kFloat32);
    auto identity = shard_map([](const Array& b) { return b; }, mesh, P("i"), P("i"));
    auto empty = shard_map([]() {}, mesh, std::vector<P>{}, std::vector<P>{});
    auto reduce = shard_map([](const Array& b) { return psum(b, "i"); }, mesh, P("i"), P());
    auto fresh = [&] {
      return shard_map([](const Array& b) { return psum(b, "i"); }, make_mesh({n}, {"i"}), P("i"),
                       P())(y);
    };
    std::vector<std::function<void(int64_t)>> bodies{[&](int64_t k) {
                                                       for (int64_t i = 0; i < k; ++i) identity(x);
                                                     },
                                                     [&](int64_t k) {
                                                       for (int64_t i = 0; i < k; ++i) empty();
                                                     },
                                                     [&](int64_t k) {
                                                       for (int64_t i = 0; i < k; ++i) reduce(y);
                                                     },
                                                     [&](int64_t k) {
                                                       for (int64_t i = 0; i < k; ++i) fresh();
                                                     }};
    if (fixed_calls > 0) {
      bodies.at(static_cast<size_t>(fixed_column))(fixed_calls);
      return 0;
    }
    std::string row = fmt::format("| {} |", n);
    for (auto& body : bodies) {
      int64_t k = calibrate(body, target);
      std::vector<double> t;
      for (int rep = 0; rep < reps; ++rep) t.push_back(time_per_iteration(body, k) * 1e6);
      row += fmt::format(" {:.2f} ({:.2f}) |", median(t), minimum(t));
    }
    fmt::print("{}\n", row);
    std::fflush(stdout);
  }
  return 0;
}
