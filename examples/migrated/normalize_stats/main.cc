// SPDX-License-Identifier: Apache-2.0
// Global normalisation statistics over a sharded dataset, written against the legacy pmap API.
//
// 8 devices each hold one shard of 200000 float32 values, drawn with spmd::random from a fixed
// seed (shard d is normal with mean d and scale 1 + d/4, so the shards disagree). Every device
// reduces its own shard to partial sums, psum combines them into the global mean and variance
// (the same value on every device), and a second pmap normalises the data to zero mean and unit
// variance, consuming (donating) the raw shards. The statistics are printed before and after.
//
//   SPMD_CPU_DEVICES=8 build/examples/legacy/normalize_stats/normalize_stats_legacy
//   (normalize_stats_compat is the same source linked with spmd::compat: same output, byte for
//   byte.)
#include <fmt/core.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <optional>
#include <tuple>

namespace {

using spmd::Array;
namespace rnd = spmd::random;

constexpr int kDevices = 8;
constexpr int64_t kShard = 200000;

// Global count, mean, variance, min and max of a dataset sharded over axis "i" (two passes: the
// variance sums squared deviations from the global mean, which float32 tolerates far better than
// E[x^2] - E[x]^2).
std::tuple<Array, Array, Array, Array, Array> global_stats(const Array& x) {
  Array count = spmd::psum(spmd::full({}, static_cast<double>(x.size())), "i");
  Array mean = spmd::psum(spmd::sum(x), "i") / count;
  Array var = spmd::psum(spmd::sum(spmd::square(x - mean)), "i") / count;
  return {count, mean, var, spmd::pmin(spmd::min(x), "i"), spmd::pmax(spmd::max(x), "i")};
}

// x scaled to zero mean and unit variance.
Array normalize_shard(const Array& x, const Array& mean, const Array& var) {
  return (x - mean) / spmd::sqrt(var + 1e-6f);
}

void print_stats(const char* label, const std::tuple<Array, Array, Array, Array, Array>& s) {
  const auto& [count, mean, var, lo, hi] = s;
  fmt::print("{:<7} n={:.0f}  mean={:+.3e}  var={:.6f}  min={:.6f}  max={:.6f}\n", label,
             count.item<float>(), mean.item<float>(), var.item<float>(), lo.item<float>(),
             hi.item<float>());
}

}  // namespace

int main() {
  spmd::initialize({.cpu_devices = kDevices});

  // One PRNG key per device, the classic pmap idiom: split on the host, map over the keys.
  auto generate = [f = [](const Array& key) {
    Array d = spmd::axis_index("i").astype(spmd::DType::kFloat32);
    return rnd::normal(key, {kShard}) * (1.0f + d / 4.0f) + d;
  }](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  };
  Array data = generate(rnd::split(rnd::PRNGKey(20240607), kDevices));  // f32[8, 200000]

  // Per-shard means (out_axes 0: one per device) and the global statistics (out_axes nullopt:
  // every device holds the same psum result, returned once).
  Array shard_means = [f = [](const Array& x) { return spmd::mean(x); }](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
  }(data);
  auto stats = [f = global_stats](const spmd::Array& a0) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
    auto block = [&](const spmd::Array& b0) {
      auto [y0, y1, y2, y3, y4] = f(spmd::squeeze(b0, 0));
      return std::make_tuple(y0, y1, y2, y3, y4);
    };
    return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P(), {.check_vma = false})(a0);
  };

  fmt::print("dataset: {} shards x {} float32 values\n", kDevices, kShard);
  fmt::print("shard means:");
  for (float m : shard_means.to_vector<float>()) fmt::print(" {:.4f}", m);
  fmt::print("\nexpected: mean=+3.500e+00  var=9.093750 (mixture of N(d, (1+d/4)^2), d=0..7)\n");
  auto before = stats(data);
  print_stats("before", before);

  // Normalise: the statistics are broadcast (in_axes nullopt) and the raw data are donated.
  auto normalize = [f = normalize_shard](const spmd::Array& a0, const spmd::Array& a1,
                                         const spmd::Array& a2) {
    spmd::Mesh mesh = spmd::pmap_mesh({a0, a1, a2}, {{"i", {0, std::nullopt, std::nullopt}}});
    auto block = [&](const spmd::Array& b0, const spmd::Array& b1, const spmd::Array& b2) {
      return spmd::expand_dims(f(spmd::squeeze(b0, 0), b1, b2), 0);
    };
    return spmd::shard_map(block, mesh, {spmd::P("i"), spmd::P(), spmd::P()}, spmd::P("i"),
                           {.check_vma = false, .donate_argnums = {0}})(a0, a1, a2);
  };
  Array normalized = normalize(data, std::get<1>(before), std::get<2>(before));
  fmt::print("raw data donated: {}\n", data.is_deleted());
  print_stats("after", stats(normalized));

  for (int64_t d : {0, 3, 7}) {
    fmt::print("shard {} [0:4]:", d);
    for (float v : spmd::slice(normalized[d], {0}, {4}).to_vector<float>()) {
      fmt::print(" {:+.6f}", v);
    }
    fmt::print("\n");
  }
  return 0;
}
