// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: CUDA runtime and cuBLAS status codes turned into spmd errors that
// name the call, the error and what it was doing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace spmd::internal::cuda {

// Throws RuntimeError "CUDA error in <what>: <name>: <description>" unless status is cudaSuccess
// (ResourceExhausted for cudaErrorMemoryAllocation, as an allocation failure is on the CPU).
void check(cudaError_t status, const std::string& what);
// The same for cuBLAS.
void check(cublasStatus_t status, const std::string& what);

}  // namespace spmd::internal::cuda
