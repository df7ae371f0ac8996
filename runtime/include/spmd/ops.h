// SPDX-License-Identifier: Apache-2.0
// File: spmd/ops.h
//
// Array constructors and jax.numpy-style operations. Binary operations broadcast like NumPy and
// promote dtypes like JAX (see spmd/dtype.h); a C++ arithmetic scalar is weakly typed, so
// `x + 2` keeps x's dtype and `int_array * 0.5` gives float32. Division `/` is true division
// (int / int gives float32), as in jnp.divide.
//
// Inside a shard_map/pmap body the ops run on the calling device's thread and allocate on that
// device; outside, on the default device. Results never depend on timing: every reduction runs in
// a fixed order.
//
// Example:
//   spmd::Array x = spmd::arange(6).reshape({2, 3});   // i32[2,3]
//   spmd::Array m = spmd::mean(x, 1);                   // f32[2]: {1, 4}
//   spmd::Array y = spmd::where(x > 2, x, 0);           // i32[2,3]
#pragma once

#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include "spmd/array.h"

namespace spmd {

// ---- constructors ----
Array arange(int64_t n, DType dtype = DType::kInt32);
Array arange(int64_t start, int64_t stop, int64_t step = 1, DType dtype = DType::kInt32);
Array zeros(Shape shape, DType dtype = DType::kFloat32);
Array ones(Shape shape, DType dtype = DType::kFloat32);
Array full(Shape shape, double value, DType dtype = DType::kFloat32);
Array zeros_like(const Array& x);
Array ones_like(const Array& x);
Array full_like(const Array& x, double value);

// ---- elementwise ----
Array operator-(const Array& x);
Array operator!(const Array& x);  // logical not (bool)
Array exp(const Array& x);
Array log(const Array& x);
Array sqrt(const Array& x);
Array tanh(const Array& x);
Array abs(const Array& x);  // a complex x gives its real type (complex64 -> float32)
Array sign(const Array& x);
Array floor(const Array& x);
Array ceil(const Array& x);
Array round(const Array& x);  // half to even
Array square(const Array& x);
Array erf_inv(const Array& x);
// Complex parts: real, imag and angle give a complex x's real type; for a real x, real and conj
// are x, imag is zeros and angle is atan2(0, x) (pi for negatives, in float32 for integers).
Array real(const Array& x);
Array imag(const Array& x);
Array conj(const Array& x);
Array angle(const Array& x);
// Floats from the math library (integers and bools compute in float32, as jnp does); complex
// inputs too, except erf and cbrt (TypeError, as lax). floor and ceil reject complex as well.
Array sin(const Array& x);
Array cos(const Array& x);
Array tan(const Array& x);
Array arcsin(const Array& x);
Array arccos(const Array& x);
Array arctan(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array arcsinh(const Array& x);
Array arccosh(const Array& x);
Array arctanh(const Array& x);
Array log1p(const Array& x);
Array expm1(const Array& x);
Array log2(const Array& x);
Array log10(const Array& x);
Array exp2(const Array& x);
Array erf(const Array& x);
Array cbrt(const Array& x);
Array reciprocal(const Array& x);  // 1 / x (integers give float32, as jnp's)
// jax.nn.sigmoid: 1 / (1 + exp(-x)); floats and complex only (TypeError otherwise, as
// lax.logistic).
Array sigmoid(const Array& x);
// Float classification (false, false, true for every integer and bool; a complex by its parts).
Array isnan(const Array& x);
Array isinf(const Array& x);
Array isfinite(const Array& x);
// Bitwise ops of integers (logical for bool), JAX's promotion between the operands; floats are a
// TypeError. Also the operators &, |, ^ and ~ (bitwise_not, jnp.invert).
Array bitwise_and(const Array& a, const Array& b);
Array bitwise_or(const Array& a, const Array& b);
Array bitwise_xor(const Array& a, const Array& b);
Array bitwise_not(const Array& x);

Array add(const Array& a, const Array& b);
Array subtract(const Array& a, const Array& b);
Array multiply(const Array& a, const Array& b);
Array divide(const Array& a, const Array& b);  // true division
// Integer floor_divide and remainder by zero give 0, NumPy's result (JAX's floor_divide gives -1
// or -2 there, an artifact of its lowering; its remainder gives 0 too).
Array floor_divide(const Array& a, const Array& b);
Array remainder(const Array& a, const Array& b);
Array power(const Array& a, const Array& b);
Array maximum(const Array& a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array logical_and(const Array& a, const Array& b);
Array logical_or(const Array& a, const Array& b);
Array logical_xor(const Array& a, const Array& b);
Array logical_not(const Array& x);
// Floats (integers compute in float32, as jnp does): atan2(y, x); hypot and logaddexp by JAX's
// formulas (overflow-safe; hypot is inf when either side is, logaddexp(inf, inf) is inf).
Array arctan2(const Array& y, const Array& x);
Array hypot(const Array& a, const Array& b);
Array logaddexp(const Array& a, const Array& b);
Array equal(const Array& a, const Array& b);
Array not_equal(const Array& a, const Array& b);
Array less(const Array& a, const Array& b);
Array less_equal(const Array& a, const Array& b);
Array greater(const Array& a, const Array& b);
Array greater_equal(const Array& a, const Array& b);
// cond ? a : b elementwise; cond must be bool; a and b promote.
Array where(const Array& cond, const Array& a, const Array& b);

// A weakly typed scalar operand (what a C++ literal becomes in `x + 2`).
struct WeakScalar {
  double value;
  bool is_float;
  bool is_bool;  // a bool literal takes the array's dtype (bool + true stays bool)
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  WeakScalar(T v)
      : value(static_cast<double>(v)),
        is_float(std::is_floating_point_v<T>),
        is_bool(std::is_same_v<T, bool>) {}
};
// The scalar as a rank-0 array of the dtype it takes next to an array of `like`'s dtype.
Array weak_scalar(WeakScalar s, const Array& like);
namespace internal {
// weak_scalar for the operators below: the same value, in a rank-0 array the calling thread
// reuses while nothing else holds it (a `x * 2` then allocates no scalar).
Array scalar_operand(WeakScalar s, const Array& like);
}  // namespace internal

Array where(const Array& cond, const Array& a, WeakScalar b);
Array where(const Array& cond, WeakScalar a, const Array& b);
Array maximum(const Array& a, WeakScalar b);
Array minimum(const Array& a, WeakScalar b);
Array power(const Array& a, WeakScalar b);
// jnp.clip: minimum(maximum(x, min), max), either bound optional (nullopt: unbounded). A bound
// above the other gives `max` wherever they cross, as in JAX.
Array clip(const Array& x, std::optional<WeakScalar> min, std::optional<WeakScalar> max);
Array clip(const Array& x, const Array& min, const Array& max);

#define SPMD_BINARY_OPERATOR(op, fn)                                            \
  inline Array operator op(const Array& a, const Array& b) { return fn(a, b); } \
  inline Array operator op(const Array& a, WeakScalar b) {                      \
    return fn(a, internal::scalar_operand(b, a));                               \
  }                                                                             \
  inline Array operator op(WeakScalar a, const Array& b) {                      \
    return fn(internal::scalar_operand(a, b), b);                               \
  }
SPMD_BINARY_OPERATOR(+, add)
SPMD_BINARY_OPERATOR(-, subtract)
SPMD_BINARY_OPERATOR(*, multiply)
SPMD_BINARY_OPERATOR(/, divide)
SPMD_BINARY_OPERATOR(%, remainder)
SPMD_BINARY_OPERATOR(==, equal)
SPMD_BINARY_OPERATOR(!=, not_equal)
SPMD_BINARY_OPERATOR(<, less)
SPMD_BINARY_OPERATOR(<=, less_equal)
SPMD_BINARY_OPERATOR(>, greater)
SPMD_BINARY_OPERATOR(>=, greater_equal)
SPMD_BINARY_OPERATOR(&, bitwise_and)
SPMD_BINARY_OPERATOR(|, bitwise_or)
SPMD_BINARY_OPERATOR(^, bitwise_xor)
#undef SPMD_BINARY_OPERATOR
inline Array operator~(const Array& x) { return bitwise_not(x); }

// ---- reductions ----
// Which axes to reduce: all (the default), one (`1`, negative counts from the end), or several
// (`{0, 2}`).
class Axes {
 public:
  Axes() = default;
  Axes(int axis) : axes_(std::vector<int>{axis}) {}
  Axes(std::initializer_list<int> axes) : axes_(std::vector<int>(axes)) {}
  Axes(std::vector<int> axes) : axes_(std::move(axes)) {}
  const std::optional<std::vector<int>>& get() const { return axes_; }

 private:
  std::optional<std::vector<int>> axes_;
};

Array sum(const Array& x, Axes axes = {}, bool keepdims = false);  // bool sums to int32
Array prod(const Array& x, Axes axes = {}, bool keepdims = false);
Array mean(const Array& x, Axes axes = {}, bool keepdims = false);  // ints give float32
Array max(const Array& x, Axes axes = {}, bool keepdims = false);
Array min(const Array& x, Axes axes = {}, bool keepdims = false);
Array any(const Array& x, Axes axes = {}, bool keepdims = false);
Array all(const Array& x, Axes axes = {}, bool keepdims = false);
// int32 index of the first maximum along `axis` (default: of the flattened array).
Array argmax(const Array& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Array argmin(const Array& x, std::optional<int> axis = std::nullopt, bool keepdims = false);

// ---- linear algebra ----
// NumPy matmul: 1-D operands are promoted and the added dimension removed; batch dimensions
// broadcast.
Array matmul(const Array& a, const Array& b);
Array dot(const Array& a, const Array& b);  // jnp.dot for 1-D and 2-D operands (= matmul there)

// ---- shape manipulation ----
Array reshape(const Array& x, Shape shape);
Array transpose(const Array& x, std::vector<int> perm = {});
Array swapaxes(const Array& x, int a, int b);
Array moveaxis(const Array& x, int source, int destination);
Array astype(const Array& x, DType dtype);
Array broadcast_to(const Array& x, Shape shape);
Array concatenate(const std::vector<Array>& xs, int axis = 0);
Array stack(const std::vector<Array>& xs, int axis = 0);
Array squeeze(const Array& x, std::optional<std::vector<int>> axes = std::nullopt);
Array squeeze(const Array& x, int axis);  // jnp.squeeze(x, axis)
Array expand_dims(const Array& x, int axis);
// x[start:stop:step] along each dimension; omitted trailing dimensions are taken whole. Negative
// start/stop count from the end and are clamped like Python slices.
Array slice(const Array& x, const std::vector<int64_t>& start, const std::vector<int64_t>& stop,
            const std::vector<int64_t>& step = {});
// x.take(i, axis): index `i` of dimension `axis`, removing that dimension.
Array take(const Array& x, int64_t index, int axis);
// A copy with dense row-major storage on the current device.
Array copy(const Array& x);

// Exact equality of shape, dtype and every element (NaNs equal when their bits are equal).
bool array_equal(const Array& a, const Array& b);

}  // namespace spmd
