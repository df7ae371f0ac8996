// SPDX-License-Identifier: Apache-2.0
// Internal: how every backend stores, computes and combines elements, so that the CPU kernels,
// the communicators of every backend (CPU, processes, tests/backends) and device code (CUDA, where
// SPMD_HOST_DEVICE marks these __host__ __device__) give the same bits:
//   - bool is stored as a byte read as `!= 0`; float16/bfloat16 are stored as bits and computed
//     (and accumulated) in float, rounded once per result;
//   - integers wrap (computed in their unsigned type), as XLA does;
//   - max/min propagate NaN (jnp.maximum/minimum); on ties they keep the first operand.
//   - complex64/complex128 (std::complex) are stored and computed as themselves; their kernels
//     are separate from the real types' (dispatch_complex, backend/complex_ops.h) because most
//     real rules (ordering, NaN tests, integer wrapping) do not apply to them.
// Reductions fold their operands in a fixed order with these rules (kernels.h, backend.h).
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/half_bits.h"
#include "spmd/dtype.h"
#include "spmd/errors.h"

namespace spmd::internal {

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <class C>
constexpr bool kIsFloat = std::is_floating_point_v<C>;
template <class T>
constexpr bool kIsComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// Sixteen bytes moved as one element: complex128 in the kernels that only move bits.
struct Bits128 {
  uint64_t low;
  uint64_t high;
};

// How an element type is stored. Any type that is not an element type (the raw uintN_t used for
// bit copies) is stored and computed as itself.
template <class T>
using StorageOf = std::conditional_t<std::is_same_v<T, bool>, uint8_t,
                                     std::conditional_t<kIsHalf<T>, uint16_t, T>>;
// What it is computed and accumulated in: float for f16/bf16/f32, double for f64, the type itself
// for integers.
template <class T>
using ComputeOf =
    std::conditional_t<std::is_same_v<T, bool>, uint8_t, std::conditional_t<kIsHalf<T>, float, T>>;

template <class T>
SPMD_HOST_DEVICE ComputeOf<T> load(const StorageOf<T>* p) {
  if constexpr (std::is_same_v<T, bool>) {
    return *p != 0;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return float_of_bits(half_bits_to_float_bits(*p));
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return float_of_bits(bfloat16_bits_to_float_bits(*p));
  } else {
    return *p;
  }
}

template <class T>
SPMD_HOST_DEVICE void store(StorageOf<T>* p, ComputeOf<T> v) {
  if constexpr (std::is_same_v<T, bool>) {
    *p = v != 0;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    *p = float_bits_to_half_bits(bits_of_float(v));
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    *p = float_bits_to_bfloat16_bits(bits_of_float(v));
  } else {
    *p = v;
  }
}

// Calls f(std::type_identity<T>{}) for the first T of Ts that `match` accepts; false if none.
template <class... Ts, class Match, class F>
bool dispatch_first(Match match, F& f) {
  return ((match(std::type_identity<Ts>{}) && (f(std::type_identity<Ts>{}), true)) || ...);
}

[[noreturn]] inline void unknown_dtype(DType dt, const char* kinds) {
  throw TypeError(std::string(dtype_name(dt)) + " is not one of the " + kinds +
                  " this kernel handles");
}

// Calls f(std::type_identity<T>{}) with the element type of dt, one of the real types (every type
// but the complex ones; TypeError for those).
template <class F>
void dispatch(DType dt, F&& f) {
  const auto is_dt = [dt]<class T>(std::type_identity<T>) { return dtype_of_v<T> == dt; };
  const bool known = dispatch_first<bool, int32_t, int64_t, uint32_t, float16_t, bfloat16_t, float,
                                    double, int8_t, int16_t, uint8_t, uint16_t, uint64_t>(is_dt, f);
  if (!known) unknown_dtype(dt, "real types");
}

// The same for the complex types: std::complex<float> or std::complex<double>.
template <class F>
void dispatch_complex(DType dt, F&& f) {
  const auto is_dt = [dt]<class T>(std::type_identity<T>) { return dtype_of_v<T> == dt; };
  if (!dispatch_first<std::complex<float>, std::complex<double>>(is_dt, f)) {
    unknown_dtype(dt, "complex types");
  }
}

// Calls f with the unsigned type of dt's size, for kernels that only move bits.
template <class F>
void dispatch_bits(DType dt, F&& f) {
  const auto size = static_cast<size_t>(itemsize(dt));
  const auto fits = [size]<class U>(std::type_identity<U>) { return sizeof(U) == size; };
  dispatch_first<uint8_t, uint16_t, uint32_t, uint64_t, Bits128>(fits, f);
}

// Integer arithmetic in an unsigned type at least as wide, so that overflow wraps: the type's own
// unsigned type, or unsigned int for 8- and 16-bit types (which C++ would otherwise promote to
// int, where uint16 * uint16 can overflow).
template <class C>
using Wrapping = typename std::conditional_t<
    std::is_integral_v<C>,
    std::conditional_t<(sizeof(C) < sizeof(unsigned)), std::type_identity<unsigned>,
                       std::make_unsigned<C>>,
    std::type_identity<C>>::type;

template <class C>
SPMD_HOST_DEVICE C wrap_add(C a, C b) {
  return static_cast<C>(static_cast<Wrapping<C>>(a) + static_cast<Wrapping<C>>(b));
}
template <class C>
SPMD_HOST_DEVICE C wrap_sub(C a, C b) {
  return static_cast<C>(static_cast<Wrapping<C>>(a) - static_cast<Wrapping<C>>(b));
}
template <class C>
SPMD_HOST_DEVICE C wrap_mul(C a, C b) {
  return static_cast<C>(static_cast<Wrapping<C>>(a) * static_cast<Wrapping<C>>(b));
}
template <class C>
SPMD_HOST_DEVICE C wrap_neg(C a) {
  if constexpr (kIsFloat<C>) {
    return -a;
  } else {
    return wrap_sub(C{0}, a);
  }
}

template <class C>
SPMD_HOST_DEVICE C max_nan(C a, C b) {
  if constexpr (kIsFloat<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}
template <class C>
SPMD_HOST_DEVICE C min_nan(C a, C b) {
  if constexpr (kIsFloat<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

// The combining step of each collective reduction (backend.h's ReduceKind).
struct SumRule {
  template <class C>
  SPMD_HOST_DEVICE static C apply(C a, C b) {
    return wrap_add(a, b);
  }
};
struct MaxRule {
  template <class C>
  SPMD_HOST_DEVICE static C apply(C a, C b) {
    return max_nan(a, b);
  }
};
struct MinRule {
  template <class C>
  SPMD_HOST_DEVICE static C apply(C a, C b) {
    return min_nan(a, b);
  }
};

}  // namespace spmd::internal
