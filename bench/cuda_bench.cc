// SPDX-License-Identifier: Apache-2.0
// CUDA benchmark (scripts/gpu-check.sh runs it on a GPU machine), three tables from one run:
//   - psum and all_gather on the "cuda" platform: at 1 device and over every CUDA device (8
//     logical devices on one GPU under SPMD_CUDA_DEVICES_PER_GPU=8), float32, µs per collective
//     (10 per body, chained) with nccl-tests' algbw and busbw (busbw is 0 at 1 device: nothing
//     moves between devices, so algbw is the figure there);
//   - float32 matmul 4096x4096 on one device, TFLOP/s of spmd::matmul against cublasSgemm called
//     directly on the same GPU, timed in interleaved reps; spmd/direct is the median of per-rep
//     ratios (target >= 0.95);
//   - dispatch: µs per call of a shard_map whose body returns its block, over 1 and all CUDA
//     devices (the host's cost of launching; the work is enqueued, not waited for, and a host
//     read after the last call waits for everything).
// Times are median (min) of reps of calibrated call counts, each ended by a host read.
//
//   build/bench/cuda_bench [--reps=5] [--quick] [--sizes=1M,16M,64M]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <string>
#include <vector>

#include "bench_util.h"
#include "spmd/spmd.h"

namespace {

using namespace spmd;
using namespace spmd::bench;

constexpr int kChain = 10;  // collectives per body

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
  }
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(what);
}

// Median and min seconds per call of body(k), over reps of a calibrated k.
std::pair<double, double> time_calls(const std::function<void(int64_t)>& body,
                                     const RunSettings& s) {
  const int64_t k = calibrate(body, s.target_s);
  std::vector<double> t;
  for (int r = 0; r < s.reps; ++r) t.push_back(time_per_iteration(body, k));
  return {median(t), minimum(t)};
}

void collectives(const RunSettings& s, const std::vector<int64_t>& sizes) {
  fmt::print(
      "\n| op | devices | size | median µs | min µs | algbw GB/s | busbw GB/s |\n"
      "|---|---|---|---|---|---|---|\n");
  const int all = device_count("cuda");
  for (const std::string op : {"psum", "all_gather"}) {
    for (int n : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1}) {
      std::vector<Device> pool = devices("cuda");
      pool.resize(n);
      Mesh mesh = make_mesh({n}, {"i"}, pool);
      for (int64_t bytes : sizes) {
        // psum: every device holds `bytes`; all_gather: the output is `bytes`.
        const int64_t per_device = op == "psum" ? bytes / 4 : bytes / 4 / n;
        Array x = device_put(zeros({n * per_device}), NamedSharding(mesh, P("i")));
        auto f = shard_map(
            [op](const Array& b) {
              Array y = b;
              for (int i = 0; i < kChain; ++i) {
                y = op == "psum" ? psum(y, "i") : all_gather(b, "i", {.tiled = true});
              }
              return slice(y, {0}, {1});
            },
            mesh, P("i"), P("i"));
        auto [med, min] = time_calls(
            [&](int64_t k) {
              Array out;
              for (int64_t i = 0; i < k; ++i) out = f(x);
              out.to_vector<float>();  // waits for every device's stream
            },
            s);
        const double per = med / kChain;
        const double algbw = static_cast<double>(bytes) / per / 1e9;
        const double factor = n == 1 ? 0 : op == "psum" ? 2.0 * (n - 1) / n : (n - 1.0) / n;
        fmt::print("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", op, n,
                   size_label(bytes), per * 1e6, min / kChain * 1e6, algbw, algbw * factor);
      }
    }
  }
}

void matmul_vs_cublas(const RunSettings& s) {
  const int n = s.quick ? 1024 : 4096;
  const double flop = 2.0 * n * n * n;
  Array a = ones({n, n});  // on cuda:0, the default device
  Array b = ones({n, n});
  auto spmd_calls = [&](int64_t k) {
    Array c;
    for (int64_t i = 0; i < k; ++i) c = matmul(a, b);
    slice(c, {0, 0}, {1, 1}).to_vector<float>();
  };
  // The direct call: dense buffers on the same GPU, one stream, one handle.
  void *da, *db, *dc;
  const size_t bytes = sizeof(float) * n * n;
  check(cudaMalloc(&da, bytes), "cudaMalloc");
  check(cudaMalloc(&db, bytes), "cudaMalloc");
  check(cudaMalloc(&dc, bytes), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t blas;
  check(cublasCreate(&blas), "cublasCreate");
  check(cublasSetStream(blas, stream), "cublasSetStream");
  auto direct_calls = [&](int64_t k) {
    const float one = 1, zero = 0;
    for (int64_t i = 0; i < k; ++i) {
      check(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<float*>(db), n,
                        static_cast<float*>(da), n, &zero, static_cast<float*>(dc), n),
            "cublasSgemm");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  const int64_t ks = calibrate(spmd_calls, s.target_s), kd = calibrate(direct_calls, s.target_s);
  std::vector<double> ts, td, ratio;
  for (int r = 0; r < s.reps; ++r) {
    ts.push_back(time_per_iteration(spmd_calls, ks));
    td.push_back(time_per_iteration(direct_calls, kd));
    ratio.push_back(td.back() / ts.back());
  }
  fmt::print("\n| matmul f32 | spmd TFLOP/s | cuBLAS TFLOP/s | spmd/direct |\n|---|---|---|---|\n");
  fmt::print("| {}x{} | {:.1f} ({:.1f}) | {:.1f} ({:.1f}) | {:.3f} |\n", n, n,
             flop / median(ts) / 1e12, flop / minimum(ts) / 1e12, flop / median(td) / 1e12,
             flop / minimum(td) / 1e12, median(ratio));
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

void dispatch(const RunSettings& s) {
  fmt::print("\n| dispatch | devices | median µs per call | min µs |\n|---|---|---|---|\n");
  const int all = device_count("cuda");
  for (int n : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1}) {
    std::vector<Device> pool = devices("cuda");
    pool.resize(n);
    Mesh mesh = make_mesh({n}, {"i"}, pool);
    Array x = device_put(arange(16 * n, DType::kFloat32), NamedSharding(mesh, P("i")));
    auto identity = shard_map([](const Array& b) { return b; }, mesh, P("i"), P("i"));
    auto [med, min] = time_calls(
        [&](int64_t k) {
          Array out;
          for (int64_t i = 0; i < k; ++i) out = identity(x);
          out.to_vector<float>();
        },
        s);
    fmt::print("| identity body | {} | {:.1f} | {:.1f} |\n", n, med * 1e6, min * 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const RunSettings s = run_settings(argc, argv);
  std::vector<int64_t> sizes;
  for (const std::string& t :
       split_list(flag(argc, argv, "sizes", s.quick ? "1M" : "1M,16M,64M"))) {
    sizes.push_back(parse_size(t));
  }
  try {
    initialize({.platforms = "cuda,cpu"});
    fmt::print(
        "spmd CUDA benchmark: {} CUDA devices (SPMD_CUDA_DEVICES_PER_GPU per GPU), median "
        "of {} reps\n",
        device_count("cuda"), s.reps);
    collectives(s, sizes);
    matmul_vs_cublas(s);
    dispatch(s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuda_bench: {}\n", e.what());
    return 2;
  }
  return 0;
}
