// SPDX-License-Identifier: Apache-2.0
// Data-parallel SGD on a linear regression model, written against the legacy pmap API.
//
// A synthetic dataset y = X w* + b* + noise (8 features, fixed seed) is split into 8 batch shards
// of 256 examples, one per device. Every step each device computes the mean-squared-error
// gradient of its shard by hand (matmul), pmean averages the gradients over the devices, and
// every device applies the same update, so the parameters stay replicated: they go in with
// in_axes nullopt and come out with out_axes nullopt. Prints the loss every 10 steps and the
// learned parameters next to the true ones.
//
//   SPMD_CPU_DEVICES=8 build/examples/legacy/sgd_linear/sgd_linear_legacy
//   (sgd_linear_compat is the same source linked with spmd::compat: same output, byte for byte.)
#include <fmt/core.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>
#include <vector>

namespace {

using spmd::Array;
namespace rnd = spmd::random;

constexpr int kDevices = 8;
constexpr int64_t kBatchPerDevice = 256;
constexpr int64_t kFeatures = 8;
constexpr int kSteps = 100;
constexpr float kLearningRate = 0.05f;

const std::vector<float> kTrueW = {1.5f, -2.0f, 0.5f, 3.0f, -1.0f, 0.25f, 2.0f, -0.75f};
constexpr float kTrueB = 0.3f;

// One SGD step on this device's shard (x: f32[256, 8], y: f32[256]); returns the updated
// parameters and the global loss before the update.
std::tuple<Array, Array, Array> train_step(const Array& w, const Array& b, const Array& x,
                                           const Array& y) {
  Array err = spmd::matmul(x, w) + b - y;  // f32[256]
  float scale = 2.0f / static_cast<float>(x.shape()[0]);
  Array grad_w = spmd::pmean(spmd::matmul(err, x) * scale, "batch");  // d/dw mean(err^2)
  Array grad_b = spmd::pmean(spmd::sum(err) * scale, "batch");
  Array loss = spmd::pmean(spmd::mean(spmd::square(err)), "batch");
  return {w - kLearningRate * grad_w, b - kLearningRate * grad_b, loss};
}

void print_vector(const char* label, const std::vector<float>& v) {
  fmt::print("{}", label);
  for (float e : v) fmt::print(" {:+.6f}", e);
  fmt::print("\n");
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = kDevices});

  // The dataset, laid out [device, example, feature] for pmap over the leading axis.
  Array keys = rnd::split(rnd::PRNGKey(7), 2);
  Array x = rnd::normal(keys[0], {kDevices, kBatchPerDevice, kFeatures});
  Array noise = rnd::normal(keys[1], {kDevices, kBatchPerDevice}) * 0.1f;
  Array y = spmd::matmul(x, Array::from_vector(kTrueW)) + kTrueB + noise;

  // Parameters are broadcast to every device (in_axes nullopt) and come back unstacked
  // (out_axes nullopt): after pmean every device holds the same values.
  auto step =
      spmd::pmap(train_step, "batch",
                 {.in_axes = {std::nullopt, std::nullopt, 0, 0}, .out_axes = {std::nullopt}});

  Array w = spmd::zeros({kFeatures});
  Array b = spmd::zeros({});
  fmt::print("training on {} devices x {} examples, {} features, lr {}\n", kDevices,
             kBatchPerDevice, kFeatures, kLearningRate);
  for (int i = 0; i < kSteps; ++i) {
    auto [new_w, new_b, loss] = step(w, b, x, y);
    if (i % 10 == 0) fmt::print("step {:3d}  loss {:.6f}\n", i, loss.item<float>());
    w = new_w;
    b = new_b;
  }
  Array final_loss = std::get<2>(step(w, b, x, y));
  fmt::print("step {:3d}  loss {:.6f}\n", kSteps, final_loss.item<float>());

  print_vector("learned w:", w.to_vector<float>());
  print_vector("true    w:", kTrueW);
  fmt::print("learned b: {:+.6f}\ntrue    b: {:+.6f}\n", b.item<float>(), kTrueB);
  return 0;
}
