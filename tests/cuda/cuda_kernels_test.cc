// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels, reached through the backend registry like any backend's, against the CPU
// kernels: every op of backend/kernels.h over every dtype, on
// dense, broadcast (0-stride), transposed and negative-stride views, with inputs that include the
// edge values (NaN, +-inf, -0.0, integer extremes, zero divisors). Outputs must be the CPU's bits
// (any NaN matching any NaN) except where cuda_kernels.h says CUDA's math library or cuBLAS
// decides them: there the test
// allows kLibraryUlps (math functions) or a relative 1e-5 (f32 matmul; halves compare after
// rounding).
// Without a GPU every test reports itself skipped with the CUDA runtime's reason.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/registry.h"
#include "spmd/dtype.h"

namespace spmd::internal::cuda {
namespace {

constexpr DType kAll[] = {DType::kBool,   DType::kInt8,    DType::kInt16,    DType::kInt32,
                          DType::kInt64,  DType::kUInt8,   DType::kUInt16,   DType::kUInt32,
                          DType::kUInt64, DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                          DType::kFloat64};

// Why there is no GPU to test on, or "" when there is one.
std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " +
           cudaGetErrorString(status);
  }
  return count == 0 ? "no CUDA device: cudaGetDeviceCount found 0" : "";
}

// Host bytes of `values` as elements of dt, converted by the CPU kernels, whose rules the CUDA
// ones share.
std::vector<char> bytes_of(DType dt, const std::vector<double>& values) {
  const auto count = static_cast<int64_t>(values.size());
  std::vector<char> bytes(static_cast<size_t>(count * itemsize(dt)));
  backend_for(Platform::kCpu)
      .kernels(Device{})
      .copy(ConstView{values.data(), DType::kFloat64, {count}, {1}},
            MutView{bytes.data(), dt, {count}, {1}});
  return bytes;
}

// Host bytes of `count` elements of dt: edge values first (unless `edges` is false), then seeded
// random multiples of 1/8 in [-100, 100].
std::vector<char> sample(DType dt, int64_t count, unsigned seed, bool edges_first = true) {
  std::mt19937_64 rng(seed);
  const double edges[] = {0.0,
                          -0.0,
                          1.0,
                          -1.0,
                          2.5,
                          -3.5,
                          1e30,
                          -1e30,
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::quiet_NaN(),
                          65504.0,
                          7.0,
                          -7.0};
  std::vector<double> values(static_cast<size_t>(count));
  std::uniform_real_distribution<double> uniform(-100, 100);
  for (int64_t i = 0; i < count; ++i) {
    const bool edge = edges_first && i < static_cast<int64_t>(std::size(edges));
    values[i] = edge ? edges[i] : std::round(uniform(rng) * 8) / 8;
  }
  return bytes_of(dt, values);
}

const Device kGpu{0, Platform::kCuda, 0};

// How far CUDA's math functions may land from glibc's, in ulp: the CUDA Programming Guide's tables
// give up to 4 ulp from the correctly rounded result for these functions (tanf, acoshf, powf) and
// glibc's manual up to 2-3 on x86-64, so two correct libraries can be 6 apart. A wrong function
// or a wrong operand is thousands of ulp off.
constexpr int kLibraryUlps = 8;

// A copy of host bytes in cuda:0's memory, freed with the object.
class DeviceBytes {
 public:
  explicit DeviceBytes(const std::vector<char>& host)
      : size_(host.size()), data_(backend_for(kGpu).allocate(kGpu, size_)) {
    backend_for(kGpu).from_host(kGpu, host.data(), data_, size_);
  }
  ~DeviceBytes() { backend_for(kGpu).deallocate(kGpu, data_, size_); }
  std::vector<char> host() const {
    std::vector<char> out(size_);
    backend_for(kGpu).to_host(kGpu, data_, out.data(), size_);  // waits for the kernels
    return out;
  }
  void* data() const { return data_; }

 private:
  size_t size_;
  void* data_;
};

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = no_gpu_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }

 public:
  const Kernels& cpu() const { return backend_for(Platform::kCpu).kernels(Device{}); }
  const Kernels& gpu() const { return backend_for(kGpu).kernels(kGpu); }
};

// Equal outputs of dtype dt: the same bits, except that a NaN equals any NaN (a GPU makes
// canonical NaNs where x86 makes its default NaN, and neither keeps payloads the same way).
::testing::AssertionResult same(DType dt, const std::vector<char>& cpu,
                                const std::vector<char>& gpu) {
  if (!is_floating(dt)) {
    if (cpu == gpu) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "different bytes";
  }
  const int64_t n = static_cast<int64_t>(cpu.size()) / itemsize(dt);
  std::vector<double> c(n), g(n);
  const Kernels& k = backend_for(Platform::kCpu).kernels(Device{});
  k.copy(ConstView{cpu.data(), dt, {n}, {1}}, MutView{c.data(), DType::kFloat64, {n}, {1}});
  k.copy(ConstView{gpu.data(), dt, {n}, {1}}, MutView{g.data(), DType::kFloat64, {n}, {1}});
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(c[i]) && std::isnan(g[i])) continue;
    if (std::memcmp(&c[i], &g[i], sizeof(double)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << ": cpu " << c[i] << ", gpu " << g[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs `run(kernels, inputs..., output)` on both backends over the same input bytes and returns
// {cpu output, gpu output}.
template <class Run>
std::pair<std::vector<char>, std::vector<char>> both(const CudaKernelsTest& t,
                                                     const std::vector<std::vector<char>>& inputs,
                                                     size_t out_bytes, Run run) {
  std::vector<char> cpu_out(out_bytes, 0x5a);
  std::vector<const void*> cpu_in;
  for (const auto& v : inputs) cpu_in.push_back(v.data());
  run(t.cpu(), cpu_in, cpu_out.data());
  std::vector<std::unique_ptr<DeviceBytes>> dev;
  std::vector<const void*> gpu_in;
  for (const auto& v : inputs) {
    dev.push_back(std::make_unique<DeviceBytes>(v));
    gpu_in.push_back(dev.back()->data());
  }
  DeviceBytes gpu_out(std::vector<char>(out_bytes, 0x5a));
  run(t.gpu(), gpu_in, gpu_out.data());
  return {cpu_out, gpu_out.host()};
}

TEST_F(CudaKernelsTest, CopyConvertsEveryPairLikeTheCpuThroughTransposedViews) {
  for (DType from : kAll) {
    for (DType to : kAll) {
      // A [3, 5] view read transposed as [5, 3].
      auto [c, g] =
          both(*this, {sample(from, 15, 1)}, 15 * itemsize(to),
               [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                 k.copy(ConstView{in[0], from, {5, 3}, {1, 5}}, MutView{out, to, {5, 3}, {3, 1}});
               });
      EXPECT_TRUE(same(to, c, g)) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST_F(CudaKernelsTest, FillAndIotaWriteTheCpuBits) {
  for (DType dt : kAll) {
    for (Scalar value : {Scalar{true}, Scalar{int64_t{-7}}, Scalar{1e40}, Scalar{-2.5}}) {
      auto [c, g] = both(*this, {}, 12 * itemsize(dt),
                         [&](const Kernels& k, const std::vector<const void*>&, void* out) {
                           k.fill(MutView{out, dt, {3, 2}, {4, 2}}, value);  // strided
                         });
      EXPECT_TRUE(same(dt, c, g)) << dtype_name(dt);
    }
    auto [c, g] = both(*this, {}, 300 * itemsize(dt),
                       [&](const Kernels& k, const std::vector<const void*>&, void* out) {
                         k.iota(MutView{out, dt, {300}, {1}});
                       });
    EXPECT_TRUE(same(dt, c, g)) << dtype_name(dt);
  }
}

// Whether two float outputs agree to `ulps` units in the last place (NaN with NaN).
template <class F, class U>
bool close_ulps(const std::vector<char>& a, const std::vector<char>& b, int ulps) {
  for (size_t i = 0; i + sizeof(F) <= a.size(); i += sizeof(F)) {
    F x, y;
    std::memcpy(&x, a.data() + i, sizeof(F));
    std::memcpy(&y, b.data() + i, sizeof(F));
    if (std::isnan(x) && std::isnan(y)) continue;
    U ux, uy;
    std::memcpy(&ux, &x, sizeof(F));
    std::memcpy(&uy, &y, sizeof(F));
    const U diff = ux > uy ? ux - uy : uy - ux;
    if ((std::signbit(x) != std::signbit(y) && x != y) || diff > static_cast<U>(ulps)) return false;
  }
  return true;
}

TEST_F(CudaKernelsTest, UnaryOpsMatchTheCpu) {
  const UnaryOp exact[] = {UnaryOp::kNeg,   UnaryOp::kAbs,  UnaryOp::kSign,  UnaryOp::kSquare,
                           UnaryOp::kFloor, UnaryOp::kCeil, UnaryOp::kRound, UnaryOp::kSqrt};
  std::vector<UnaryOp> library = {UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kTanh, UnaryOp::kErfInv};
  for (int op = static_cast<int>(UnaryOp::kSin); op <= static_cast<int>(UnaryOp::kCbrt); ++op) {
    library.push_back(static_cast<UnaryOp>(op));
  }
  for (DType dt : kAll) {
    const std::vector<char> x = sample(dt, 64, 2);
    auto run_op = [&](UnaryOp op) {
      return both(
          *this, {x}, 64 * itemsize(dt),
          [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
            // Read backwards (negative stride) from the last element.
            k.unary(op,
                    ConstView{static_cast<const char*>(in[0]) + 63 * itemsize(dt), dt, {64}, {-1}},
                    MutView{out, dt, {64}, {1}});
          });
    };
    for (UnaryOp op : exact) {
      const bool defined = is_floating(dt) || op == UnaryOp::kNeg || op == UnaryOp::kAbs ||
                           op == UnaryOp::kSign || op == UnaryOp::kSquare;
      if (!defined) continue;
      auto [c, g] = run_op(op);
      EXPECT_TRUE(same(dt, c, g)) << dtype_name(dt) << " op " << static_cast<int>(op);
    }
    if (dt == DType::kFloat32) {
      for (UnaryOp op : library) {
        auto [c, g] = run_op(op);
        EXPECT_TRUE((close_ulps<float, uint32_t>(c, g, kLibraryUlps)))
            << "op " << static_cast<int>(op);
      }
    }
    if (dt == DType::kFloat64) {
      for (UnaryOp op : library) {
        auto [c, g] = run_op(op);
        EXPECT_TRUE((close_ulps<double, uint64_t>(c, g, kLibraryUlps)))
            << "op " << static_cast<int>(op);
      }
    }
  }
}

TEST_F(CudaKernelsTest, BinaryOpsMatchTheCpuWithBroadcasting) {
  const BinaryOp ops[] = {BinaryOp::kAdd,      BinaryOp::kSub, BinaryOp::kMul,  BinaryOp::kDiv,
                          BinaryOp::kFloorDiv, BinaryOp::kRem, BinaryOp::kMax,  BinaryOp::kMin,
                          BinaryOp::kAnd,      BinaryOp::kOr,  BinaryOp::kXor,  BinaryOp::kEq,
                          BinaryOp::kNe,       BinaryOp::kLt,  BinaryOp::kLe,   BinaryOp::kGt,
                          BinaryOp::kGe,       BinaryOp::kPow, BinaryOp::kAtan2};
  for (DType dt : kAll) {
    const std::vector<char> a = sample(dt, 16 * 14, 3), b = sample(dt, 14, 4);
    for (BinaryOp op : ops) {
      const bool bitwise = op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
      if ((bitwise && is_floating(dt)) || (op == BinaryOp::kAtan2 && !is_floating(dt))) continue;
      const bool compare = op >= BinaryOp::kEq;
      const DType out_dt = compare ? DType::kBool : dt;
      // a is [16, 14]; b is one row broadcast over the 16 rows (stride 0).
      auto [c, g] = both(*this, {a, b}, 16 * 14 * itemsize(out_dt),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.binary(op, ConstView{in[0], dt, {16, 14}, {14, 1}},
                                    ConstView{in[1], dt, {16, 14}, {0, 1}},
                                    MutView{out, out_dt, {16, 14}, {14, 1}});
                         });
      if ((op == BinaryOp::kPow || op == BinaryOp::kAtan2) && is_floating(dt)) {
        if (dt == DType::kFloat64) {
          EXPECT_TRUE((close_ulps<double, uint64_t>(c, g, kLibraryUlps)));
        } else if (dt == DType::kFloat32) {
          EXPECT_TRUE((close_ulps<float, uint32_t>(c, g, kLibraryUlps)));
        }
        continue;
      }
      EXPECT_TRUE(same(out_dt, c, g)) << dtype_name(dt) << " op " << static_cast<int>(op);
    }
  }
}

TEST_F(CudaKernelsTest, SelectMovesTheChosenBits) {
  for (DType dt : kAll) {
    auto [c, g] = both(
        *this, {sample(DType::kBool, 40, 5), sample(dt, 40, 6), sample(dt, 1, 7)},
        40 * itemsize(dt), [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
          k.select(ConstView{in[0], DType::kBool, {40}, {1}}, ConstView{in[1], dt, {40}, {1}},
                   ConstView{in[2], dt, {40}, {0}}, MutView{out, dt, {40}, {1}});
        });
    EXPECT_TRUE(same(dt, c, g)) << dtype_name(dt);
  }
}

TEST_F(CudaKernelsTest, ReductionsFoldInTheCpuOrder) {
  const ReduceOp ops[] = {ReduceOp::kSum,    ReduceOp::kProd,   ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kArgMax, ReduceOp::kArgMin, ReduceOp::kAny, ReduceOp::kAll};
  for (DType dt : kAll) {
    // [6, 50, 7] read with the last two axes swapped, reduced over 1 or 2 trailing axes; 350
    // elements per row take the pairwise sum past several blocks.
    const std::vector<char> x = sample(dt, 6 * 50 * 7, 8);
    for (ReduceOp op : ops) {
      const bool boolean = op == ReduceOp::kAny || op == ReduceOp::kAll;
      if (boolean != (dt == DType::kBool)) continue;
      for (int reduced : {1, 2}) {
        const DType out_dt =
            op == ReduceOp::kArgMax || op == ReduceOp::kArgMin ? DType::kInt32 : dt;
        const int64_t outputs = reduced == 1 ? 6 * 7 : 6;
        auto [c, g] = both(*this, {x}, outputs * itemsize(out_dt),
                           [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                             k.reduce(op, ConstView{in[0], dt, {6, 7, 50}, {350, 1, 7}}, reduced,
                                      MutView{out, out_dt, reduced == 1 ? Shape{6, 7} : Shape{6},
                                              reduced == 1 ? Strides{7, 1} : Strides{1}});
                           });
        EXPECT_TRUE(same(out_dt, c, g))
            << dtype_name(dt) << " op " << static_cast<int>(op) << " over " << reduced;
      }
    }
  }
}

TEST_F(CudaKernelsTest, LongFloatSumsRunInParallelInTheCpuOrder) {
  // Rows long enough for the many-threads-per-row kernel: lengths that leave a remainder, a
  // count of 16-element blocks with several set bits, and rows read transposed.
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : {int64_t{4096}, int64_t{100003}, int64_t{16 * 1000 + 7}}) {
      const std::vector<char> x = sample(dt, 3 * n, 11);
      auto [c, g] = both(*this, {x}, 3 * itemsize(dt),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.reduce(ReduceOp::kSum, ConstView{in[0], dt, {3, n}, {1, 3}}, 1,
                                    MutView{out, dt, {3}, {1}});
                         });
      EXPECT_TRUE(same(dt, c, g)) << dtype_name(dt) << " rows of " << n;
    }
  }
}

// Rows of 5000 take the block-per-row kernel for every fold but float sums (above) and float
// products. Row 0 is random (its maximum and minimum recur: ties go to the first); row 1 has NaNs
// at 4000 and 300 (the first NaN wins, and another thread holds the later one); row 2 is negative
// but for +0 at 300 and -0 at 700 (the maximum is the first zero, +0); row 3 positive but for -0
// at 900 and +0 at 1200. Read row-major, transposed, and as one 20000-element row.
TEST_F(CudaKernelsTest, LongRowsFoldInParallelWithTheCpuBits) {
  constexpr int64_t kRows = 4, kLength = 5000;
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> uniform(1, 100);
  std::vector<double> values(kRows * kLength);
  for (int64_t i = 0; i < kLength; ++i) {
    values[i] = std::round((uniform(rng) - 50.5) * 8) / 8;
    values[kLength + i] = std::round(uniform(rng) * 8) / 8;
    values[2 * kLength + i] = -std::round(uniform(rng) * 8) / 8;
    values[3 * kLength + i] = std::round(uniform(rng) * 8) / 8;
  }
  values[kLength + 4000] = values[kLength + 300] = std::numeric_limits<double>::quiet_NaN();
  values[2 * kLength + 300] = 0.0;
  values[2 * kLength + 700] = -0.0;
  values[3 * kLength + 900] = -0.0;
  values[3 * kLength + 1200] = 0.0;
  const ReduceOp ops[] = {ReduceOp::kSum,    ReduceOp::kProd,   ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kArgMax, ReduceOp::kArgMin, ReduceOp::kAny, ReduceOp::kAll};
  struct Layout {
    const char* name;
    Shape shape;
    Strides strides;
    int reduced;
  };
  const Layout layouts[] = {{"rows", {kRows, kLength}, {kLength, 1}, 1},
                            {"transposed", {kRows, kLength}, {1, kRows}, 1},
                            {"one row", {kRows, kLength}, {kLength, 1}, 2}};
  for (DType dt : kAll) {
    const std::vector<char> x = bytes_of(dt, values);
    for (ReduceOp op : ops) {
      const bool boolean = op == ReduceOp::kAny || op == ReduceOp::kAll;
      if (boolean != (dt == DType::kBool)) continue;
      const DType out_dt = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin ? DType::kInt32 : dt;
      for (const Layout& l : layouts) {
        const int64_t outputs = l.reduced == 1 ? kRows : 1;
        auto [c, g] = both(*this, {x}, outputs * itemsize(out_dt),
                           [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                             k.reduce(op, ConstView{in[0], dt, l.shape, l.strides}, l.reduced,
                                      MutView{out, out_dt, l.reduced == 1 ? Shape{kRows} : Shape{},
                                              l.reduced == 1 ? Strides{1} : Strides{}});
                           });
        EXPECT_TRUE(same(out_dt, c, g))
            << dtype_name(dt) << " op " << static_cast<int>(op) << ", " << l.name;
      }
    }
  }
}

TEST_F(CudaKernelsTest, MatmulIsExactForIntegersAndCloseForFloats) {
  for (DType dt : kAll) {
    // [2, 9, 33] @ [33, 5] with b broadcast over the batch and read transposed.
    const std::vector<char> a = sample(dt, 2 * 9 * 33, 9, false), b = sample(dt, 33 * 5, 10, false);
    auto [c, g] = both(*this, {a, b}, 2 * 9 * 5 * itemsize(dt),
                       [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                         k.matmul(ConstView{in[0], dt, {2, 9, 33}, {297, 33, 1}},
                                  ConstView{in[1], dt, {2, 33, 5}, {0, 1, 33}},
                                  MutView{out, dt, {2, 9, 5}, {45, 5, 1}});
                       });
    if (!is_floating(dt)) {
      EXPECT_EQ(c, g) << dtype_name(dt);
      continue;
    }
    // Compare in float64, as the CPU kernels convert.
    std::vector<double> cv(90), gv(90);
    backend_for(Platform::kCpu)
        .kernels(Device{})
        .copy(ConstView{c.data(), dt, {90}, {1}}, MutView{cv.data(), DType::kFloat64, {90}, {1}});
    backend_for(Platform::kCpu)
        .kernels(Device{})
        .copy(ConstView{g.data(), dt, {90}, {1}}, MutView{gv.data(), DType::kFloat64, {90}, {1}});
    const double tolerance = dt == DType::kFloat64 ? 1e-12 : dt == DType::kFloat32 ? 1e-5 : 1e-2;
    for (int i = 0; i < 90; ++i) {
      EXPECT_NEAR(cv[i], gv[i], tolerance * std::max(1.0, std::fabs(cv[i])))
          << dtype_name(dt) << " element " << i;
    }
  }
}

// Complex views (cuda_complex_kernels.h): every op the CPU's complex kernels serve. Bits must be
// equal for conversions, fill, iota, +, -, *, comparisons, max/min, conj, real, imag, round,
// square and the folds; division, pow, abs, angle, sign and the transcendental functions come from
// each side's complex library, compared by the relative size of the difference (kComplexTolerance)
// on inputs that keep every result finite.
constexpr DType kComplexTypes[] = {DType::kComplex64, DType::kComplex128};

DType part_dtype(DType dt) { return dt == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64; }

// `count` complex elements of dt, parts seeded multiples of 1/8 in [low, high].
std::vector<char> complex_sample(DType dt, int64_t count, unsigned seed, double low, double high) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> parts(static_cast<size_t>(2 * count));
  for (double& p : parts) p = std::round(uniform(rng) * 8) / 8;
  return bytes_of(part_dtype(dt), parts);
}

// |gpu - cpu| <= tolerance * |cpu| for every complex element (parts as doubles); NaN parts match
// NaN parts and infinities match equal infinities.
::testing::AssertionResult complex_close(DType dt, const std::vector<char>& cpu,
                                         const std::vector<char>& gpu) {
  const DType part = part_dtype(dt);
  const double tolerance = dt == DType::kComplex64 ? 1e-5 : 1e-12;
  const int64_t n = static_cast<int64_t>(cpu.size()) / itemsize(part);
  std::vector<double> c(n), g(n);
  const Kernels& k = backend_for(Platform::kCpu).kernels(Device{});
  k.copy(ConstView{cpu.data(), part, {n}, {1}}, MutView{c.data(), DType::kFloat64, {n}, {1}});
  k.copy(ConstView{gpu.data(), part, {n}, {1}}, MutView{g.data(), DType::kFloat64, {n}, {1}});
  for (int64_t i = 0; i + 1 < n; i += 2) {
    const double dr = g[i] - c[i], di = g[i + 1] - c[i + 1];
    const bool finite = std::isfinite(c[i]) && std::isfinite(c[i + 1]);
    const bool same_specials =
        (std::isnan(c[i]) == std::isnan(g[i])) && (std::isnan(c[i + 1]) == std::isnan(g[i + 1])) &&
        (std::isnan(c[i]) || std::isfinite(c[i]) || c[i] == g[i]) &&
        (std::isnan(c[i + 1]) || std::isfinite(c[i + 1]) || c[i + 1] == g[i + 1]);
    if (finite ? std::hypot(dr, di) > tolerance * std::hypot(c[i], c[i + 1]) : !same_specials) {
      return ::testing::AssertionFailure()
             << "element " << i / 2 << ": cpu (" << c[i] << ", " << c[i + 1] << "), gpu (" << g[i]
             << ", " << g[i + 1] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_F(CudaKernelsTest, ComplexConversionsFillAndIotaMatchTheCpuBits) {
  for (DType z : kComplexTypes) {
    // Edge parts too (NaN, infinities, -0.0): conversions move them.
    const std::vector<char> x = sample(part_dtype(z), 40, 13);  // 20 complex elements
    for (DType dt : kAll) {
      auto [c, g] =
          both(*this, {x}, 20 * itemsize(dt),
               [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                 k.copy(ConstView{in[0], z, {4, 5}, {1, 4}}, MutView{out, dt, {4, 5}, {5, 1}});
               });
      EXPECT_TRUE(same(dt, c, g)) << dtype_name(z) << " -> " << dtype_name(dt);
      const std::vector<char> r = sample(dt, 20, 14);
      auto [cz, gz] = both(*this, {r}, 20 * itemsize(z),
                           [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                             k.copy(ConstView{in[0], dt, {20}, {1}}, MutView{out, z, {20}, {1}});
                           });
      EXPECT_TRUE(same(part_dtype(z), cz, gz)) << dtype_name(dt) << " -> " << dtype_name(z);
    }
    for (DType other : kComplexTypes) {
      auto [c, g] = both(*this, {x}, 20 * itemsize(other),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.copy(ConstView{in[0], z, {20}, {1}}, MutView{out, other, {20}, {1}});
                         });
      EXPECT_TRUE(same(part_dtype(other), c, g)) << dtype_name(z) << " -> " << dtype_name(other);
    }
    for (Scalar value : {Scalar{2.5}, Scalar{int64_t{-3}}, Scalar{true}}) {
      auto [c, g] = both(*this, {}, 6 * itemsize(z),
                         [&](const Kernels& k, const std::vector<const void*>&, void* out) {
                           k.fill(MutView{out, z, {2, 3}, {3, 1}}, value);
                         });
      EXPECT_TRUE(same(part_dtype(z), c, g)) << "fill " << dtype_name(z);
    }
    auto [c, g] = both(*this, {}, 9 * itemsize(z),
                       [&](const Kernels& k, const std::vector<const void*>&, void* out) {
                         k.iota(MutView{out, z, {9}, {1}});
                       });
    EXPECT_TRUE(same(part_dtype(z), c, g)) << "iota " << dtype_name(z);
  }
}

TEST_F(CudaKernelsTest, ComplexElementwiseOpsMatchTheCpu) {
  const UnaryOp exact_unary[] = {UnaryOp::kNeg,  UnaryOp::kConj,   UnaryOp::kReal,
                                 UnaryOp::kImag, UnaryOp::kSquare, UnaryOp::kRound};
  std::vector<UnaryOp> library_unary = {UnaryOp::kAbs, UnaryOp::kAngle, UnaryOp::kSign,
                                        UnaryOp::kExp, UnaryOp::kLog,   UnaryOp::kSqrt,
                                        UnaryOp::kTanh};
  for (int op = static_cast<int>(UnaryOp::kSin); op <= static_cast<int>(UnaryOp::kExp2); ++op) {
    library_unary.push_back(static_cast<UnaryOp>(op));
  }
  const BinaryOp exact_binary[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kMax,
                                   BinaryOp::kMin, BinaryOp::kEq,  BinaryOp::kNe,  BinaryOp::kLt,
                                   BinaryOp::kLe,  BinaryOp::kGt,  BinaryOp::kGe};
  for (DType z : kComplexTypes) {
    const DType part = part_dtype(z);
    const std::vector<char> x = complex_sample(z, 30, 15, -100, 100);
    const std::vector<char> small = complex_sample(z, 30, 16, -3, 3);
    auto unary = [&](UnaryOp op, const std::vector<char>& in_bytes) {
      const bool to_real = op == UnaryOp::kAbs || op == UnaryOp::kAngle || op == UnaryOp::kReal ||
                           op == UnaryOp::kImag;
      const DType out_dt = to_real ? part : z;
      auto result = both(
          *this, {in_bytes}, 30 * itemsize(out_dt),
          [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
            k.unary(op, ConstView{in[0], z, {5, 6}, {1, 5}}, MutView{out, out_dt, {5, 6}, {6, 1}});
          });
      return std::tuple{result.first, result.second, out_dt};
    };
    for (UnaryOp op : exact_unary) {
      auto [c, g, out_dt] = unary(op, x);
      EXPECT_TRUE(same(is_complex(out_dt) ? part : out_dt, c, g))
          << dtype_name(z) << " unary " << static_cast<int>(op);
    }
    for (UnaryOp op : library_unary) {
      auto [c, g, out_dt] = unary(op, small);
      const bool ok = is_complex(out_dt) ? bool(complex_close(z, c, g))
                      : out_dt == DType::kFloat32
                          ? close_ulps<float, uint32_t>(c, g, kLibraryUlps)
                          : close_ulps<double, uint64_t>(c, g, kLibraryUlps);
      EXPECT_TRUE(ok) << dtype_name(z) << " unary " << static_cast<int>(op);
    }
    // b is one row broadcast over 6 rows; divisors and exponents stay away from 0 and overflow.
    const std::vector<char> b = complex_sample(z, 5, 17, -100, 100);
    const std::vector<char> divisor = complex_sample(z, 5, 18, 1, 4);
    auto binary = [&](BinaryOp op, const std::vector<char>& lhs, const std::vector<char>& rhs) {
      const bool compare = op >= BinaryOp::kEq;
      const DType out_dt = compare ? DType::kBool : z;
      auto result = both(*this, {lhs, rhs}, 30 * itemsize(out_dt),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.binary(op, ConstView{in[0], z, {6, 5}, {5, 1}},
                                    ConstView{in[1], z, {6, 5}, {0, 1}},
                                    MutView{out, out_dt, {6, 5}, {5, 1}});
                         });
      return std::tuple{result.first, result.second, out_dt};
    };
    for (BinaryOp op : exact_binary) {
      auto [c, g, out_dt] = binary(op, x, b);
      EXPECT_TRUE(same(out_dt == DType::kBool ? out_dt : part, c, g))
          << dtype_name(z) << " binary " << static_cast<int>(op);
    }
    for (BinaryOp op : {BinaryOp::kDiv, BinaryOp::kPow}) {
      auto [c, g, out_dt] = binary(op, op == BinaryOp::kPow ? small : x, divisor);
      EXPECT_TRUE(complex_close(z, c, g)) << dtype_name(z) << " binary " << static_cast<int>(op);
    }
  }
}

TEST_F(CudaKernelsTest, ComplexReductionsAndMatmulMatchTheCpu) {
  for (DType z : kComplexTypes) {
    const DType part = part_dtype(z);
    // [4, 6] read transposed; 6 factors of at most |4 + 4i| keep products finite.
    const std::vector<char> x = complex_sample(z, 24, 19, -4, 4);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin}) {
      auto [c, g] =
          both(*this, {x}, 4 * itemsize(z),
               [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                 k.reduce(op, ConstView{in[0], z, {4, 6}, {1, 4}}, 1, MutView{out, z, {4}, {1}});
               });
      EXPECT_TRUE(same(part, c, g)) << dtype_name(z) << " reduce " << static_cast<int>(op);
    }
    // A long sum takes the pairwise order past several 16-element blocks.
    const std::vector<char> long_row = complex_sample(z, 1000, 20, -100, 100);
    auto [c, g] = both(
        *this, {long_row}, itemsize(z),
        [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
          k.reduce(ReduceOp::kSum, ConstView{in[0], z, {1000}, {1}}, 1, MutView{out, z, {}, {}});
        });
    EXPECT_TRUE(same(part, c, g)) << dtype_name(z) << " long sum";
    // Rows of 4096 elements and more take a block each, in the same order: two rows of 5000,
    // read row-major and transposed.
    const std::vector<char> rows = complex_sample(z, 10000, 23, -100, 100);
    for (bool transposed : {false, true}) {
      auto [cr, gr] = both(*this, {rows}, 2 * itemsize(z),
                           [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                             const Strides strides = transposed ? Strides{1, 2} : Strides{5000, 1};
                             k.reduce(ReduceOp::kSum, ConstView{in[0], z, {2, 5000}, strides}, 1,
                                      MutView{out, z, {2}, {1}});
                           });
      EXPECT_TRUE(same(part, cr, gr))
          << dtype_name(z) << " sums of long rows, transposed " << transposed;
    }
    // [2, 5, 7] @ [7, 3], b broadcast over the batch and read transposed (cuBLAS against BLIS).
    const std::vector<char> a = complex_sample(z, 70, 21, -10, 10);
    const std::vector<char> bm = complex_sample(z, 21, 22, -10, 10);
    auto [cm, gm] = both(*this, {a, bm}, 30 * itemsize(z),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.matmul(ConstView{in[0], z, {2, 5, 7}, {35, 7, 1}},
                                    ConstView{in[1], z, {2, 7, 3}, {0, 1, 7}},
                                    MutView{out, z, {2, 5, 3}, {15, 3, 1}});
                         });
    EXPECT_TRUE(complex_close(z, cm, gm)) << dtype_name(z) << " matmul";
  }
}

// K == 0 writes +0 (cuBLAS, which refuses a leading dimension of 0, is not called); an empty
// output writes nothing. The output starts as 0x5a bytes, so an untouched +0 cannot pass.
TEST_F(CudaKernelsTest, MatmulOfEmptyOperands) {
  for (DType dt : kAll) {
    const std::vector<char> one = sample(dt, 1, 11, false);
    auto [c, g] = both(*this, {one, one}, 2 * 3 * 4 * itemsize(dt),
                       [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                         k.matmul(ConstView{in[0], dt, {2, 3, 0}, {0, 0, 1}},
                                  ConstView{in[1], dt, {2, 0, 4}, {0, 4, 1}},
                                  MutView{out, dt, {2, 3, 4}, {12, 4, 1}});
                       });
    EXPECT_EQ(c, std::vector<char>(c.size(), 0)) << dtype_name(dt) << ": K == 0 on the cpu";
    EXPECT_EQ(g, std::vector<char>(g.size(), 0)) << dtype_name(dt) << ": K == 0 on cuda";
    auto [ce, ge] = both(*this, {one, one}, itemsize(dt),
                         [&](const Kernels& k, const std::vector<const void*>& in, void* out) {
                           k.matmul(ConstView{in[0], dt, {2, 3, 1}, {3, 1, 1}},
                                    ConstView{in[1], dt, {2, 1, 0}, {0, 0, 1}},
                                    MutView{out, dt, {2, 3, 0}, {0, 0, 1}});
                         });
    EXPECT_EQ(ce, ge) << dtype_name(dt) << ": N == 0 must write nothing";
  }
}

}  // namespace
}  // namespace spmd::internal::cuda
