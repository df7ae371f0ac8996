// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "spmd/spmd.h"

namespace spmd {
namespace {

TEST(Smoke, PsumOverFourDevices) {
  Mesh mesh = make_mesh({4}, {"i"});
  auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh, P("i"), P());
  Array x = Array::from_vector<int32_t>({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2});
  Array y = f(x);
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{22, 20, 12, 17}));
}

}  // namespace
}  // namespace spmd
