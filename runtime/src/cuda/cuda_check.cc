// SPDX-License-Identifier: Apache-2.0
// CUDA and cuBLAS status codes as spmd errors (cuda_check.h).
#include "cuda/cuda_check.h"

#include <fmt/format.h>

#include "spmd/errors.h"

namespace spmd::internal::cuda {

void check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  const std::string message = fmt::format("CUDA error in {}: {}: {}", what,
                                          cudaGetErrorName(status), cudaGetErrorString(status));
  if (status == cudaErrorMemoryAllocation)
    throw ResourceExhausted("RESOURCE_EXHAUSTED: " + message);
  throw RuntimeError(message);
}

void check(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(fmt::format("cuBLAS error in {}: {}: {}", what, cublasGetStatusName(status),
                                 cublasGetStatusString(status)));
}

}  // namespace spmd::internal::cuda
