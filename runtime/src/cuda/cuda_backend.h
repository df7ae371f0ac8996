// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: spmd devices on NVIDIA GPUs. The platform "cuda" has
// SPMD_CUDA_DEVICES_PER_GPU logical devices (default 1) on every GPU the CUDA runtime sees, in GPU
// order: device d runs on GPU d / k. Each device has its own stream, and everything done for it
// (kernels, transfers, collectives) is ordered on that stream (backend.h's execution model).
// Memory comes from each GPU's stream-ordered pool (cudaMallocAsync), which keeps freed blocks.
// Without a GPU, or without a working driver, the platform is absent and absent_reason() says
// what the CUDA runtime answered.
#pragma once

namespace spmd::internal {

// Registers the "cuda" platform (preferred over "cpu" when it has devices, as JAX prefers GPUs).
void register_cuda_backend();

}  // namespace spmd::internal
