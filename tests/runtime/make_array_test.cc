// SPDX-License-Identifier: Apache-2.0
// make_array_from_callback, make_array_from_process_local_data and the host-local/global helpers
// in one process (their multi-process behaviour is checked bit for bit in
// tests/distributed/collectives_check.cc).
#include "spmd/make_array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "spmd/device.h"
#include "spmd/errors.h"
#include "spmd/mesh.h"
#include "spmd/ops.h"

namespace spmd {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// full[index] for a 2-D float32 array, computed on the host.
Array slice_of(const Array& full, const Index& index) {
  const std::vector<float> values = full.to_vector<float>();
  const int64_t cols = full.shape()[1];
  std::vector<float> out;
  for (int64_t r = index[0].first; r < index[0].second; ++r) {
    for (int64_t c = index[1].first; c < index[1].second; ++c) out.push_back(values[r * cols + c]);
  }
  return Array::from_vector(
      out, Shape{index[0].second - index[0].first, index[1].second - index[1].first});
}

TEST(MakeArray, FromCallbackFillsEveryShardWithItsSlice) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  const NamedSharding sharding(mesh, P("x", "y"));
  const Array full = arange(24, DType::kFloat32).reshape({4, 6});
  std::vector<Index> asked;
  Array a = make_array_from_callback({4, 6}, sharding, [&](const Index& index) {
    asked.push_back(index);
    return slice_of(full, index);
  });
  EXPECT_EQ(a.shape(), (Shape{4, 6}));
  EXPECT_EQ(a.dtype(), DType::kFloat32);
  EXPECT_EQ(a.sharding().named().spec(), P("x", "y"));
  EXPECT_THAT(a.to_vector<float>(), ElementsAreArray(full.to_vector<float>()));
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[1], (Index{{0, 2}, {3, 6}}));  // mesh order: (x=0, y=1)
  for (const Shard& s : a.addressable_shards()) {
    EXPECT_EQ(s.data.sharding().devices(), std::vector<Device>{s.device});
    EXPECT_THAT(s.data.to_vector<float>(),
                ElementsAreArray(slice_of(full, s.index).to_vector<float>()));
  }
}

TEST(MakeArray, FromCallbackCallsOncePerReplicatedBlock) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  int calls = 0;
  Array a = make_array_from_callback({4, 3}, NamedSharding(mesh, P("x")), [&](const Index& index) {
    ++calls;
    return full(Shape{2, 3}, static_cast<double>(index[0].first), DType::kInt32);
  });
  EXPECT_EQ(calls, 2);  // two row blocks, each held by the 4 devices along y
  EXPECT_EQ(a.addressable_shards().size(), 8u);
  EXPECT_THAT(a.to_vector<int32_t>(), ElementsAreArray({0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2}));
}

TEST(MakeArray, FromCallbackNamesTheIndexOfABadBlock) {
  Mesh mesh = make_mesh({2}, {"x"});
  const NamedSharding sharding(mesh, P("x"));
  EXPECT_THAT(
      [&] {
        make_array_from_callback({4, 3}, sharding, [](const Index&) {
          return zeros({3, 3}, DType::kFloat32);
        });
      },
      ThrowsMessage<ValueError>(HasSubstr(
          "the callback returned float32[3,3] for index [0:2, 0:3], but the shards of this "
          "sharding have shape (2, 3)")));
  EXPECT_THAT(
      [&] {
        make_array_from_callback({4}, sharding, [](const Index& index) {
          return zeros({2}, index[0].first == 0 ? DType::kFloat32 : DType::kInt32);
        });
      },
      ThrowsMessage<ValueError>(HasSubstr("returned int32[2] for index [2:4] but float32")));
  EXPECT_THAT(
      [&] { make_array_from_callback({4}, sharding, [](const Index&) { return Array(); }); },
      ThrowsMessage<ValueError>(HasSubstr("an invalid Array for index [0:2]")));
  // The sharding must fit the shape, as for device_put.
  EXPECT_THROW(make_array_from_callback({3}, sharding, [](const Index&) { return zeros({1}); }),
               ValueError);
}

TEST(MakeArray, ProcessLocalDataInOneProcessIsDevicePut) {
  Mesh mesh = make_mesh({4}, {"x"});
  const NamedSharding sharding(mesh, P("x"));
  const Array local = arange(8, DType::kInt32);
  Array a = make_array_from_process_local_data(sharding, local);
  EXPECT_EQ(a.sharding().named().spec(), P("x"));
  EXPECT_THAT(a.to_vector<int32_t>(), ElementsAreArray(local.to_vector<int32_t>()));
  EXPECT_EQ(make_array_from_process_local_data(sharding, local, Shape{8}).shape(), Shape{8});
  EXPECT_THAT([&] { make_array_from_process_local_data(sharding, local, Shape{16}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "in a single-process run the local data is the whole array, but it has shape "
                  "(8) and global_shape is (16)")));
}

// In one process every device is local: the helpers only lay the data out (their multi-process
// behaviour, through the pmap cases, is checked in tests/distributed/collectives_check.cc).
TEST(MakeArray, LocalMeshInOneProcessIsTheMesh) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  EXPECT_EQ(local_mesh(mesh), mesh);
}

TEST(MakeArray, HostLocalAndGlobalInOneProcessLayTheDataOut) {
  Mesh mesh = make_mesh({4}, {"x"});
  const Array local = arange(12, DType::kFloat32).reshape({4, 3});
  Array global = host_local_array_to_global_array(local, mesh, P("x"));
  EXPECT_EQ(global.sharding().named(), NamedSharding(mesh, P("x")));
  EXPECT_THAT(global.to_vector<float>(), ElementsAreArray(local.to_vector<float>()));
  const Array wide = local.reshape({3, 4});
  Array back = global_array_to_host_local_array(wide, mesh, P(None, "x"));
  EXPECT_EQ(back.sharding().named(), NamedSharding(mesh, P(None, "x")));
  EXPECT_EQ(back.addressable_shards()[1].index, (Index{{0, 3}, {1, 2}}));
  EXPECT_THAT(back.to_vector<float>(), ElementsAreArray(wide.to_vector<float>()));
  EXPECT_THAT([&] { global_array_to_host_local_array(local, mesh, P("y")); },
              ThrowsMessage<ValueError>(HasSubstr("'y'")));
}

}  // namespace
}  // namespace spmd
