// SPDX-License-Identifier: Apache-2.0
// A 1-D heat equation solved with an explicit stencil and halo exchange, written against the
// legacy pmap API.
//
// A rod of 256 cells is split into 8 blocks of 32, one per device. Each step a device sends its
// edge cells to its neighbours with ppermute (the halo), and updates
//   u[k] += r * (u[k-1] - 2 u[k] + u[k+1]),   r = 0.4 (stable for r <= 1/2).
// The rod's ends are fixed walls: the left one at temperature 1, the right one at 0 (device 7
// receives nothing from the right, and ppermute's zeros are exactly that wall). The initial state
// is a hot spot at 3/4 of the rod. Each pmap call runs 500 steps and donates the previous state;
// after each call the program prints the total heat (psum), the peak (pmax) and a few cells, and
// at the end compares with a serial host computation of the same recurrence.
//
//   SPMD_CPU_DEVICES=8 build/examples/legacy/heat_stencil/heat_stencil_legacy
//   (heat_stencil_compat is the same source linked with spmd::compat: same output, byte for byte.)
#include <fmt/core.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using spmd::Array;

constexpr int kDevices = 8;
constexpr int64_t kCellsPerDevice = 32;
constexpr int64_t kCells = kDevices * kCellsPerDevice;
constexpr float kR = 0.4f;
constexpr float kLeftWall = 1.0f;
constexpr int kStepsPerCall = 500;
constexpr int kCalls = 10;

// One explicit step on this device's block u (f32[32]).
Array heat_step(const Array& u) {
  int64_t n = u.shape()[0];
  std::vector<std::pair<int, int>> to_right, to_left;
  for (int d = 0; d + 1 < kDevices; ++d) {
    to_right.emplace_back(d, d + 1);
    to_left.emplace_back(d + 1, d);
  }
  // The neighbours' edge cells; device 0 gets zeros from the left (replaced by the wall) and
  // device 7 zeros from the right (the cold wall).
  Array from_left = spmd::ppermute(spmd::slice(u, {n - 1}, {n}), "i", to_right);
  Array from_right = spmd::ppermute(spmd::slice(u, {0}, {1}), "i", to_left);
  from_left = spmd::where(spmd::axis_index("i") == 0, kLeftWall, from_left);
  Array padded = spmd::concatenate({from_left, u, from_right});  // f32[n + 2]
  Array laplacian = spmd::slice(padded, {0}, {n}) - 2.0f * u + spmd::slice(padded, {2}, {n + 2});
  return u + kR * laplacian;
}

// The serial reference: the same recurrence, in the same float32 operation order.
std::vector<float> host_steps(std::vector<float> u, int steps) {
  std::vector<float> next(u.size());
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < u.size(); ++k) {
      float left = k == 0 ? kLeftWall : u[k - 1];
      float right = k + 1 == u.size() ? 0.0f : u[k + 1];
      next[k] = u[k] + kR * ((left - 2.0f * u[k]) + right);
    }
    std::swap(u, next);
  }
  return u;
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = kDevices});

  // Initial temperature: a Gaussian hot spot of height 8 at x = 0.75.
  std::vector<float> u0(kCells);
  for (int64_t k = 0; k < kCells; ++k) {
    float x = (static_cast<float>(k) + 0.5f) / static_cast<float>(kCells);
    u0[k] = 8.0f * std::exp(-std::pow((x - 0.75f) / 0.05f, 2.0f));
  }
  Array u = Array::from_vector(u0, spmd::Shape{kDevices, kCellsPerDevice});

  // Many steps per call; the old state is donated. Outputs: the new state (stacked), and the
  // total heat and peak temperature (the same on every device, returned once).
  auto advance = spmd::pmap(
      [](Array block) {
        for (int s = 0; s < kStepsPerCall; ++s) block = heat_step(block);
        return std::make_tuple(block, spmd::psum(spmd::sum(block), "i"),
                               spmd::pmax(spmd::max(block), "i"));
      },
      "i", {.out_axes = {0, std::nullopt, std::nullopt}, .donate_argnums = {0}});

  const std::vector<int64_t> probes = {0, 64, 128, 176, 192, 208, 255};
  fmt::print("{} cells on {} devices, r = {}, walls {} | 0\n", kCells, kDevices, kR, kLeftWall);
  fmt::print("{:>5}  {:>10}  {:>8}  cells", "step", "heat", "peak");
  for (int64_t p : probes) fmt::print(" {:>8}", p);
  fmt::print("\n");
  for (int call = 1; call <= kCalls; ++call) {
    auto [next, heat, peak] = advance(u);
    u = next;
    std::vector<float> cells = u.to_vector<float>();
    fmt::print("{:5d}  {:10.6f}  {:8.6f}       ", call * kStepsPerCall, heat.item<float>(),
               peak.item<float>());
    for (int64_t p : probes) fmt::print(" {:8.6f}", cells[p]);
    fmt::print("\n");
  }

  std::vector<float> final_cells = u.to_vector<float>();
  std::vector<float> reference = host_steps(u0, kCalls * kStepsPerCall);
  double checksum = 0.0, max_diff = 0.0;
  for (int64_t k = 0; k < kCells; ++k) {
    checksum += static_cast<double>(k + 1) * final_cells[k];
    max_diff = std::max(max_diff, static_cast<double>(std::abs(final_cells[k] - reference[k])));
  }
  fmt::print("checksum sum((k+1) * u[k]) = {:.6f}\n", checksum);
  fmt::print("max |u - serial reference| = {:.3e}\n", max_diff);
  return 0;
}
