// SPDX-License-Identifier: Apache-2.0
// Unit tests of what C++ users expect from the library's types: operator<< and fmt::formatter
// for every value type (spmd/format.h), JAX's dtype constants (spmd/dtype.h), the version
// (spmd/version.h), and the hint of the check_vma error after an all_gather.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "spmd/spmd.h"
#include "spmd/version.h"

namespace spmd {
namespace {

using ::testing::HasSubstr;

template <class T>
std::string streamed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

// Both ways of printing give str(), and fmt applies a string's width and alignment.
template <class T>
void expect_prints(const T& value, const std::string& text) {
  EXPECT_EQ(streamed(value), text);
  EXPECT_EQ(fmt::format("{}", value), text);
  EXPECT_EQ(fmt::format("[{:>{}}]", value, text.size() + 2), "[  " + text + "]");
  EXPECT_EQ(fmt::format("[{:*<{}}]", value, text.size() + 1), "[" + text + "*]");
}

TEST(PrintingTest, EveryValueTypePrintsItsStr) {
  Mesh mesh = make_mesh({2, 4}, {"data", "model"});
  expect_prints(mesh, "Mesh('data': 2, 'model': 4)");
  expect_prints(P("data", {"model"}), "P('data', 'model')");
  expect_prints(P({"data", "model"}), "P(('data', 'model'),)");
  expect_prints(NamedSharding(mesh, P(None, "model")),
                "NamedSharding(mesh=Mesh('data': 2, 'model': 4), spec=P(None, 'model'))");
  expect_prints(devices()[3], "cpu:3");
  expect_prints(DType::kBFloat16, "bfloat16");
  expect_prints(bool_, "bool");
  Array x = arange(4).reshape({2, 2});
  expect_prints(x, x.str());
  expect_prints(x.sharding(), "SingleDeviceSharding(cpu:0)");
  Array sharded = device_put(x, NamedSharding(mesh, P("data")));
  expect_prints(sharded.sharding(), NamedSharding(mesh, P("data")).str());
}

TEST(PrintingTest, ValuesPrintInsideRangesAndTogether) {
  EXPECT_EQ(fmt::format("{} on {}", P("i"), make_mesh({8}, {"i"})), "P('i',) on Mesh('i': 8)");
  std::ostringstream os;
  os << float32 << ' ' << Array::from_vector<float>({1.5f, 2.0f});
  EXPECT_EQ(os.str(), "float32 [1.5, 2.]");
}

TEST(DTypeConstantsTest, AreJaxNamesOfEveryDType) {
  static_assert(bool_ == DType::kBool && int32 == DType::kInt32 && int64 == DType::kInt64 &&
                uint32 == DType::kUInt32 && float16 == DType::kFloat16 &&
                bfloat16 == DType::kBFloat16 && float32 == DType::kFloat32 &&
                float64 == DType::kFloat64 && int8 == DType::kInt8 && int16 == DType::kInt16 &&
                uint8 == DType::kUInt8 && uint16 == DType::kUInt16 && uint64 == DType::kUInt64 &&
                complex64 == DType::kComplex64 && complex128 == DType::kComplex128);
  for (DType dt : {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,
                   bfloat16, float32, float64, complex64, complex128}) {
    EXPECT_EQ(zeros({2, 3}, dt).dtype(), dt) << dt;
    EXPECT_EQ(arange(3).astype(dt).dtype(), dt) << dt;
    EXPECT_EQ(fmt::format("{}", dt), dtype_name(dt));
  }
  EXPECT_EQ(ones({2}, bfloat16).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(full({1}, 2.5, float16).to_vector<float16_t>()[0].bits, float16_t(2.5f).bits);
  EXPECT_EQ(random::uniform(random::PRNGKey(0), {2}, float64).dtype(), DType::kFloat64);
  EXPECT_EQ(promote_types(int32, bfloat16), bfloat16);
}

TEST(VersionTest, MacrosMatchTheLibrary) {
  static_assert(SPMD_VERSION ==
                SPMD_VERSION_MAJOR * 10000 + SPMD_VERSION_MINOR * 100 + SPMD_VERSION_PATCH);
  EXPECT_EQ(version(),
            fmt::format("{}.{}.{}", SPMD_VERSION_MAJOR, SPMD_VERSION_MINOR, SPMD_VERSION_PATCH));
  EXPECT_EQ(version(), SPMD_VERSION_STRING);
}

// The usual cause of "out_specs which require replication" is an all_gather whose result is
// returned replicated: the message names the fix that keeps the check.
TEST(CheckVmaHintTest, AllGatherResultSuggestsToInvariant) {
  Mesh mesh = make_mesh({8}, {"i"});
  auto gathered = [](const Array& b) { return all_gather(b, "i", {.tiled = true}); };
  try {
    shard_map(gathered, mesh, P("i"), P())(arange(16));
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("out_specs which require replication"));
    EXPECT_THAT(e.what(), HasSubstr("check_vma = false"));
    EXPECT_THAT(e.what(), HasSubstr("{.to = spmd::To::kInvariant}"));
  }
  auto invariant = [](const Array& b) {
    return all_gather(b, "i", {.tiled = true, .to = To::kInvariant});
  };
  EXPECT_TRUE(array_equal(shard_map(invariant, mesh, P("i"), P())(arange(16)), arange(16)));
}

}  // namespace
}  // namespace spmd
