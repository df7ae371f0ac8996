// SPDX-License-Identifier: Apache-2.0
// Internal: the element semantics of the op kernels (backend/kernels.h), one scalar function per
// rule, shared by the CPU kernels and device code (SPMD_HOST_DEVICE, backend/half_bits.h) so that
// every backend computes the same bits: conversions (float->int saturates, NaN -> 0; halves round
// once, through round-to-odd), integer division and remainders Python's way with x/0 == 0, integer
// powers by squaring, erfinv, and the reduction states (pairwise sums, first arg-max/min). What a
// backend's math library supplies (exp, log, tanh, pow and the library_math functions for floats)
// may differ in the last place between backends; everything else is exact.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "backend/element_rules.h"
#include "backend/kernels.h"

namespace spmd::internal {

// ---------------------------------------------------------------------------------------------
// Conversions.

// float->int per XLA: saturate at the integer range, NaN -> 0. Casting first would be UB.
template <class I, class F>
SPMD_HOST_DEVICE I saturate(F v) {
  using Limits = std::numeric_limits<I>;
  if (std::isnan(v)) return 0;
  if (v <= static_cast<F>(Limits::min())) return Limits::min();
  // F(max) rounds up to a power of two when max is not representable, so every v below it
  // truncates into range.
  if (v >= static_cast<F>(Limits::max())) return Limits::max();
  return static_cast<I>(v);
}

// Converts to float rounding to odd (truncate, then set the last bit if inexact). A second
// rounding to float16/bfloat16, at least two bits narrower, then gives the correctly rounded
// result, which a plain double (or large int) -> float -> half chain does not.
template <class S>
SPMD_HOST_DEVICE float to_odd_float(S v) {
  if constexpr (kIsFloat<S>) {
    const auto f = static_cast<float>(v);
    if (static_cast<S>(f) == v || std::isnan(v)) return f;
    auto bits = bits_of_float(f);
    if (std::fabs(static_cast<S>(f)) > std::fabs(v)) --bits;
    return float_of_bits(bits | 1u);
  } else {
    using U = std::make_unsigned_t<S>;
    bool negative = false;
    if constexpr (std::is_signed_v<S>) negative = v < 0;
    const U magnitude = negative ? static_cast<U>(U{0} - static_cast<U>(v)) : static_cast<U>(v);
    const int shift = std::max(0, static_cast<int>(std::bit_width(magnitude)) - 24);
    const U sticky = (magnitude & static_cast<U>((U{1} << shift) - 1)) != 0;
    const float f = std::ldexp(static_cast<float>((magnitude >> shift) | sticky), shift);
    return negative ? -f : f;
  }
}

// A compute value of any type converted to T's compute type, per the copy rules of kernels.h.
template <class T, class S>
SPMD_HOST_DEVICE ComputeOf<T> convert(S v) {
  using C = ComputeOf<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<C> && kIsFloat<S>) {
    return saturate<C>(v);
  } else if constexpr (kIsHalf<T> && !std::is_same_v<S, float>) {
    return to_odd_float(v);
  } else {
    return static_cast<C>(v);  // int->int wraps (defined in C++20)
  }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic. Integers compute in their unsigned type so overflow wraps instead of being UB.

template <class C>
SPMD_HOST_DEVICE C trunc_div(C a, C b) {
  if constexpr (kIsFloat<C>) {
    return a / b;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return wrap_neg(a);  // MIN / -1 would trap
    }
    return static_cast<C>(a / b);
  }
}

// Python's a // b. For floats numpy's divmod formula, which stays consistent with py_rem
// (1.0 // 0.1 == 9.0, where floor(1.0 / 0.1) == 10.0).
template <class C>
SPMD_HOST_DEVICE C py_floordiv(C a, C b) {
  if constexpr (kIsFloat<C>) {
    if (b == 0) return a / b;
    const C mod = std::fmod(a, b);
    C div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return std::copysign(C{0}, a / b);
    const C floor = std::floor(div);
    return div - floor > C{0.5} ? floor + 1 : floor;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return wrap_neg(a);
      const C q = static_cast<C>(a / b);
      return (a % b != 0 && (a < 0) != (b < 0)) ? static_cast<C>(q - 1) : q;
    } else {
      return static_cast<C>(a / b);
    }
  }
}

// Python's a % b: the result takes the divisor's sign.
template <class C>
SPMD_HOST_DEVICE C py_rem(C a, C b) {
  if constexpr (kIsFloat<C>) {
    const C r = std::fmod(a, b);
    if (r == 0) return std::copysign(C{0}, b);
    return (r < 0) != (b < 0) ? r + b : r;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return 0;  // MIN % -1 would trap
      const C r = static_cast<C>(a % b);
      return (r != 0 && (r < 0) != (b < 0)) ? static_cast<C>(r + b) : r;
    } else {
      return static_cast<C>(a % b);
    }
  }
}

template <class C>
SPMD_HOST_DEVICE C power(C base, C exponent) {
  if constexpr (kIsFloat<C>) {
    return std::pow(base, exponent);
  } else {
    if constexpr (std::is_signed_v<C>) {
      if (exponent < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exponent & 1) ? -1 : 1;
        return 0;
      }
    }
    C result = 1;
    for (; exponent != 0; exponent = static_cast<C>(exponent >> 1)) {
      if (exponent & 1) result = wrap_mul(result, base);
      base = wrap_mul(base, base);
    }
    return result;
  }
}

// |v|; the most negative integer wraps to itself, as XLA's abs does.
template <class C>
SPMD_HOST_DEVICE C absolute(C v) {
  if constexpr (kIsFloat<C>) {
    return std::fabs(v);
  } else if constexpr (std::is_signed_v<C>) {
    return v < 0 ? wrap_neg(v) : v;
  } else {
    return v;
  }
}

template <class C>
SPMD_HOST_DEVICE C sign(C v) {
  if constexpr (std::is_signed_v<C>) {
    // Zero and NaN fall through unchanged, which keeps -0.0 and NaN as XLA does.
    if (v < 0) return C{-1};
  }
  return v > 0 ? C{1} : v;
}

template <class F, size_t N>
SPMD_HOST_DEVICE F horner(const F (&coefficients)[N], F w) {
  F p = 0;
  for (const F c : coefficients) p = c + p * w;
  return p;
}

// Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): his single-precision
// polynomials (as XLA uses for f32), in w = -log(1 - x^2).
SPMD_HOST_DEVICE inline float erfinv_f32(float x) {
  static constexpr float kCentral[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                       -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                       -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kTail[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  const float w = -std::log((1.0f - x) * (1.0f + x));
  return x * (w < 5.0f ? horner(kCentral, w - 2.5f) : horner(kTail, std::sqrt(w) - 3.0f));
}

// Giles' double-precision polynomials, then one Halley step on erf(t) = |x|, which takes their
// ~1e-15 relative error to the last bit or two. Near 1 the residual comes from erfc, since 1 - |x|
// is exact there while erf(t) - |x| would cancel.
SPMD_HOST_DEVICE inline double erfinv_f64(double x) {
  static constexpr double kCentral[] = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,
      1.115787767802518096e-17,   -1.333171662854620906e-16,  2.0972767875968561637e-17,
      6.6376381343583238325e-15,  -4.0545662729752068639e-14, -8.1519341976054721522e-14,
      2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08,
      4.2347877827932403518e-07,  -1.3654692000834678645e-06, -1.3882523362786468719e-05,
      0.0001867342080340571352,   -0.00074070253416626697512, -0.0060336708714301490533,
      0.24015818242558961693,     1.6536545626831027356};
  static constexpr double kMiddle[] = {
      2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
      1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
      2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
      6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
      0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
      -0.0037512085075692412107, 0.005370914553590063617,   1.0052589676941592334,
      3.0838856104922207635};
  static constexpr double kTail[] = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
      -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
      2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
      -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
      1.0103004648645343977,      4.8499064014085844221};
  if (x == 0) return x;
  const double a = std::fabs(x);
  const double w = -std::log((1 - a) * (1 + a));
  double t = a * (w < 6.25 ? horner(kCentral, w - 3.125)
                  : w < 16 ? horner(kMiddle, std::sqrt(w) - 3.25)
                           : horner(kTail, std::sqrt(w) - 5.0));
  const double residual = a <= 0.5 ? std::erf(t) - a : (1 - a) - std::erfc(t);
  const double u = residual / (2 * std::numbers::inv_sqrtpi * std::exp(-t * t));
  t -= u / (1 + t * u);
  return std::copysign(t, x);
}

// Inverse error function: +-inf at +-1, NaN outside [-1, 1].
template <class F>
SPMD_HOST_DEVICE F erfinv(F x) {
  if (!(std::fabs(x) < 1)) {
    if (std::fabs(x) == 1) return std::copysign(std::numeric_limits<F>::infinity(), x);
    return std::numeric_limits<F>::quiet_NaN();
  }
  if constexpr (std::is_same_v<F, float>) {
    return erfinv_f32(x);
  } else {
    return erfinv_f64(x);
  }
}

// ---------------------------------------------------------------------------------------------
// Reduction state.

// Pairwise summation streamed over the range: blocks of kBlock elements are summed in order and
// merged like a binary counter, so the tree depends only on the element count (deterministic)
// and the error grows with log(n) rather than n.
template <class Acc>
class PairwiseSum {
 public:
  // User-provided so that construction does not zero partial_, a measurable cost per output
  // element when many short ranges are reduced.
  SPMD_HOST_DEVICE PairwiseSum() {}

  static constexpr int kBlock = 16;

  SPMD_HOST_DEVICE void add(Acc v) {
    block_ += v;
    if (++block_size_ < kBlock) return;
    Acc sum = block_;
    int level = 0;
    for (uint64_t b = blocks_; b & 1; b >>= 1, ++level) sum = partial_[level] + sum;
    partial_[level] = sum;
    ++blocks_;
    block_ = 0;
    block_size_ = 0;
  }

  SPMD_HOST_DEVICE Acc result() const {
    Acc sum = block_;
    int level = 0;
    for (uint64_t b = blocks_; b != 0; b >>= 1, ++level) {
      if (b & 1) sum = partial_[level] + sum;
    }
    return sum;
  }

 private:
  Acc partial_[64];  // only levels with a set bit in blocks_ are read
  uint64_t blocks_ = 0;
  Acc block_ = 0;
  int block_size_ = 0;
};

// Index of the first maximum (kMax) or minimum in visiting order; a NaN beats everything and
// the first NaN wins, as in numpy.
template <class C, bool kMax>
struct ArgBest {
  SPMD_HOST_DEVICE void add(C v) {
    if (count == 0 || better(v)) {
      best = v;
      index = count;
    }
    ++count;
  }
  SPMD_HOST_DEVICE bool better(C v) const {
    if constexpr (kIsFloat<C>) {
      if (std::isnan(best)) return false;
      if (std::isnan(v)) return true;
    }
    return kMax ? best < v : v < best;
  }
  C best{};
  int64_t index = 0;
  int64_t count = 0;
};

template <class C>
SPMD_HOST_DEVICE constexpr C lowest() {
  if constexpr (kIsFloat<C>) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();
  }
}
template <class C>
SPMD_HOST_DEVICE constexpr C highest() {
  if constexpr (kIsFloat<C>) {
    return std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::max();
  }
}

// ---------------------------------------------------------------------------------------------
// The math library's float functions (UnaryOp kSin ... kCbrt), one per element. A switch per
// element costs nothing next to the library call, and keeps one list for every backend.

// The trigonometric and hyperbolic functions and their inverses (kSin ... kArctanh), for every
// type the library overloads them for: floats, std::complex and cuda::std::complex
// (backend/complex_ops.h).
template <class F>
SPMD_HOST_DEVICE F trig_math(UnaryOp op, F v) {
  // Unqualified, so that a complex F finds its own library's functions (std:: on the host,
  // cuda::std:: on a GPU) by argument-dependent lookup.
  using std::acos, std::acosh, std::asin, std::asinh, std::atan, std::atanh, std::cos, std::cosh,
      std::sin, std::sinh, std::tan;
  switch (op) {
    case UnaryOp::kSin:
      return sin(v);
    case UnaryOp::kCos:
      return cos(v);
    case UnaryOp::kTan:
      return tan(v);
    case UnaryOp::kArcsin:
      return asin(v);
    case UnaryOp::kArccos:
      return acos(v);
    case UnaryOp::kArctan:
      return atan(v);
    case UnaryOp::kSinh:
      return sinh(v);
    case UnaryOp::kCosh:
      return cosh(v);
    case UnaryOp::kArcsinh:
      return asinh(v);
    case UnaryOp::kArccosh:
      return acosh(v);
    case UnaryOp::kArctanh:
      return atanh(v);
    default:
      return v;  // not in is_trig_math
  }
}

constexpr bool is_trig_math(UnaryOp op) { return op >= UnaryOp::kSin && op <= UnaryOp::kArctanh; }

template <class F>
SPMD_HOST_DEVICE F library_math(UnaryOp op, F v) {
  if (is_trig_math(op)) return trig_math(op, v);
  switch (op) {
    case UnaryOp::kLog1p:
      return std::log1p(v);
    case UnaryOp::kExpm1:
      return std::expm1(v);
    case UnaryOp::kLog2:
      return std::log2(v);
    case UnaryOp::kLog10:
      return std::log10(v);
    case UnaryOp::kExp2:
      return std::exp2(v);
    case UnaryOp::kErf:
      return std::erf(v);
    case UnaryOp::kCbrt:
      return std::cbrt(v);
    default:
      return v;  // not a library function: the kernels handle it
  }
}

// True for the ops library_math computes.
constexpr bool is_library_math(UnaryOp op) { return op >= UnaryOp::kSin && op <= UnaryOp::kCbrt; }

}  // namespace spmd::internal
