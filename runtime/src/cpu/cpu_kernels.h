// SPDX-License-Identifier: Apache-2.0
// Internal: the CPU backend's kernels, every primitive of backend/kernels.h over host memory.
//
// The kernels are stateless, so one shared instance serves every device thread.
#pragma once

#include "backend/kernels.h"

namespace spmd::internal {

class CpuKernels final : public Kernels {
 public:
  void copy(const ConstView& src, const MutView& dst) const override;
  void fill(const MutView& dst, Scalar value) const override;
  void iota(const MutView& dst) const override;
  void unary(UnaryOp op, const ConstView& x, const MutView& y) const override;
  void binary(BinaryOp op, const ConstView& a, const ConstView& b, const MutView& y) const override;
  void select(const ConstView& cond, const ConstView& a, const ConstView& b,
              const MutView& y) const override;
  void reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) const override;
  void matmul(const ConstView& a, const ConstView& b, const MutView& c) const override;
};

// The process-wide CPU kernels.
const Kernels& cpu_kernels();

}  // namespace spmd::internal
