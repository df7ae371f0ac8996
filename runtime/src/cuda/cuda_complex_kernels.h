// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: the kernels of backend/kernels.h for views where complex64 or
// complex128 takes part, with the element rules of backend/complex_ops.h over
// cuda::std::complex (the same layout as std::complex), enqueued on `stream`. CudaKernels sends
// such views here; the bit moves (same-dtype copy, select) and matmul (cuBLAS's cgemm/zgemm)
// serve every type themselves.
//
// Bits equal the CPU backend's for conversions, fill, iota, +, -, comparisons, max/min, conj,
// real, imag, round and sums (the CPU's pairwise order); products (*, square, prod) for finite
// values. Division, sign, abs, angle, pow and the transcendental functions come from CUDA's
// libcu++ and math library and may differ from the CPU's in the last places.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/kernels.h"

namespace spmd::internal::cuda {

// Conversions to, from and between complex types (src or dst complex).
void complex_copy(cudaStream_t stream, const ConstView& src, const MutView& dst);
void complex_fill(cudaStream_t stream, const MutView& dst, Scalar value);
void complex_iota(cudaStream_t stream, const MutView& dst);
void complex_unary(cudaStream_t stream, UnaryOp op, const ConstView& x, const MutView& y);
void complex_binary(cudaStream_t stream, BinaryOp op, const ConstView& a, const ConstView& b,
                    const MutView& y);
void complex_reduce(cudaStream_t stream, ReduceOp op, const ConstView& x, int num_reduced,
                    const MutView& y);

}  // namespace spmd::internal::cuda
