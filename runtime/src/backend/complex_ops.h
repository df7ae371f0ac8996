// SPDX-License-Identifier: Apache-2.0
// Internal: the element semantics of complex64/complex128 (std::complex<float>/<double>), JAX's:
//   - conversions: real -> complex has a zero imaginary part; complex -> real keeps the real part
//     (jnp's astype, which warns where numpy does), complex -> bool is z != 0;
//   - order is lexicographic (real part, then imaginary part) with plain IEEE comparisons, so a
//     NaN part compares false: maximum(a, b) = a > b ? a : b, as XLA's complex max does;
//   - sign(z) = z / |z| (0 at 0), round rounds both parts half to even;
//   - an integral real exponent (imaginary part 0) is computed by squaring, exactly; other powers
//     are exp(b log a).
// The transcendental functions are the C++ library's (std::exp, std::sin, ...), with log1p,
// expm1, log2 and exp2 written out so that they keep their precision near zero.
// Every rule is a template over the complex type Z, std::complex<R> on the host and
// cuda::std::complex<R> in the CUDA kernels (SPMD_HOST_DEVICE): complex functions are called
// unqualified, so that Z's own library's are found (argument-dependent lookup).
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>

#include "backend/element_ops.h"
#include "backend/element_rules.h"
#include "backend/kernels.h"

namespace spmd::internal {

// A real compute value as a complex of type Z.
template <class Z, class S>
SPMD_HOST_DEVICE Z to_complex(S v) {
  using R = typename Z::value_type;
  return Z(static_cast<R>(v), R{0});
}

template <class Z>
SPMD_HOST_DEVICE bool lex_less(Z a, Z b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}
template <class Z>
SPMD_HOST_DEVICE bool lex_less_equal(Z a, Z b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag());
}
template <class Z>
SPMD_HOST_DEVICE Z lex_max(Z a, Z b) {
  return lex_less(b, a) ? a : b;
}
template <class Z>
SPMD_HOST_DEVICE Z lex_min(Z a, Z b) {
  return lex_less(a, b) ? a : b;
}

template <class Z>
SPMD_HOST_DEVICE Z complex_sign(Z z) {
  using std::abs;
  if (z == Z(0)) return z;
  return z / abs(z);
}

template <class Z>
SPMD_HOST_DEVICE Z complex_round(Z z) {
  return Z(std::nearbyint(z.real()), std::nearbyint(z.imag()));
}

template <class Z>
SPMD_HOST_DEVICE Z complex_power(Z base, Z exponent) {
  using R = typename Z::value_type;
  const R n = exponent.real();
  constexpr R kLargestExact = R(1 << 30);
  if (exponent.imag() != 0 || std::nearbyint(n) != n || std::fabs(n) > kLargestExact) {
    using std::pow;
    return pow(base, exponent);
  }
  Z result(1);
  for (auto e = static_cast<uint64_t>(std::fabs(n)); e != 0; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return n < 0 ? Z(1) / result : result;
}

// log(1 + z) without losing z's digits when |z| is small: |1 + z|^2 - 1 = x (2 + x) + y^2.
template <class Z>
SPMD_HOST_DEVICE Z complex_log1p(Z z) {
  using R = typename Z::value_type;
  const R x = z.real(), y = z.imag();
  return Z(R{0.5} * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x));
}

// exp(z) - 1 = (expm1(x) cos y - 2 sin^2(y / 2)) + i exp(x) sin y.
template <class Z>
SPMD_HOST_DEVICE Z complex_expm1(Z z) {
  using R = typename Z::value_type;
  const R x = z.real(), y = z.imag();
  const R half_sin = std::sin(y / 2);
  return Z(std::expm1(x) * std::cos(y) - 2 * half_sin * half_sin, std::exp(x) * std::sin(y));
}

// The unary ops that take and give a complex; the ops layer rejects the rest before they reach a
// kernel. A switch per element costs little next to the library calls (as library_math).
constexpr bool is_complex_math(UnaryOp op) {
  return op == UnaryOp::kNeg || op == UnaryOp::kSign || op == UnaryOp::kSquare ||
         op == UnaryOp::kRound || op == UnaryOp::kConj || op == UnaryOp::kExp ||
         op == UnaryOp::kLog || op == UnaryOp::kSqrt || op == UnaryOp::kTanh ||
         (op >= UnaryOp::kSin && op <= UnaryOp::kExp2);
}

template <class Z>
SPMD_HOST_DEVICE Z complex_math(UnaryOp op, Z v) {
  using R = typename Z::value_type;
  using std::conj, std::exp, std::log, std::log10, std::sqrt, std::tanh;
  constexpr R kLn2 = std::numbers::ln2_v<R>;  // a local constant: device code reads it too
  switch (op) {
    case UnaryOp::kNeg:
      return -v;
    case UnaryOp::kSign:
      return complex_sign(v);
    case UnaryOp::kSquare:
      return v * v;
    case UnaryOp::kRound:
      return complex_round(v);
    case UnaryOp::kConj:
      return conj(v);
    case UnaryOp::kExp:
      return exp(v);
    case UnaryOp::kLog:
      return log(v);
    case UnaryOp::kSqrt:
      return sqrt(v);
    case UnaryOp::kTanh:
      return tanh(v);
    case UnaryOp::kLog1p:
      return complex_log1p(v);
    case UnaryOp::kExpm1:
      return complex_expm1(v);
    case UnaryOp::kLog2:
      return log(v) / kLn2;
    case UnaryOp::kLog10:
      return log10(v);
    case UnaryOp::kExp2:
      return exp(v * kLn2);
    default:
      return trig_math(op, v);
  }
}

// The unary ops of a complex that give its real type (the output view has that dtype).
constexpr bool is_complex_to_real(UnaryOp op) {
  return op == UnaryOp::kAbs || op == UnaryOp::kReal || op == UnaryOp::kImag ||
         op == UnaryOp::kAngle;
}

template <class Z>
SPMD_HOST_DEVICE typename Z::value_type complex_to_real(UnaryOp op, Z v) {
  using std::abs, std::arg;
  switch (op) {
    case UnaryOp::kAbs:
      return abs(v);
    case UnaryOp::kImag:
      return v.imag();
    case UnaryOp::kAngle:
      return arg(v);
    default:
      return v.real();  // kReal
  }
}

}  // namespace spmd::internal
