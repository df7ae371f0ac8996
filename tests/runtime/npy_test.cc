// SPDX-License-Identifier: Apache-2.0
// Unit tests for spmd/npy.h: round trips of every dtype, the exact bytes of the format, the
// versions, byte orders and Fortran order a reader meets, malformed files, and (when Python 3
// with NumPy is installed; scripts/setup.sh installs it) files exchanged with NumPy itself.
#include "spmd/npy.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "spmd/spmd.h"

namespace spmd {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr DType kEveryDType[] = {bool_,    int8,    int16,   int32,     int64,
                                 uint8,    uint16,  uint32,  uint64,    float16,
                                 bfloat16, float32, float64, complex64, complex128};

// The 2x3 array of dtype `dt` that npy_numpy_check.py expects (the same formulas).
Array expected(DType dt) {
  Array i = arange(6);
  Array values;
  if (dt == bool_) {
    values = i % 3 == 0;
  } else if (dt == int8 || dt == int16 || dt == int32 || dt == int64) {
    values = (i * 7 - 20).astype(dt);
  } else if (dt == uint8 || dt == uint16) {
    values = (i * 40).astype(dt);
  } else if (dt == uint32) {
    values = i.astype(uint32) * 700000000u;
  } else if (dt == uint64) {  // past int64's range
    values = i.astype(uint64) * Array::scalar<uint64_t>(3000000000000000000u);
  } else if (is_complex(dt)) {
    const Array j = Array::scalar(std::complex<double>(0, 1));
    values = ((i.astype(float64) - 2.5) * 0.75 + i.astype(float64) * 0.5 * j).astype(dt);
  } else {
    values = ((i.astype(float64) - 2.5) * 0.75).astype(dt);
  }
  return values.reshape({2, 3});
}

std::string bytes_of(const Array& x) {
  std::ostringstream out;
  save(out, x);
  return out.str();
}

Array from_bytes(const std::string& bytes) {
  std::istringstream in(bytes);
  return load(in);
}

// A .npy file by hand: `version` (1, 2 or 3), header dict text and raw data.
std::string npy_file(int version, const std::string& dict, const std::string& data) {
  std::string header = dict + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  }
  return out + header + data;
}

// A scratch folder, removed at the end of the test.
class NpyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("spmd_npy_test_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST(NpyTest, RoundTripsEveryDType) {
  for (DType dt : kEveryDType) {
    Array x = expected(dt);
    Array y = from_bytes(bytes_of(x));
    EXPECT_EQ(y.dtype(), dt) << dt;
    EXPECT_TRUE(array_equal(x, y)) << dt << ": " << y;
  }
}

TEST(NpyTest, RoundTripsScalarsEmptyArraysAndSpecialValues) {
  for (const Array& x :
       {Array::scalar<float>(2.5f), zeros({0, 3}, int64), arange(24, float32).reshape({2, 3, 4}),
        Array::from_vector<double>({-0.0, 1e300, std::numeric_limits<double>::quiet_NaN(),
                                    -std::numeric_limits<double>::infinity()}),
        Array::from_vector<float16_t>({float16_t::from_bits(0x7c01), float16_t::from_bits(1)}),
        Array::from_vector<uint32_t>({0xffffffffu, 0})}) {
    Array y = from_bytes(bytes_of(x));
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_TRUE(array_equal(x, y)) << x << " came back as " << y;
  }
}

// The bytes np.save writes: magic, version 1.0, the dict with room for the first extent to grow,
// padded with spaces to a multiple of 64 bytes, then the data in C order.
TEST(NpyTest, WritesNumPysBytes) {
  std::string bytes = bytes_of(Array::from_vector<int32_t>({1, -2, 3}, Shape{3}));
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  std::string header = dict + std::string(20, ' ');  // 21 digits of room, minus "3"
  header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
  std::string data("\x01\0\0\0\xfe\xff\xff\xff\x03\0\0\0", 12);
  EXPECT_EQ(bytes,
            std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + header + data);
  EXPECT_EQ((bytes.size() - data.size()) % 64, 0u);
  EXPECT_THAT(bytes_of(Array::scalar<bool>(true)), HasSubstr("'descr': '|b1'"));
  EXPECT_THAT(bytes_of(Array::scalar<bool>(true)), HasSubstr("'shape': (), }"));
  EXPECT_THAT(bytes_of(zeros({2, 3}, bfloat16)), HasSubstr("'descr': '<V2'"));
  EXPECT_THAT(bytes_of(zeros({2, 3}, float64)), HasSubstr("'shape': (2, 3), }"));
}

TEST(NpyTest, SavesTheGlobalValueOfAShardedArray) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  Array x = arange(32, float32).reshape({4, 8});
  Array sharded = device_put(x, NamedSharding(mesh, P("x", "y")));
  EXPECT_EQ(bytes_of(sharded), bytes_of(x));
}

TEST(NpyTest, ReadsVersions2And3BigEndianAndFortranOrder) {
  std::string ints("\0\0\0\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0\x05\0\0\0\x06", 24);
  // Big-endian int32, Fortran order: columns first.
  Array y =
      from_bytes(npy_file(2, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", ints));
  EXPECT_EQ(y.dtype(), int32);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 5, 2, 4, 6}));
  // Version 3.0, double-quoted keys, no trailing comma, Python 2 longs.
  Array z = from_bytes(npy_file(3, R"({"descr": "<u4", "shape": (1L,), "fortran_order": False})",
                                std::string("\x07\0\0\0", 4)));
  EXPECT_EQ(z.to_vector<uint32_t>(), (std::vector<uint32_t>{7}));
  Array v = from_bytes(npy_file(1, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }",
                                std::string("\x80\x3f\x00\xc0", 4)));
  EXPECT_EQ(v.dtype(), bfloat16);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  Array b = from_bytes(npy_file(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                                std::string("\x00\x02", 2)));
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(NpyTest, RejectsMalformedFilesWithTheReason) {
  auto error_of = [](const std::string& bytes) -> std::string {
    try {
      from_bytes(bytes);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  std::string good = bytes_of(arange(6));
  EXPECT_THAT(error_of("PK\x03\x04 a zip archive"), HasSubstr("does not start with \\x93NUMPY"));
  EXPECT_THAT(error_of(good.substr(0, good.size() - 3)),
              HasSubstr("the data is truncated (expected 24 bytes, found 21)"));
  EXPECT_THAT(error_of(good.substr(0, 20)), HasSubstr("the header is truncated"));
  EXPECT_THAT(error_of(npy_file(1, "{'descr': '<m8', 'fortran_order': False, 'shape': (1,), }",
                                "abcdefgh")),
              HasSubstr("spmd has no dtype for the .npy type '<m8'"));
  EXPECT_THAT(error_of(npy_file(
                  1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", "")),
              HasSubstr("structured dtype"));
  EXPECT_THAT(error_of(npy_file(1, "{'descr': '<i4', 'shape': (1,), }", "abcd")),
              HasSubstr("lacks one of 'descr', 'fortran_order', 'shape'"));
  EXPECT_THAT(
      error_of(npy_file(1, "{'descr': '<i4', 'fortran_order': Maybe, 'shape': (1,), }", "abcd")),
      HasSubstr("expected True or False"));
  std::string v4 = good;
  v4[6] = 4;
  EXPECT_THAT(error_of(v4), HasSubstr("version 4.0 is not supported"));
  EXPECT_THROW(from_bytes(good.substr(0, 20)), ValueError);
  EXPECT_THROW(from_bytes(npy_file(1, "{'descr': '<c32', 'fortran_order': False, 'shape': (), }",
                                   "0123456789abcdef0123456789abcdef")),
               TypeError);
}

TEST_F(NpyFileTest, SavesAndLoadsFilesAndNamesMissingOnes) {
  save(path("x.npy"), expected(float32));
  EXPECT_TRUE(array_equal(load(path("x.npy")), expected(float32)));
  try {
    load(path("missing.npy"));
    FAIL() << "expected OSError";
  } catch (const OSError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open '" + path("missing.npy") + "'"));
  }
  EXPECT_THROW(save(path("no/such/folder/x.npy"), arange(2)), OSError);
}

// Files go both ways between spmd and NumPy, and the bytes spmd writes are NumPy's.
TEST_F(NpyFileTest, ExchangesEveryDTypeWithNumPy) {
  // The python3 CMake found (maybe a virtualenv's or pyenv's), else Debian's.
  std::string python;
  for (std::string candidate : {std::string(SPMD_PYTHON3), std::string("/usr/bin/python3")}) {
    std::string probe = fmt::format("'{}' -c 'import numpy' >/dev/null 2>&1", candidate);
    if (!candidate.empty() && std::system(probe.c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    GTEST_SKIP() << "neither '" << SPMD_PYTHON3 << "' nor /usr/bin/python3 can import numpy "
                 << "(scripts/setup.sh installs python3-numpy)";
  }
  for (DType dt : kEveryDType) save(path(fmt::format("spmd_{}.npy", dt)), expected(dt));
  std::string command =
      fmt::format("'{}' '{}' '{}' 2>&1", python, SPMD_NPY_CHECK_SCRIPT, dir_.string());
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  ASSERT_EQ(pclose(pipe), 0) << output;
  EXPECT_THAT(output, HasSubstr("read every file spmd wrote"));

  auto read_file = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (DType dt : kEveryDType) {
    for (const char* variant : {"", "_fortran", "_big"}) {
      Array y = load(path(fmt::format("numpy_{}{}.npy", dt, variant)));
      EXPECT_EQ(y.dtype(), dt) << dt << variant;
      EXPECT_TRUE(array_equal(y, expected(dt))) << dt << variant << ": " << y;
    }
    std::string numpy_bytes = read_file(path(fmt::format("numpy_{}.npy", dt)));
    if (dt == bfloat16) {
      // Plain NumPy's 2-byte void is '|V2'; ml_dtypes' bfloat16 (what JAX saves, and spmd) is
      // '<V2' (checked with ml_dtypes 0.7.0), a descr of the same length.
      numpy_bytes.replace(numpy_bytes.find("'|V2'"), 5, "'<V2'");
    }
    EXPECT_EQ(numpy_bytes, read_file(path(fmt::format("spmd_{}.npy", dt))))
        << "np.save and spmd::save wrote different bytes for " << dt;
  }
}

}  // namespace
}  // namespace spmd
