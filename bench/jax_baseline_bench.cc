// SPDX-License-Identifier: Apache-2.0
// spmd's side of the speed baseline against JAX (bench/jax_baseline.sh runs it against
// bench/jax_baseline.py, which documents the workloads): the same workloads, on 8 CPU devices,
// printed as {workload: median seconds per call} JSON on stdout (progress goes to stderr).
//
//   dispatch.shard_map         shard_map(identity) on a pre-sharded f32[8,16], P("i") -> P("i")
//   dispatch.pmap              compat::pmap(v * 2) on a pre-sharded f32[8,16] (pmap on shard_map,
//                              as JAX's own pmap is since 0.8)
//   dispatch.pmap/legacy       the same through legacy::pmap (compared with JAX's pmap too)
//   psum.S, all_gather.S, all_to_all.S
//                              shard_map(collective over "i"), per-device f32 block of S bytes
//   train_step                 one data-parallel SGD step of a 2-layer MLP (jax_baseline.py's
//                              train_step, op for op): gradients and loss in one pmean
//   train_step.per_array       the same step with one pmean per gradient and the loss
//
// Each call is one eager shard_map/pmap call, so dispatch is part of every time, as JAX's jitted
// call is part of its. Repetition counts are calibrated; the median of --reps reps is reported
// (docs/benchmarks.md, "Method").
//
//   build/bench/jax_baseline_bench [--quick] [--reps=7] [--target-s=0.2] [--sizes=4K,1M,16M]
#include <fmt/core.h>
#include <unistd.h>

#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "bench_util.h"
#include "spmd/pmap.h"
#include "spmd/spmd.h"

namespace spmd::bench {
namespace {

constexpr int kDevices = 8;

// jax_baseline.py's FIRST_STEP_LOSS: the first train_step's loss on pattern() data, the check
// that both sides do the same math.
constexpr double kFirstStepLoss = 0.04474314;

void log(const std::string& message) {
  fmt::print(stderr, "{}\n", message);
  std::fflush(stderr);
}

// Median seconds per call() over `reps` reps of a calibrated number of calls.
template <class Call>
double seconds_per_call(Call call, int reps, double target_s) {
  auto body = [&](int64_t k) {
    for (int64_t i = 0; i < k; ++i) call();
  };
  int64_t k = calibrate(body, target_s);
  std::vector<double> t;
  for (int rep = 0; rep < reps; ++rep) t.push_back(time_per_iteration(body, k));
  return median(t);
}

// ((0..n-1) % modulus - modulus / 2) * scale as f32[shape]: jax_baseline.py's pattern().
Array pattern(Shape shape, int modulus, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return ((arange(n) % modulus - modulus / 2) * scale).reshape(shape);
}

using Params = std::tuple<Array, Array, Array, Array>;

using Step = std::tuple<Array, Array, Array, Array, Array>;

// jax_baseline.py's local_grads: relu MLP, mean squared error, hand-written gradient, on this
// device's rows: {g_w1, g_b1, g_w2, g_b2, loss}.
std::vector<Array> local_grads(const Array& x, const Array& t, const Array& w1, const Array& b1,
                               const Array& w2, const Array& b2) {
  Array z = matmul(x, w1) + b1;
  Array h = maximum(z, 0.0f);
  Array d = matmul(h, w2) + b2 - t;
  Array loss = mean(d * d);
  Array dy = d * (2.0f / static_cast<float>(d.size()));
  Array g_w2 = matmul(transpose(h), dy);
  Array g_b2 = sum(dy, 0);
  Array dz = where(z > 0, matmul(dy, transpose(w2)), 0.0f);
  Array g_w1 = matmul(transpose(x), dz);
  Array g_b1 = sum(dz, 0);
  return {g_w1, g_b1, g_w2, g_b2, loss};
}

// jax_baseline.py's update: SGD with the full-batch (pmean'd) gradients; returns the loss too.
Step update(const Array& w1, const Array& b1, const Array& w2, const Array& b2,
            const std::vector<Array>& means) {
  const float lr = 0.01f;
  return {w1 - lr * means[0], b1 - lr * means[1], w2 - lr * means[2], b2 - lr * means[3], means[4]};
}

// jax_baseline.py's train_step: the gradients and the loss pmean'd together (one collective).
Step train_step(const Array& x, const Array& t, const Array& w1, const Array& b1, const Array& w2,
                const Array& b2) {
  return update(w1, b1, w2, b2, pmean(local_grads(x, t, w1, b1, w2, b2), "i"));
}

// jax_baseline.py's train_step_per_array: the same with one pmean per array (five collectives).
Step train_step_per_array(const Array& x, const Array& t, const Array& w1, const Array& b1,
                          const Array& w2, const Array& b2) {
  std::vector<Array> means = local_grads(x, t, w1, b1, w2, b2);
  for (Array& g : means) g = pmean(g, "i");
  return update(w1, b1, w2, b2, means);
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

}  // namespace
}  // namespace spmd::bench

int main(int argc, char** argv) {
  using namespace spmd;
  using namespace spmd::bench;
  bool quick = flag(argc, argv, "quick", "") == "1";
  int reps = std::stoi(flag(argc, argv, "reps", quick ? "2" : "7"));
  double target_s = std::stod(flag(argc, argv, "target-s", quick ? "0.002" : "0.2"));
  std::vector<std::string> sizes =
      split_list(flag(argc, argv, "sizes", quick ? "4K,1M" : "4K,1M,16M"));

  initialize({.cpu_devices = kDevices});
  log(fmt::format("spmd, {} cores, {} CPU devices, median of {} reps",
                  sysconf(_SC_NPROCESSORS_ONLN), kDevices, reps));
  Mesh mesh = make_mesh({kDevices}, {"i"});
  NamedSharding sharded(mesh, P("i"));
  NamedSharding replicated(mesh, P());
  std::vector<std::pair<std::string, double>> results;

  // Dispatch: a trivial body, so the time is the runtime's own per-call overhead.
  Array x = device_put(arange(kDevices * 16, DType::kFloat32).reshape({kDevices, 16}), sharded);
  auto identity = shard_map([](const Array& b) { return b; }, mesh, P("i"), P("i"));
  results.emplace_back("dispatch.shard_map",
                       seconds_per_call([&] { identity(x); }, reps, target_s));
  auto twice = [](const Array& v) { return v * 2.0f; };
  auto compat_pmap = compat::pmap(twice, "i");
  results.emplace_back("dispatch.pmap", seconds_per_call([&] { compat_pmap(x); }, reps, target_s));
  auto legacy_pmap = legacy::pmap(twice, "i");
  results.emplace_back("dispatch.pmap/legacy",
                       seconds_per_call([&] { legacy_pmap(x); }, reps, target_s));
  log("dispatch done");

  // Collectives: device d's block is all d + 1, so the first element of every device's result is
  // known.
  struct Op {
    std::string name;
    Array (*run)(const Array&);
    float first;
  };
  std::vector<Op> ops{
      {"psum", [](const Array& b) { return psum(b, "i"); }, kDevices * (kDevices + 1) / 2.0f},
      {"all_gather", [](const Array& b) { return all_gather(b, "i", {.tiled = true}); }, 1.0f},
      {"all_to_all", [](const Array& b) { return all_to_all(b, "i", 0, 0, {.tiled = true}); },
       1.0f}};
  Array ids = arange(kDevices, DType::kFloat32) + 1.0f;
  for (const std::string& label : sizes) {
    int64_t count = parse_size(label) / 4;
    Array block = device_put(
        broadcast_to(ids.reshape({kDevices, 1}), {kDevices, count}).reshape({kDevices * count}),
        sharded);
    for (const Op& op : ops) {
      auto f = shard_map(op.run, mesh, P("i"), P("i"));
      for (const Shard& s : f(block).addressable_shards()) {
        check(s.data[0].item<float>() == op.first,
              fmt::format("{} at {}: first element {} on {}, expected {}", op.name, label,
                          s.data[0].item<float>(), s.device.str(), op.first));
      }
      results.emplace_back(op.name + "." + label,
                           seconds_per_call([&] { f(block); }, reps, target_s));
    }
    log(fmt::format("collectives at {} done", label));
  }

  // Data-parallel training step: batch 256 (32 rows per device), 64 -> 128 -> 10.
  const int64_t batch = 256, d_in = 64, d_hidden = 128, d_out = 10;
  Array xs = device_put(pattern({batch, d_in}, 13, 0.1f), sharded);
  Array ts = device_put(pattern({batch, d_out}, 7, 0.1f), sharded);
  const Params initial{device_put(pattern({d_in, d_hidden}, 17, 0.01f), replicated),
                       device_put(pattern({d_hidden}, 5, 0.01f), replicated),
                       device_put(pattern({d_hidden, d_out}, 17, 0.01f), replicated),
                       device_put(pattern({d_out}, 5, 0.01f), replicated)};
  using StepFn =
      Step (*)(const Array&, const Array&, const Array&, const Array&, const Array&, const Array&);
  for (auto [name, fn] :
       {std::pair<const char*, StepFn>{"train_step", train_step},
        std::pair<const char*, StepFn>{"train_step.per_array", train_step_per_array}}) {
    auto step =
        shard_map(fn, mesh, {P("i"), P("i"), P(), P(), P(), P()}, {P(), P(), P(), P(), P()});
    Params state = initial;
    // Feeds the updated parameters back, as a training loop does; returns the loss.
    auto one_step = [&] {
      auto [w1, b1, w2, b2, loss] =
          std::apply([&](const auto&... params) { return step(xs, ts, params...); }, state);
      state = {w1, b1, w2, b2};
      return loss;
    };
    double first_loss = one_step().item<float>();
    check(std::abs(first_loss - kFirstStepLoss) <= 1e-5 * kFirstStepLoss,
          fmt::format("{}: first loss {}, JAX's is {}", name, first_loss, kFirstStepLoss));
    results.emplace_back(name, seconds_per_call(one_step, reps, target_s));
  }
  log("train_step done");

  std::string json;
  for (const auto& [name, seconds] : results) {
    json += fmt::format("{}\"{}\": {:.6g}", json.empty() ? "{" : ", ", name, seconds);
  }
  fmt::print("{}}}\n", json);
  return 0;
}
