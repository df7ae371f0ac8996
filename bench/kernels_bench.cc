// SPDX-License-Identifier: Apache-2.0
// Kernel benchmark, two tables of ratios to references measured in the same run:
//   - transpose: a 2-D transpose (spmd::transpose, which writes a dense copy through a strided
//     view) as a ratio to a dense copy of the same array (spmd::copy), so that only the access
//     pattern differs: same bytes, same allocation. Square f32 matrices.
//   - matmul: spmd::matmul of square f32 and f64 matrices on one device in GFLOP/s (2 n^3 per
//     product), against the BLAS spmd links (BLIS, serial) called directly on dense row-major
//     buffers, timed in interleaved reps; spmd/direct is the median of the per-rep ratios. NumPy's
//     numpy.matmul (bench/numpy_matmul.py, in its own process, so not interleaved) is the last
//     column when python3 has NumPy (SPMD_PYTHON3 names the interpreter; else python3 on PATH,
//     then /usr/bin/python3, where Debian's python3-numpy lives), with the BLAS it loaded.
//     A last row runs the product on both devices of a 2-device mesh inside shard_map, against
//     two threads calling gemm at once: with a single-threaded BLAS each device thread runs its
//     own gemm, so the ratio should be near 1, and the process should hold no threads beyond the
//     main thread and the device threads. The scaling row runs the same [2n, n] @ [n, n] product
//     on one device and over the 2-device mesh: its ratio is the speed-up of 2 devices over 1.
// Times are median (min, for GFLOP/s the best) of reps of calibrated call counts.
//
//   build/bench/kernels_bench [--reps=7] [--quick]   (--quick: n = 256 only)
#include <blis.h>
#include <cblas.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "spmd/spmd.h"

namespace {

using namespace spmd;
using namespace spmd::bench;

void transpose_table(const RunSettings& settings) {
  fmt::print(
      "transpose / dense copy of f32[n, n], median (min) over {} reps\n"
      "| n | copy µs | transpose µs | ratio |\n|---|---|---|---|\n",
      settings.reps);
  const auto sizes =
      settings.quick ? std::vector<int64_t>{256} : std::vector<int64_t>{256, 1024, 4096};
  for (int64_t n : sizes) {
    Array x = arange(n * n, DType::kFloat32).reshape({n, n});
    auto dense = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) copy(x);
    };
    auto transposed = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) transpose(x, {1, 0});
    };
    const int64_t k_dense = calibrate(dense, settings.target_s);
    const int64_t k_transposed = calibrate(transposed, settings.target_s);
    std::vector<double> t_dense, t_transposed, ratio;
    for (int rep = 0; rep < settings.reps; ++rep) {
      t_dense.push_back(time_per_iteration(dense, k_dense) * 1e6);
      t_transposed.push_back(time_per_iteration(transposed, k_transposed) * 1e6);
      ratio.push_back(t_transposed.back() / t_dense.back());
    }
    fmt::print("| {} | {:.1f} ({:.1f}) | {:.1f} ({:.1f}) | {:.2f} |\n", n, median(t_dense),
               minimum(t_dense), median(t_transposed), minimum(t_transposed), median(ratio));
    std::fflush(stdout);
  }
}

// NumPy's GFLOP/s per (dtype name, n), from bench/numpy_matmul.py: "median (best)" text, or the
// reason there is none.
struct NumpyResults {
  std::map<std::pair<std::string, int64_t>, std::string> gflops;
  std::string note;  // the BLAS NumPy loaded, or why NumPy was skipped
};

std::string run_command(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return output;
  }
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  *status = pclose(pipe);
  return output;
}

NumpyResults numpy_matmul(const std::vector<int64_t>& sizes, const RunSettings& settings) {
  std::vector<std::string> pythons{"python3", "/usr/bin/python3"};
  if (const char* chosen = std::getenv("SPMD_PYTHON3")) pythons = {chosen};
  std::string size_list;
  for (int64_t n : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(n);
  NumpyResults results;
  for (const std::string& python : pythons) {
    int status = 0;
    const std::string output = run_command(
        fmt::format("{} {} --sizes={} --dtypes=float32,float64 --reps={} --target={} 2>&1", python,
                    SPMD_NUMPY_MATMUL_SCRIPT, size_list, settings.reps, settings.target_s),
        &status);
    if (status != 0) {
      results.note += fmt::format("{}: {}; ", python, output.substr(0, output.find('\n')));
      continue;
    }
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string dtype, median_gflops, best_gflops;
      int64_t n = 0;
      if (line.rfind("blas ", 0) == 0) {
        results.note = fmt::format("NumPy ({}) calls {}", python, line.substr(5));
      } else if (fields >> dtype >> n >> median_gflops >> best_gflops) {
        results.gflops[{dtype, n}] = fmt::format("{} ({})", median_gflops, best_gflops);
      }
    }
    return results;
  }
  results.note = "NumPy skipped: " + results.note;
  return results;
}

void gemm(int n, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}
void gemm(int n, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
}

// Values in [-1, 1] with few distinct bits, the same as numpy_matmul.py's.
template <class T>
std::vector<T> test_values(int64_t n) {
  std::vector<T> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(static_cast<int>(i % 17) - 8) / 8;
  return v;
}

// Threads of this process now, from /proc/self/status.
int process_threads() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int value = -1;
  while (status >> key) {
    if (key == "Threads:") status >> value;
  }
  return value;
}

struct Rates {
  std::vector<double> spmd, direct, ratio;  // GFLOP/s per rep, and their ratio
};

// Interleaved reps of `ours` (spmd) and `direct`, each doing `products` products of 2 n^3 flops
// per iteration.
Rates measure(int64_t n, double products, const std::function<void(int64_t)>& ours,
              const std::function<void(int64_t)>& direct, const RunSettings& settings) {
  const int64_t k_ours = calibrate(ours, settings.target_s);
  const int64_t k_direct = calibrate(direct, settings.target_s);
  const double gflop = products * 2.0 * static_cast<double>(n * n * n) / 1e9;
  Rates r;
  for (int rep = 0; rep < settings.reps; ++rep) {
    r.spmd.push_back(gflop / time_per_iteration(ours, k_ours));
    r.direct.push_back(gflop / time_per_iteration(direct, k_direct));
    r.ratio.push_back(r.spmd.back() / r.direct.back());
  }
  return r;
}

std::string rate(const std::vector<double>& gflops) {
  return fmt::format("{:.1f} ({:.1f})", median(gflops),
                     *std::max_element(gflops.begin(), gflops.end()));
}

template <class T>
void matmul_rows(const std::vector<int64_t>& sizes, const NumpyResults& numpy,
                 const RunSettings& settings) {
  const DType dtype = dtype_of_v<T>;
  const std::string name{dtype_name(dtype)};
  for (int64_t n : sizes) {
    const std::vector<T> values = test_values<T>(n);
    std::vector<T> c(values.size());
    const Array x = Array::from_vector<T>(values, Shape{n, n});
    const Array y = transpose(x).astype(dtype);  // dense, like numpy_matmul.py's b
    const std::vector<T> y_values = y.to_vector<T>();
    const auto ours = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) matmul(x, y);
    };
    const auto direct = [&](int64_t k) {
      for (int64_t i = 0; i < k; ++i) {
        gemm(static_cast<int>(n), values.data(), y_values.data(), c.data());
      }
    };
    const Rates r = measure(n, 1, ours, direct, settings);
    const auto found = numpy.gflops.find({name, n});
    fmt::print("| {} | {} | {} | {} | {:.2f} | {} |\n", name, n, rate(r.spmd), rate(r.direct),
               median(r.ratio), found == numpy.gflops.end() ? "-" : found->second);
    std::fflush(stdout);
  }
}

// f32 [2n, n] @ [n, n] row-sharded over a 2-device mesh, each device multiplying [n, n] blocks,
// against two threads calling gemm directly at the same time.
void two_device_row(int64_t n, const RunSettings& settings) {
  const std::vector<float> values = test_values<float>(n);
  const Mesh mesh = make_mesh({2}, {"i"});
  const Array w = Array::from_vector<float>(values, Shape{n, n});
  const Array x = device_put(concatenate({w, w}), NamedSharding(mesh, P("i")));
  auto f = shard_map([](const Array& xb, const Array& wb) { return matmul(xb, wb); }, mesh,
                     {P("i"), P()}, P("i"));
  const auto ours = [&](int64_t k) {
    for (int64_t i = 0; i < k; ++i) f(x, w);
  };
  const auto direct = [&](int64_t k) {
    const auto products = [&] {
      std::vector<float> c(values.size());
      for (int64_t i = 0; i < k; ++i) {
        gemm(static_cast<int>(n), values.data(), values.data(), c.data());
      }
    };
    std::thread other(products);
    products();
    other.join();
  };
  const Rates r = measure(n, 2, ours, direct, settings);
  fmt::print("| float32, 2 devices | {} | {} | {} (2 threads) | {:.2f} | - |\n", n, rate(r.spmd),
             rate(r.direct), median(r.ratio));
  fmt::print(
      "threads in the process after it: {} (the main thread and 2 device threads; a threaded BLAS "
      "would add its pool)\n",
      process_threads());
}

// Scaling: the same product, f32 [2n, n] @ [n, n], on one device and row-sharded over a 2-device
// mesh (each device multiplying an [n, n] block on its own thread): the speed-up of 2 devices over
// 1 on this machine's cores.
void scaling_row(int64_t n, const RunSettings& settings) {
  const std::vector<float> values = test_values<float>(n);
  const Mesh mesh = make_mesh({2}, {"i"});
  const Array w = Array::from_vector<float>(values, Shape{n, n});
  const Array whole = concatenate({w, w});
  const Array x = device_put(whole, NamedSharding(mesh, P("i")));
  auto f = shard_map([](const Array& xb, const Array& wb) { return matmul(xb, wb); }, mesh,
                     {P("i"), P()}, P("i"));
  const auto two = [&](int64_t k) {
    for (int64_t i = 0; i < k; ++i) f(x, w);
  };
  const auto one = [&](int64_t k) {
    for (int64_t i = 0; i < k; ++i) matmul(whole, w);
  };
  const Rates r = measure(n, 2, two, one, settings);
  fmt::print(
      "| float32 [2n, n] @ [n, n], 2 devices over 1 | {} | {} | {} (1 device) | {:.2f} | - |\n", n,
      rate(r.spmd), rate(r.direct), median(r.ratio));
}

void matmul_table(const RunSettings& settings) {
  const auto sizes =
      settings.quick ? std::vector<int64_t>{256} : std::vector<int64_t>{256, 512, 1024, 2048};
  const NumpyResults numpy = numpy_matmul(sizes, settings);
  fmt::print(
      "\nmatmul of [n, n] @ [n, n] on one device, GFLOP/s median (best) over {} reps; direct: "
      "cblas_?gemm on dense buffers; {}\n"
      "| dtype | n | spmd::matmul | direct BLAS | spmd/direct | NumPy |\n"
      "|---|---|---|---|---|---|\n",
      settings.reps, numpy.note);
  matmul_rows<float>(sizes, numpy, settings);
  matmul_rows<double>(sizes, numpy, settings);
  two_device_row(settings.quick ? 256 : 1024, settings);
  scaling_row(settings.quick ? 256 : 1024, settings);
}

}  // namespace

int main(int argc, char** argv) {
  const RunSettings settings = run_settings(argc, argv);
  initialize({.cpu_devices = 2});
  // BLIS picks its kernels by the CPU it detects (a VM may hide what it needs: docs/user-guide.md).
  // (Initialized first: before that, BLIS_ARCH_TYPE makes the query fail.)
  bli_init();
  fmt::print("spmd kernels benchmark (BLIS {}, kernels for '{}')\n", bli_info_get_version_str(),
             bli_arch_string(bli_arch_query_id()));
  transpose_table(settings);
  matmul_table(settings);
  return 0;
}
