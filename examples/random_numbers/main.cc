// SPDX-License-Identifier: Apache-2.0
// Random numbers in a shard_map body: one independent stream per device from a single key, with
// fold_in(key, axis_index) — the JAX idiom. Every number is JAX's own (threefry2x32), so the same
// program in JAX prints the same values.
//
//   SPMD_CPU_DEVICES=8 build/examples/random_numbers/random_numbers
#include <fmt/ranges.h>
#include <spmd/spmd.h>

int main() {
  using spmd::Array;
  using spmd::P;
  namespace rnd = spmd::random;

  spmd::Mesh mesh = spmd::make_mesh({8}, {"i"});
  Array key = rnd::PRNGKey(42);

  // Each device draws 4 uniforms from its own key. The key enters replicated (P()), and
  // fold_in(key, axis_index("i")) makes it differ per device.
  auto draw = spmd::shard_map(
      [](const Array& k) {
        Array mine = rnd::fold_in(k, spmd::axis_index("i"));
        return rnd::uniform(mine, {4}).reshape({1, 4});
      },
      mesh, P(), P("i"));
  Array samples = draw(key);  // f32[8,4]: row d is device d's stream
  fmt::print("per-device samples {}\n", samples.shape());
  for (int64_t d = 0; d < 3; ++d) fmt::print("  device {}: {}\n", d, samples[d]);

  // The same stream outside shard_map: device 2's key, folded on the host.
  Array again = rnd::uniform(rnd::fold_in(key, 2), {4});
  fmt::print("device 2 on the host: {}\n", again);
  fmt::print("equal: {}\n", spmd::array_equal(again, samples[2]));

  // A Monte Carlo estimate of pi: 8 devices x 100000 points, the hit counts summed with psum.
  auto hits = spmd::shard_map(
      [](const Array& k) {
        Array mine = rnd::fold_in(k, spmd::axis_index("i"));
        Array xy = rnd::uniform(mine, {100000, 2});
        Array inside = spmd::sum(xy * xy, 1) <= 1.0f;
        return spmd::psum(spmd::sum(inside), "i");
      },
      mesh, P(), P());
  int32_t inside = hits(key).item<int32_t>();
  fmt::print("pi ~ 4 * {} / 800000 = {:.5f}\n", inside, 4.0 * inside / 800000);

  // Splitting instead of folding: split(key, 8) gives one key per device, sharded over "i".
  Array keys = rnd::split(key, 8);  // uint32[8,2]
  auto normals = spmd::shard_map(
      [](const Array& k) {
        return rnd::normal(k.reshape({2}), {2}).reshape({1, 2});
      },
      mesh, P("i"), P("i"));
  fmt::print("one normal pair per device from split keys:\n{}\n", normals(keys));
  return 0;
}
