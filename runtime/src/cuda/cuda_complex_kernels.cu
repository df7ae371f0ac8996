// SPDX-License-Identifier: Apache-2.0
// The CUDA backend's kernels over complex views (cuda_complex_kernels.h): each element by the
// rules of backend/complex_ops.h, instantiated for cuda::std::complex, whose layout is
// std::complex's (two values of the real type), so the bytes are the CPU backend's.
#include <complex>
#include <cstring>
#include <cuda/std/complex>
#include <limits>
#include <type_traits>
#include <variant>

#include "backend/complex_ops.h"
#include "backend/element_ops.h"
#include "cuda/cuda_complex_kernels.h"
#include "cuda/cuda_loop.cuh"

namespace spmd::internal::cuda {
namespace {

// The device type of the host complex type H (std::complex<R>, from dispatch_complex).
template <class H>
using DeviceComplex = ::cuda::std::complex<typename H::value_type>;

// Element operations; operand 0 is the output.

template <class Z, class S>  // real S -> complex Z
struct FromReal {
  Z* y;
  const StorageOf<S>* x;
  __device__ void operator()(const int64_t (&o)[2]) const {
    y[o[0]] = to_complex<Z>(load<S>(x + o[1]));
  }
};

template <class D, class Z>  // complex Z -> complex D
struct Recast {
  D* y;
  const Z* x;
  __device__ void operator()(const int64_t (&o)[2]) const { y[o[0]] = static_cast<D>(x[o[1]]); }
};

template <class D, class Z>  // complex Z -> real D: the real part; bool: z != 0
struct ToReal {
  StorageOf<D>* y;
  const Z* x;
  __device__ void operator()(const int64_t (&o)[2]) const {
    const Z v = x[o[1]];
    if constexpr (std::is_same_v<D, bool>) {
      store<D>(y + o[0], ComputeOf<D>(v != Z(0)));
    } else {
      store<D>(y + o[0], convert<D>(v.real()));
    }
  }
};

template <class Z>
struct Iota {
  Z* y;  // dense and 1-D: the offset is the index
  __device__ void operator()(const int64_t (&o)[1]) const { y[o[0]] = to_complex<Z>(o[0]); }
};

template <class Z>
struct Unary {
  UnaryOp op;
  void* y;  // Z, or its real type for complex_to_real's ops
  const Z* x;
  __device__ void operator()(const int64_t (&o)[2]) const {
    const Z v = x[o[1]];
    if (is_complex_to_real(op)) {
      static_cast<typename Z::value_type*>(y)[o[0]] = complex_to_real(op, v);
    } else {
      static_cast<Z*>(y)[o[0]] = complex_math(op, v);
    }
  }
};

template <class Z>
struct Binary {
  BinaryOp op;
  void* y;  // Z, or bool for comparisons
  const Z* a;
  const Z* b;
  __device__ void operator()(const int64_t (&o)[3]) const {
    const Z p = a[o[1]], q = b[o[2]];
    Z* const out = static_cast<Z*>(y) + o[0];
    StorageOf<bool>* const flag = static_cast<StorageOf<bool>*>(y) + o[0];
    switch (op) {
      case BinaryOp::kAdd:
        *out = p + q;
        return;
      case BinaryOp::kSub:
        *out = p - q;
        return;
      case BinaryOp::kMul:
        *out = p * q;
        return;
      case BinaryOp::kDiv:
        *out = p / q;
        return;
      case BinaryOp::kPow:
        *out = complex_power(p, q);
        return;
      case BinaryOp::kMax:
        *out = lex_max(p, q);
        return;
      case BinaryOp::kMin:
        *out = lex_min(p, q);
        return;
      case BinaryOp::kEq:
        return store<bool>(flag, p == q);
      case BinaryOp::kNe:
        return store<bool>(flag, p != q);
      case BinaryOp::kLt:
        return store<bool>(flag, lex_less(p, q));
      case BinaryOp::kLe:
        return store<bool>(flag, lex_less_equal(p, q));
      case BinaryOp::kGt:
        return store<bool>(flag, lex_less(q, p));
      case BinaryOp::kGe:
        return store<bool>(flag, lex_less_equal(q, p));
      default:
        return;  // not reached: binary_defined() refused the op on the host
    }
  }
};

bool binary_defined(BinaryOp op) {
  switch (op) {
    case BinaryOp::kFloorDiv:
    case BinaryOp::kRem:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
    case BinaryOp::kAtan2:
      return false;
    default:
      return true;
  }
}

// Reductions in the CPU's order: sums pairwise (rows of kParallelRowMin elements and more a block
// each, launch_pairwise_sum), products and lexicographic max/min one element after the other, one
// thread per output (reduce_kernel).
template <class Z>
struct SumFold {
  Z* y;
  __device__ PairwiseSum<Z> init() const { return {}; }
  __device__ void step(PairwiseSum<Z>& s, Z v) const { s.add(v); }
  __device__ void finish(int64_t i, const PairwiseSum<Z>& s) const { y[i] = s.result(); }
};

template <class Z>
struct ValueFold {
  ReduceOp op;
  Z* y;
  __device__ Z init() const {
    using R = typename Z::value_type;
    constexpr R kInf = std::numeric_limits<R>::infinity();
    switch (op) {
      case ReduceOp::kProd:
        return Z(1);
      case ReduceOp::kMax:
        return Z(-kInf, -kInf);
      default:
        return Z(kInf, kInf);
    }
  }
  __device__ void step(Z& s, Z v) const {
    switch (op) {
      case ReduceOp::kProd:
        s *= v;
        return;
      case ReduceOp::kMax:
        s = lex_max(s, v);
        return;
      default:
        s = lex_min(s, v);
    }
  }
  __device__ void finish(int64_t i, Z s) const { y[i] = s; }
};

}  // namespace

void complex_copy(cudaStream_t stream, const ConstView& src, const MutView& dst) {
  const Geometry<2> g = geometry<2>(dst.shape, {&dst.strides, &src.strides});
  if (!is_complex(src.dtype)) {
    return dispatch(src.dtype, [&]<class S>(std::type_identity<S>) {
      dispatch_complex(dst.dtype, [&]<class H>(std::type_identity<H>) {
        using Z = DeviceComplex<H>;
        launch<2>(
            stream, g,
            FromReal<Z, S>{static_cast<Z*>(dst.data), static_cast<const StorageOf<S>*>(src.data)},
            "convert");
      });
    });
  }
  dispatch_complex(src.dtype, [&]<class HS>(std::type_identity<HS>) {
    using Z = DeviceComplex<HS>;
    const auto* const x = static_cast<const Z*>(src.data);
    if (is_complex(dst.dtype)) {
      return dispatch_complex(dst.dtype, [&]<class HD>(std::type_identity<HD>) {
        using D = DeviceComplex<HD>;
        launch<2>(stream, g, Recast<D, Z>{static_cast<D*>(dst.data), x}, "convert");
      });
    }
    dispatch(dst.dtype, [&]<class D>(std::type_identity<D>) {
      launch<2>(stream, g, ToReal<D, Z>{static_cast<StorageOf<D>*>(dst.data), x}, "convert");
    });
  });
}

void complex_fill(cudaStream_t stream, const MutView& dst, Scalar value) {
  dispatch_complex(dst.dtype, [&]<class H>(std::type_identity<H>) {
    // Converted on the host by the CPU's rule (unary + turns a bool into an int), then its bits
    // are written.
    const H z = std::visit([](auto v) { return to_complex<H>(+v); }, value);
    using U = std::conditional_t<sizeof(H) == sizeof(uint64_t), uint64_t, Bits128>;
    static_assert(sizeof(U) == sizeof(H));
    U bits;
    std::memcpy(&bits, &z, sizeof(bits));
    launch<1>(stream, geometry<1>(dst.shape, {&dst.strides}),
              FillBits<U>{static_cast<U*>(dst.data), bits}, "fill");
  });
}

void complex_iota(cudaStream_t stream, const MutView& dst) {
  dispatch_complex(dst.dtype, [&]<class H>(std::type_identity<H>) {
    using Z = DeviceComplex<H>;
    launch<1>(stream, geometry<1>(dst.shape, {&dst.strides}), Iota<Z>{static_cast<Z*>(dst.data)},
              "iota");
  });
}

void complex_unary(cudaStream_t stream, UnaryOp op, const ConstView& x, const MutView& y) {
  if (!is_complex_to_real(op) && !is_complex_math(op)) {
    unsupported("unary", static_cast<int>(op), x.dtype);
  }
  dispatch_complex(x.dtype, [&]<class H>(std::type_identity<H>) {
    using Z = DeviceComplex<H>;
    launch<2>(stream, geometry<2>(y.shape, {&y.strides, &x.strides}),
              Unary<Z>{op, y.data, static_cast<const Z*>(x.data)}, "complex unary");
  });
}

void complex_binary(cudaStream_t stream, BinaryOp op, const ConstView& a, const ConstView& b,
                    const MutView& y) {
  if (!binary_defined(op)) unsupported("binary", static_cast<int>(op), a.dtype);
  dispatch_complex(a.dtype, [&]<class H>(std::type_identity<H>) {
    using Z = DeviceComplex<H>;
    launch<3>(stream, geometry<3>(y.shape, {&y.strides, &a.strides, &b.strides}),
              Binary<Z>{op, y.data, static_cast<const Z*>(a.data), static_cast<const Z*>(b.data)},
              "complex binary");
  });
}

void complex_reduce(cudaStream_t stream, ReduceOp op, const ConstView& x, int num_reduced,
                    const MutView& y) {
  const auto [outer, inner] = reduce_geometry(x, num_reduced);
  dispatch_complex(x.dtype, [&]<class H>(std::type_identity<H>) {
    using Z = DeviceComplex<H>;
    auto* const out = static_cast<Z*>(y.data);
    switch (op) {
      case ReduceOp::kSum:
        if (inner.count >= kParallelRowMin) {
          return launch_pairwise_sum<Z>(stream, outer, inner, x.data, y.data);
        }
        return launch_reduce<Z>(stream, outer, inner, x.data, SumFold<Z>{out});
      case ReduceOp::kProd:
      case ReduceOp::kMax:
      case ReduceOp::kMin:
        return launch_reduce<Z>(stream, outer, inner, x.data, ValueFold<Z>{op, out});
      default:
        unsupported("reduce", static_cast<int>(op), x.dtype);
    }
  });
}

}  // namespace spmd::internal::cuda
