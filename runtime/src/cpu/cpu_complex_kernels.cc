// SPDX-License-Identifier: Apache-2.0
// The CPU backend's kernels over complex views (cpu_complex_kernels.h).
#include "cpu/cpu_complex_kernels.h"

#include <complex>
#include <type_traits>
#include <variant>

#include "backend/complex_ops.h"
#include "backend/element_ops.h"
#include "cpu/cpu_loop.h"

namespace spmd::internal {

void complex_copy(const ConstView& src, const MutView& dst) {
  if (!is_complex(src.dtype)) {
    return dispatch(src.dtype, [&]<class S>(std::type_identity<S>) {
      dispatch_complex(dst.dtype, [&]<class Z>(std::type_identity<Z>) {
        map<Z, S>([](ComputeOf<S> v) { return to_complex<Z>(v); }, dst, src);
      });
    });
  }
  dispatch_complex(src.dtype, [&]<class Z>(std::type_identity<Z>) {
    if (is_complex(dst.dtype)) {
      return dispatch_complex(dst.dtype, [&]<class D>(std::type_identity<D>) {
        map<D, Z>([](Z v) { return static_cast<D>(v); }, dst, src);
      });
    }
    dispatch(dst.dtype, [&]<class D>(std::type_identity<D>) {
      if constexpr (std::is_same_v<D, bool>) {
        map<D, Z>([](Z v) { return ComputeOf<D>(v != Z(0)); }, dst, src);
      } else {
        map<D, Z>([](Z v) { return convert<D>(v.real()); }, dst, src);
      }
    });
  });
}

void complex_fill(const MutView& dst, Scalar value) {
  dispatch_complex(dst.dtype, [&]<class Z>(std::type_identity<Z>) {
    // Unary + turns a bool scalar into an int.
    const Z z = std::visit([](auto v) { return to_complex<Z>(+v); }, value);
    auto* const p = static_cast<Z*>(dst.data);
    Loop<1>(dst.shape, {&dst.strides})
        .run([&](int64_t n, const Offsets<1>& o, const Offsets<1>& s) {
          for (int64_t i = 0; i < n; ++i) p[o[0] + i * s[0]] = z;
        });
  });
}

void complex_iota(const MutView& dst) {
  dispatch_complex(dst.dtype, [&]<class Z>(std::type_identity<Z>) {
    auto* const p = static_cast<Z*>(dst.data);
    const int64_t n = shape_size(dst.shape);
    for (int64_t i = 0; i < n; ++i) p[i] = to_complex<Z>(i);
  });
}

void complex_unary(UnaryOp op, const ConstView& x, const MutView& y) {
  dispatch_complex(x.dtype, [&]<class Z>(std::type_identity<Z>) {
    using R = typename Z::value_type;
    if (is_complex_to_real(op)) {
      return map<R, Z>([op](Z v) { return complex_to_real(op, v); }, y, x);
    }
    if (!is_complex_math(op)) unsupported("unary", static_cast<int>(op), x.dtype);
    map<Z, Z>([op](Z v) { return complex_math(op, v); }, y, x);
  });
}

void complex_binary(BinaryOp op, const ConstView& a, const ConstView& b, const MutView& y) {
  dispatch_complex(a.dtype, [&]<class Z>(std::type_identity<Z>) {
    const auto arith = [&](auto f) { map<Z, Z, Z>(f, y, a, b); };
    const auto compare = [&](auto f) { map<bool, Z, Z>(f, y, a, b); };
    switch (op) {
      case BinaryOp::kAdd:
        return arith([](Z p, Z q) { return p + q; });
      case BinaryOp::kSub:
        return arith([](Z p, Z q) { return p - q; });
      case BinaryOp::kMul:
        return arith([](Z p, Z q) { return p * q; });
      case BinaryOp::kDiv:
        return arith([](Z p, Z q) { return p / q; });
      case BinaryOp::kPow:
        return arith([](Z p, Z q) { return complex_power(p, q); });
      case BinaryOp::kMax:
        return arith([](Z p, Z q) { return lex_max(p, q); });
      case BinaryOp::kMin:
        return arith([](Z p, Z q) { return lex_min(p, q); });
      case BinaryOp::kEq:
        return compare([](Z p, Z q) { return p == q; });
      case BinaryOp::kNe:
        return compare([](Z p, Z q) { return p != q; });
      case BinaryOp::kLt:
        return compare([](Z p, Z q) { return lex_less(p, q); });
      case BinaryOp::kLe:
        return compare([](Z p, Z q) { return lex_less_equal(p, q); });
      case BinaryOp::kGt:
        return compare([](Z p, Z q) { return lex_less(q, p); });
      case BinaryOp::kGe:
        return compare([](Z p, Z q) { return lex_less_equal(q, p); });
      default:
        unsupported("binary", static_cast<int>(op), a.dtype);
    }
  });
}

void complex_reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) {
  dispatch_complex(x.dtype, [&]<class Z>(std::type_identity<Z>) {
    using R = typename Z::value_type;
    const auto fold = [&](auto init, auto step, auto finish) {
      fold_trailing<Z, Z>(x, num_reduced, y, init, step, finish);
    };
    const auto value = [](Z s) { return s; };
    constexpr R kInf = std::numeric_limits<R>::infinity();
    switch (op) {
      case ReduceOp::kSum:
        return fold([] { return PairwiseSum<Z>(); }, [](auto& s, Z v) { s.add(v); },
                    [](const auto& s) { return s.result(); });
      case ReduceOp::kProd:
        return fold([] { return Z(1); }, [](Z& s, Z v) { s *= v; }, value);
      case ReduceOp::kMax:
        return fold([] { return Z(-kInf, -kInf); }, [](Z& s, Z v) { s = lex_max(s, v); }, value);
      case ReduceOp::kMin:
        return fold([] { return Z(kInf, kInf); }, [](Z& s, Z v) { s = lex_min(s, v); }, value);
      default:
        unsupported("reduce", static_cast<int>(op), x.dtype);
    }
  });
}

}  // namespace spmd::internal
