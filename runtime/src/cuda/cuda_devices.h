// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: the state of one logical device (its GPU, stream, cuBLAS handle
// and kernels), shared by the backend and its communicators.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>

#include "cuda/cuda_kernels.h"

namespace spmd::internal::cuda {

struct LogicalDevice {
  int gpu = 0;                    // the CUDA device ordinal
  cudaStream_t stream = nullptr;  // every operation of this device is ordered on it
  cublasHandle_t blas = nullptr;  // bound to `stream`
  std::unique_ptr<CudaKernels> kernels;
};

// Makes `gpu` the calling thread's current CUDA device (every runtime call below needs it).
void use_gpu(int gpu);

}  // namespace spmd::internal::cuda
