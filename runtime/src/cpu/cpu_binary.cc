// SPDX-License-Identifier: Apache-2.0
// The CPU backend's binary elementwise math and comparisons (CpuKernels::binary, cpu_kernels.h),
// each element by the shared rules of backend/element_ops.h.
#include <cmath>
#include <type_traits>

#include "backend/element_ops.h"
#include "cpu/cpu_complex_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_loop.h"

namespace spmd::internal {

void CpuKernels::binary(BinaryOp op, const ConstView& a, const ConstView& b,
                        const MutView& y) const {
  if (is_complex(a.dtype)) return complex_binary(op, a, b, y);
  dispatch(a.dtype, [&]<class T>(std::type_identity<T>) {
    using C = ComputeOf<T>;
    const auto arith = [&](auto f) { map<T, T, T>(f, y, a, b); };
    const auto compare = [&](auto f) { map<bool, T, T>(f, y, a, b); };
    switch (op) {
      case BinaryOp::kAdd:
        return arith([](C p, C q) { return wrap_add(p, q); });
      case BinaryOp::kSub:
        return arith([](C p, C q) { return wrap_sub(p, q); });
      case BinaryOp::kMul:
        return arith([](C p, C q) { return wrap_mul(p, q); });
      case BinaryOp::kDiv:
        return arith([](C p, C q) { return trunc_div(p, q); });
      case BinaryOp::kFloorDiv:
        return arith([](C p, C q) { return py_floordiv(p, q); });
      case BinaryOp::kRem:
        return arith([](C p, C q) { return py_rem(p, q); });
      case BinaryOp::kPow:
        return arith([](C p, C q) { return power(p, q); });
      case BinaryOp::kMax:
        return arith([](C p, C q) { return max_nan(p, q); });
      case BinaryOp::kMin:
        return arith([](C p, C q) { return min_nan(p, q); });
      case BinaryOp::kAnd:
        if constexpr (std::is_integral_v<C>) return arith([](C p, C q) { return C(p & q); });
        break;
      case BinaryOp::kOr:
        if constexpr (std::is_integral_v<C>) return arith([](C p, C q) { return C(p | q); });
        break;
      case BinaryOp::kXor:
        if constexpr (std::is_integral_v<C>) return arith([](C p, C q) { return C(p ^ q); });
        break;
      case BinaryOp::kAtan2:
        if constexpr (kIsFloat<C>) return arith([](C p, C q) { return std::atan2(p, q); });
        break;
      case BinaryOp::kEq:
        return compare([](C p, C q) { return p == q; });
      case BinaryOp::kNe:
        return compare([](C p, C q) { return p != q; });
      case BinaryOp::kLt:
        return compare([](C p, C q) { return p < q; });
      case BinaryOp::kLe:
        return compare([](C p, C q) { return p <= q; });
      case BinaryOp::kGt:
        return compare([](C p, C q) { return p > q; });
      case BinaryOp::kGe:
        return compare([](C p, C q) { return p >= q; });
    }
    unsupported("binary", static_cast<int>(op), a.dtype);
  });
}

}  // namespace spmd::internal
