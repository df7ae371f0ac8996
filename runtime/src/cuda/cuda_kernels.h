// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: the op kernels of backend/kernels.h over device memory of one GPU,
// enqueued on one stream (one spmd device's), computing the CPU backend's bits through the shared
// element rules (backend/element_ops.h). Where the bits may differ from the CPU backend: exp,
// log, tanh, pow and erf-based erfinv on floats come from CUDA's math library (last-place
// differences), and float matmul is cuBLAS's gemm (its own summation order, fixed per library
// version and GPU; full float32, never TF32). Everything else (conversions, integer arithmetic,
// comparisons, select, floor/ceil/round, sqrt, division, reductions in the CPU's pairwise order,
// integer and bool matmul) is bit-exact, except that a NaN an operation makes is the GPU's
// canonical NaN where the CPU makes x86's default NaN (both are NaN; payloads are not kept).
// Complex views go to cuda_complex_kernels.h, which says what differs there; complex matmul is
// cuBLAS's cgemm/zgemm.
//
//   CudaKernels kernels(stream, handle);
//   kernels.binary(BinaryOp::kAdd, a, b, y);  // enqueued on `stream`; a, b, y in device memory
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/kernels.h"

namespace spmd::internal::cuda {

class CudaKernels final : public Kernels {
 public:
  // Every kernel runs on `stream`; float matmul through `blas`, bound to the same stream. The
  // caller keeps both alive and has made the views' GPU current.
  CudaKernels(cudaStream_t stream, cublasHandle_t blas) : stream_(stream), blas_(blas) {}

  void copy(const ConstView& src, const MutView& dst) const override;
  void fill(const MutView& dst, Scalar value) const override;
  void iota(const MutView& dst) const override;
  void unary(UnaryOp op, const ConstView& x, const MutView& y) const override;
  void binary(BinaryOp op, const ConstView& a, const ConstView& b, const MutView& y) const override;
  void select(const ConstView& cond, const ConstView& a, const ConstView& b,
              const MutView& y) const override;
  void reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) const override;
  void matmul(const ConstView& a, const ConstView& b, const MutView& c) const override;

 private:
  cudaStream_t stream_;
  cublasHandle_t blas_;
};

// The most members one fold_members() call combines.
inline constexpr int kMaxFoldMembers = 64;

// out[o * inner + i] = op over the members q = 0..n-1, in that order, of
// ins[q][o * in_stride + in_offset + i] (elements of dtype), combined as the CPU communicators
// combine them (backend/element_rules.h), so that sums match theirs bit for bit. Enqueued on
// `stream`; every ins[q] and out are device memory of the stream's GPU; n <= kMaxFoldMembers.
void fold_members(cudaStream_t stream, ReduceKind op, DType dtype, const void* const* ins, int n,
                  void* out, int64_t outer, int64_t inner, int64_t in_stride, int64_t in_offset);

}  // namespace spmd::internal::cuda
