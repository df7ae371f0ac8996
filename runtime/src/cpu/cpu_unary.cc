// SPDX-License-Identifier: Apache-2.0
// The CPU backend's unary elementwise math (CpuKernels::unary, cpu_kernels.h), each element by the
// shared rules of backend/element_ops.h.
#include <cmath>
#include <type_traits>

#include "backend/element_ops.h"
#include "cpu/cpu_complex_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_loop.h"

namespace spmd::internal {

void CpuKernels::unary(UnaryOp op, const ConstView& x, const MutView& y) const {
  if (is_complex(x.dtype)) return complex_unary(op, x, y);
  dispatch(x.dtype, [&]<class T>(std::type_identity<T>) {
    using C = ComputeOf<T>;
    const auto apply = [&](auto f) { map<T, T>(f, y, x); };
    switch (op) {
      case UnaryOp::kNeg:
        return apply([](C v) { return wrap_neg(v); });
      case UnaryOp::kAbs:
        return apply([](C v) { return absolute(v); });
      case UnaryOp::kSign:
        return apply([](C v) { return sign(v); });
      case UnaryOp::kSquare:
        return apply([](C v) { return wrap_mul(v, v); });
      case UnaryOp::kLogicalNot:
        if constexpr (std::is_same_v<T, bool>) return apply([](C v) { return C(v == 0); });
        break;
      default:
        break;
    }
    if constexpr (kIsFloat<C>) {
      switch (op) {
        case UnaryOp::kExp:
          return apply([](C v) { return std::exp(v); });
        case UnaryOp::kLog:
          return apply([](C v) { return std::log(v); });
        case UnaryOp::kSqrt:
          return apply([](C v) { return std::sqrt(v); });
        case UnaryOp::kTanh:
          return apply([](C v) { return std::tanh(v); });
        case UnaryOp::kFloor:
          return apply([](C v) { return std::floor(v); });
        case UnaryOp::kCeil:
          return apply([](C v) { return std::ceil(v); });
        case UnaryOp::kRound:
          return apply([](C v) { return std::nearbyint(v); });
        case UnaryOp::kErfInv:
          return apply([](C v) { return erfinv(v); });
        default:
          if (is_library_math(op)) return apply([op](C v) { return library_math(op, v); });
          break;
      }
    }
    unsupported("unary", static_cast<int>(op), x.dtype);
  });
}

}  // namespace spmd::internal
