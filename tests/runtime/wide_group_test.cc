// SPDX-License-Identifier: Apache-2.0
// Reductions over groups of more than 8 devices, where the CPU backend folds the inputs in more
// than one pass over the output (up to 8 inputs a pass): still in rank order, bit for bit, and
// half types still accumulate in float32 across passes. Its own binary, with 20 devices (the
// other suites run with JAX's 8).
#include <cmath>
#include <vector>

#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

constexpr int64_t kDevices = 20;

// `per_device` elements for each device, whose float sums depend on the order of the adds.
std::vector<float> values(int64_t per_device) {
  std::vector<float> v(kDevices * per_device);
  for (size_t k = 0; k < v.size(); ++k) {
    v[k] = std::sin(static_cast<float>(k)) * 1e3f + 1e-3f * static_cast<float>(k % 7);
  }
  return v;
}

// Element e of the rank-order left fold of the devices' blocks, with `op`.
template <class Op>
std::vector<float> folded(const std::vector<float>& v, int64_t per_device, Op op) {
  std::vector<float> out(per_device);
  for (int64_t e = 0; e < per_device; ++e) {
    float acc = v[e];
    for (int64_t q = 1; q < kDevices; ++q) acc = op(acc, v[q * per_device + e]);
    out[e] = acc;
  }
  return out;
}

Array all_reduce(const std::string& op, const Array& x) {
  return shard_map([&](const Array& b) { return op == "psum" ? psum(b, "i") : pmax(b, "i"); },
                   mesh1(kDevices), P("i"), P(), {.check_vma = false})(x);
}

TEST(WideGroup, FloatSumsAreInRankOrderForEverySize) {
  // The last member to arrive computes (small), each owner computes its chunk (large).
  for (int64_t n : {3, 5000, 100003, (1 << 18) + 3}) {
    std::vector<float> v = values(n);
    EXPECT_ARRAY_EQ(all_reduce("psum", floats(v)), floats(folded(v, n, std::plus<float>())))
        << "n = " << n;
  }
}

TEST(WideGroup, MaxAndIntegerSumsSeeEveryDevice) {
  const int64_t n = 3000;
  std::vector<float> v = values(n);
  auto max = [](float a, float b) { return std::max(a, b); };
  EXPECT_ARRAY_EQ(all_reduce("pmax", floats(v)), floats(folded(v, n, max)));
  // Device d's block is d + 1 everywhere: 1 + 2 + ... + 20.
  Array ids = arange(kDevices) + 1;
  Array blocks = broadcast_to(ids.reshape({kDevices, 1}), {kDevices, n}).reshape({kDevices * n});
  EXPECT_ARRAY_EQ(all_reduce("psum", blocks), full({n}, 210, DType::kInt32));
}

TEST(WideGroup, HalfFloatsAccumulateInFloat32AcrossPasses) {
  // Rounded once at the end: rounding after each pass of 8 inputs would change these sums.
  for (int64_t n : {3, 5000}) {
    Array x = floats(values(n)).astype(DType::kBFloat16);
    std::vector<float> v = x.astype(DType::kFloat32).to_vector<float>();
    EXPECT_ARRAY_EQ(all_reduce("psum", x),
                    floats(folded(v, n, std::plus<float>())).astype(DType::kBFloat16))
        << "n = " << n;
  }
}

TEST(WideGroup, ScatteredSumsAreInRankOrder) {
  const int64_t n = 4 * kDevices * 257;
  std::vector<float> v = values(n);
  std::vector<float> total = folded(v, n, std::plus<float>());
  auto f = shard_map([](const Array& b) { return psum_scatter(b, "i", {.tiled = true}); },
                     mesh1(kDevices), P("i"), P("i"), {.check_vma = false});
  EXPECT_ARRAY_EQ(f(floats(v)), floats(total));
}

}  // namespace
}  // namespace spmd

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  spmd::initialize({.cpu_devices = spmd::kDevices});
  return RUN_ALL_TESTS();
}
