// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: spmd devices on NVIDIA GPUs. The platform "cuda" has
// SPMD_CUDA_DEVICES_PER_GPU logical devices (default 1) on every GPU the CUDA runtime sees, in GPU
// order: device d runs on GPU d / k. Each device has its own stream, and everything done for it
// (kernels, transfers, collectives) is ordered on that stream (backend.h's execution model).
// Memory comes from each GPU's stream-ordered pool (cudaMallocAsync), which keeps freed blocks.
// Collectives among devices of one GPU use device copies and kernels (cuda_communicator.h), among
// devices of different GPUs NCCL (nccl_communicator.h).
// Without a GPU, or without a working driver, the platform is absent and absent_reason() says
// what the CUDA runtime answered.
#pragma once

namespace spmd::internal {

// Registers the "cuda" platform. Unlike JAX, which moves to a GPU whenever one is present, "cpu"
// stays the default platform: results must not change with the machine a program runs on, so
// "cuda" is used when asked for (SPMD_PLATFORMS=cuda or cuda,cpu; devices("cuda")).
void register_cuda_backend();

}  // namespace spmd::internal
