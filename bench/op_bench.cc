// SPDX-License-Identifier: Apache-2.0
// Small-op benchmark: ns per eager elementwise op on a 16-element f32 array, where the runtime's
// per-op overhead (dtype promotion, allocating the result, dispatching the kernel) is the whole
// cost. Each op runs on the default device (outside any call) and on each device inside one
// shard_map body over 2 devices (1,000 ops per call, so the call's own dispatch is amortised).
// The reference, timed in the same reps, is the work done by hand: a new std::vector<float> of 16
// elements filled by a loop (one allocation and the arithmetic, no dtype or shape logic).
// Reported as median (min) ns per op over reps of calibrated op counts, and the median ratio to
// the reference.
//
//   build/bench/op_bench [--reps=7] [--quick]
//   build/bench/op_bench --calls=N [--row=0]
//     runs one row's op N times on the default device and prints nothing: for counting
//     instructions and allocations per op under callgrind, figures that load does not move.
#include <fmt/core.h>
#include <unistd.h>

#include <functional>
#include <vector>

#include "bench_util.h"
#include "spmd/spmd.h"

namespace {

using namespace spmd;
using namespace spmd::bench;

constexpr int64_t kOpsPerCall = 1000;

struct Row {
  const char* name;
  std::function<Array(const Array&)> op;
};

// ns per op of `op` on the default device, and per op per device inside a 2-device body.
std::pair<std::function<void(int64_t)>, std::function<void(int64_t)>> timed(
    const std::function<Array(const Array&)>& op, const Array& host, const Mesh& mesh) {
  auto on_host = [op, host](int64_t k) {
    Array out;
    for (int64_t i = 0; i < k; ++i) out = op(host);
  };
  auto body = shard_map(
      [op](const Array& block) {
        Array out;
        for (int64_t i = 0; i < kOpsPerCall; ++i) out = op(block);
        return block;  // (sum's result has another rank)
      },
      mesh, P("i"), P("i"));
  Array sharded = concatenate({host, host});
  auto in_body = [body, sharded](int64_t k) {
    for (int64_t i = 0; i < k; i += kOpsPerCall) body(sharded);
  };
  return {on_host, in_body};
}

void reference(int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    std::vector<float> out(16);
    for (int j = 0; j < 16; ++j) out[j] = static_cast<float>(j) * 2.0f;
    asm volatile("" : : "r"(out.data()) : "memory");  // keep the work
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto [quick, reps, target] = run_settings(argc, argv);
  const int64_t fixed_calls = std::stoll(flag(argc, argv, "calls", "0"));
  const size_t fixed_row = std::stoul(flag(argc, argv, "row", "0"));
  initialize({.cpu_devices = 2});
  const Mesh mesh = make_mesh({2}, {"i"});
  const Array v = arange(16, float32);
  const Array w = arange(16, float32) + 1;
  const std::vector<Row> rows = {
      {"v * 2", [](const Array& x) { return x * 2.0f; }},
      {"v * w", [w](const Array& x) { return x * w; }},
      {"v + w * 2", [w](const Array& x) { return x + w * 2.0f; }},
      {"exp(v)", [](const Array& x) { return exp(x); }},
      {"sum(v)", [](const Array& x) { return sum(x); }},
  };
  if (fixed_calls > 0) {
    Array out;
    for (int64_t i = 0; i < fixed_calls; ++i) out = rows.at(fixed_row).op(v);
    return 0;
  }
  fmt::print("spmd small-op benchmark: f32[16], {} cores, median (min) ns per op over {} reps\n",
             sysconf(_SC_NPROCESSORS_ONLN), reps);
  fmt::print(
      "| op | default device | / reference | in a 2-device body, per device | / reference |\n"
      "|---|---|---|---|---|\n");
  const int64_t k_reference = calibrate(reference, target);
  for (const Row& row : quick ? std::vector<Row>{rows[0]} : rows) {
    auto [on_host, in_body] = timed(row.op, v, mesh);
    const int64_t k_host = calibrate(on_host, target);
    const int64_t k_body = std::max(kOpsPerCall, calibrate(in_body, target));
    std::vector<double> host_ns, body_ns, host_ratio, body_ratio;
    for (int r = 0; r < reps; ++r) {
      const double ref = time_per_iteration(reference, k_reference) * 1e9;
      host_ns.push_back(time_per_iteration(on_host, k_host) * 1e9);
      body_ns.push_back(time_per_iteration(in_body, k_body) * 1e9);
      host_ratio.push_back(host_ns.back() / ref);
      body_ratio.push_back(body_ns.back() / ref);
    }
    fmt::print("| {} | {:.0f} ({:.0f}) | {:.1f} | {:.0f} ({:.0f}) | {:.1f} |\n", row.name,
               median(host_ns), minimum(host_ns), median(host_ratio), median(body_ns),
               minimum(body_ns), median(body_ratio));
  }
  return 0;
}
