// SPDX-License-Identifier: Apache-2.0
// Monte Carlo estimate of pi with per-device PRNG streams, written against the legacy pmap API.
//
// One key is replicated to the 8 devices (device_put_replicated, the pmap-era helper); each device
// derives its own stream with fold_in(key, axis_index("i")), and a fresh one per round with a
// second fold_in. Every round each device draws 250000 points in the unit square and counts those
// inside the quarter circle; psum adds the counts. Prints the running estimate per round, the
// per-device counts of the last round and the final estimate with its standard error.
//
//   SPMD_CPU_DEVICES=8 build/examples/legacy/monte_carlo_pi/monte_carlo_pi_legacy
//   (monte_carlo_pi_compat is the same source linked with spmd::compat: same output, byte for
//   byte.)
#include <fmt/core.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <tuple>

namespace {

using spmd::Array;
namespace rnd = spmd::random;

constexpr int kDevices = 8;
constexpr int64_t kSamplesPerRound = 250000;  // per device
constexpr int kRounds = 4;

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = kDevices});

  // uint32[8, 2]: the same key on every device.
  Array keys = spmd::device_put_replicated(rnd::PRNGKey(31415), spmd::devices());

  // The round number is a C++ int: a static (broadcast) argument of the pmapped function.
  auto count_inside = spmd::pmap(
      [](const Array& key, int round) {
        Array stream =
            rnd::fold_in(rnd::fold_in(key, spmd::axis_index("i")), static_cast<uint32_t>(round));
        Array xy = rnd::uniform(stream, {kSamplesPerRound, 2});
        Array r2 = spmd::sum(spmd::square(xy), 1);
        Array local = spmd::sum(r2 <= 1.0f);  // int32 count on this device
        return std::make_tuple(local, spmd::psum(local, "i"));
      },
      "i");

  int64_t inside = 0;
  int64_t total = 0;
  Array per_device;
  for (int round = 0; round < kRounds; ++round) {
    auto [local, global] = count_inside(keys, round);
    per_device = local;
    inside += global.to_vector<int32_t>()[0];  // every device holds the same psum
    total += kDevices * kSamplesPerRound;
    fmt::print("round {}  inside {:8d} / {:8d}  pi ~ {:.6f}\n", round, inside, total,
               4.0 * static_cast<double>(inside) / static_cast<double>(total));
  }

  fmt::print("last round per device:");
  for (int32_t c : per_device.to_vector<int32_t>()) fmt::print(" {}", c);
  fmt::print("\n");

  double p = static_cast<double>(inside) / static_cast<double>(total);
  double estimate = 4.0 * p;
  double stderr_pi = 4.0 * std::sqrt(p * (1.0 - p) / static_cast<double>(total));
  fmt::print("pi estimate {:.6f} +- {:.6f} (error {:+.6f})\n", estimate, stderr_pi,
             estimate - std::numbers::pi);
  return 0;
}
