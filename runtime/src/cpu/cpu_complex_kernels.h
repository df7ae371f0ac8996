// SPDX-License-Identifier: Apache-2.0
// Internal: the CPU kernels (backend/kernels.h) for views where complex64 or complex128 takes
// part, with the element rules of backend/complex_ops.h. CpuKernels sends such views here; matmul
// and the kernels that only move bits (same-dtype copy, select) serve every type themselves.
#pragma once

#include "backend/kernels.h"

namespace spmd::internal {

// Conversions to, from and between complex types (src or dst complex).
void complex_copy(const ConstView& src, const MutView& dst);
void complex_fill(const MutView& dst, Scalar value);
void complex_iota(const MutView& dst);
void complex_unary(UnaryOp op, const ConstView& x, const MutView& y);
void complex_binary(BinaryOp op, const ConstView& a, const ConstView& b, const MutView& y);
void complex_reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y);

}  // namespace spmd::internal
