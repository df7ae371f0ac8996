// SPDX-License-Identifier: Apache-2.0
// jax.numpy-style operations (spmd/ops.h): shapes, promotion and broadcasting here, element work
// in the backend's kernels.
#include "spmd/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <limits>
#include <numeric>

#include "array_impl.h"
#include "checks.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

using internal::broadcast_view;
using internal::const_view;
using internal::element_count;
using internal::empty_array;
using internal::flat_mut_view;
using internal::flat_view;
using internal::kernels;
using internal::local;
using internal::mut_view;
using internal::vma_of;
using internal::with_vma;

using internal::checked_axis;
using internal::checked_bytes;
using internal::checked_size;

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) {
      throw ValueError(fmt::format("Incompatible shapes for broadcasting: shapes=[{}, {}]",
                                   shape_tuple_string(a), shape_tuple_string(b)));
    }
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

// The floating type jnp gives integer inputs of transcendental ops and true division.
DType inexact(DType dt) {
  if (is_floating(dt) || is_complex(dt)) return dt;
  return itemsize(dt) == 8 ? DType::kFloat64 : DType::kFloat32;
}

// The dtype jnp.sum and jnp.prod accumulate in: bool and integers narrower than 32 bits widen to
// int32 (uint32 for unsigned ones), JAX's default integer types.
DType summed(DType dt) {
  if (dt == DType::kBool || dt == DType::kInt8 || dt == DType::kInt16) return DType::kInt32;
  if (dt == DType::kUInt8 || dt == DType::kUInt16) return DType::kUInt32;
  return dt;
}

// y = op(x) with x converted to `dtype`; y has `out_dtype` (a complex x's parts have its real
// type).
Array unary(internal::UnaryOp op, const Array& x, DType dtype, DType out_dtype) {
  const Device device = internal::current_device();  // asked once: each ask costs
  Array in = local(x.dtype() == dtype ? x : astype(x, dtype), device);
  Array out = empty_array(out_dtype, x.shape(), device);
  const int64_t n = element_count(x.shape());
  kernels(device).unary(op, flat_view(in, n, false), flat_mut_view(out, n));
  return with_vma(out, vma_of(x));
}

Array unary(internal::UnaryOp op, const Array& x, DType dtype) {
  return unary(op, x, dtype, dtype);
}

Array float_unary(internal::UnaryOp op, const Array& x) { return unary(op, x, inexact(x.dtype())); }

// lax's TypeError for a real-only op given a complex x, in JAX's words ("floor does not accept
// dtype complex64. Accepted dtypes are subtypes of floating.").
void check_not_complex(const Array& x, const char* name) {
  if (is_complex(x.dtype())) {
    throw TypeError(fmt::format(
        "{} does not accept dtype {}. Accepted dtypes are subtypes of floating.", name, x.dtype()));
  }
}

// The same for binary ops, naming the operand's position as lax does.
void check_real_operands(const Array& a, const Array& b, const char* name, const char* accepted) {
  for (int position = 0; position < 2; ++position) {
    DType dt = (position == 0 ? a : b).dtype();
    if (is_complex(dt)) {
      throw TypeError(fmt::format(
          "{} does not accept dtype {} at position {}. Accepted dtypes at position {} are "
          "subtypes of {}.",
          name, dt, position, position, accepted));
    }
  }
}

Array real_float_unary(internal::UnaryOp op, const Array& x, const char* name) {
  check_not_complex(x, name);
  return float_unary(op, x);
}

// A complex x's part (abs, real, imag, angle): an array of x's real type.
Array complex_part(internal::UnaryOp op, const Array& x) {
  return unary(op, x, x.dtype(), real_dtype(x.dtype()));
}

// Elementwise kernels take their operands as rank-1 runs (flat_view) when each has the result's
// n elements or one (`v * 2`, `x + y`), which skips broadcast_view's per-dimension work; else as
// views broadcast to the result's shape. `count` is the operand's element count.
bool all_flat(int64_t n, std::initializer_list<int64_t> counts) {
  return std::all_of(counts.begin(), counts.end(), [n](int64_t m) { return m == n || m == 1; });
}
internal::ConstView operand_view(const Array& x, int64_t count, const Shape& shape, int64_t n,
                                 bool flat) {
  return flat ? flat_view(x, n, count != n) : broadcast_view(x, shape);
}
internal::MutView result_view(const Array& y, int64_t n, bool flat) {
  return flat ? flat_mut_view(y, n) : mut_view(y);
}

// The shape a and b broadcast to: one of theirs when it is (no copy), else made in `made`.
const Shape& broadcast_shape(const Shape& a, const Shape& b, Shape& made) {
  if (a == b || b.empty()) return a;
  if (a.empty()) return b;
  made = broadcast_shapes(a, b);
  return made;
}

// x as a dense `dtype` array on `device`: x itself when it already is one (no copy of the Array,
// whose reference count device threads sharing an operand would fight over), else one made in
// `made`.
const Array& operand(const Array& x, DType dtype, const Device& device, Array& made) {
  if (x.dtype() == dtype && internal::is_local(x, device)) return x;
  made = local(x.dtype() == dtype ? x : astype(x, dtype), device);
  return made;
}

Array binary(internal::BinaryOp op, const Array& a, const Array& b, DType compute, DType result) {
  Shape made;
  const Shape& shape = broadcast_shape(a.shape(), b.shape(), made);
  const Device device = internal::current_device();
  Array converted_a, converted_b;
  const Array& la = operand(a, compute, device, converted_a);
  const Array& lb = operand(b, compute, device, converted_b);
  Array out = empty_array(result, shape, device);
  const int64_t n = element_count(shape), na = element_count(la.shape());
  const int64_t nb = element_count(lb.shape());
  const bool flat = all_flat(n, {na, nb});
  kernels(device).binary(op, operand_view(la, na, shape, n, flat),
                         operand_view(lb, nb, shape, n, flat), result_view(out, n, flat));
  return with_vma(out, vma_of(a) | vma_of(b));
}

Array arithmetic(internal::BinaryOp op, const Array& a, const Array& b) {
  DType dt = promote_types(a.dtype(), b.dtype());
  return binary(op, a, b, dt, dt);
}

Array comparison(internal::BinaryOp op, const Array& a, const Array& b) {
  return binary(op, a, b, promote_types(a.dtype(), b.dtype()), DType::kBool);
}

Array logical(internal::BinaryOp op, const Array& a, const Array& b) {
  return binary(op, a, b, DType::kBool, DType::kBool);
}

std::vector<int> normalize_axes(const Axes& axes, int ndim) {
  std::vector<int> out;
  if (!axes.get()) {
    out.resize(ndim);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int a : *axes.get()) {
    int n = checked_axis(a, ndim);
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      throw ValueError(fmt::format("duplicate value in 'axis': {}", a));
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Moves `axes` to the end (a stride permutation) and reduces them.
Array reduce(internal::ReduceOp op, const Array& x, const std::vector<int>& axes, bool keepdims,
             DType out_dtype) {
  Array in = local(x);
  internal::ConstView v = const_view(in);
  internal::ConstView permuted = v;
  permuted.shape.clear();
  permuted.strides.clear();
  Shape kept, kept_dims = x.shape();
  for (int d = 0; d < x.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
      kept_dims[d] = 1;
      continue;
    }
    permuted.shape.push_back(v.shape[d]);
    permuted.strides.push_back(v.strides[d]);
    kept.push_back(v.shape[d]);
  }
  for (int d : axes) {
    permuted.shape.push_back(v.shape[d]);
    permuted.strides.push_back(v.strides[d]);
  }
  Array out = empty_array(out_dtype, kept);
  kernels().reduce(op, permuted, static_cast<int>(axes.size()), mut_view(out));
  if (keepdims) out = reshape(out, kept_dims);
  return with_vma(out, vma_of(x));
}

void check_nonempty(const Array& x, const std::vector<int>& axes, const char* name) {
  for (int d : axes) {
    if (x.shape()[d] == 0) {
      throw ValueError(
          fmt::format("zero-size array to reduction operation {} which has no identity (shape {})",
                      name, shape_tuple_string(x.shape())));
    }
  }
}

// A strided view of x with each dimension d restricted to start[d] + i*step[d], i < shape[d].
Array strided_copy(const Array& x, const Shape& shape, const std::vector<int64_t>& start,
                   const std::vector<int64_t>& step) {
  Array in = local(x);
  internal::ConstView v = const_view(in);
  const char* base = static_cast<const char*>(v.data);
  const int64_t item = itemsize(x.dtype());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 0) base += start[d] * v.strides[d] * item;
    v.strides[d] *= step[d];
  }
  v.data = base;
  v.shape = shape;
  Array out = empty_array(x.dtype(), shape);
  kernels().copy(v, mut_view(out));
  return with_vma(out, vma_of(x));
}

}  // namespace

// ---- constructors ----

Array arange(int64_t n, DType dtype) {
  if (n < 0) n = 0;
  checked_bytes({n}, dtype, "arange", "size");
  Array out = empty_array(dtype, {n});
  kernels().iota(mut_view(out));
  return out;
}

Array arange(int64_t start, int64_t stop, int64_t step, DType dtype) {
  if (step == 0) throw ValueError("arange: step must not be zero");
  // ceil((stop - start) / step) in unsigned arithmetic: the span of two int64 may not fit in one.
  const bool up = step > 0;
  const uint64_t span = up ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                           : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  const uint64_t stride = up ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  const bool empty = up ? stop <= start : stop >= start;
  const uint64_t count = empty ? 0 : (span - 1) / stride + 1;
  if (count > static_cast<uint64_t>(INT64_MAX)) {
    throw ValueError(
        fmt::format("array is too big: arange({}, {}, {}) has {} elements, more than fit in int64",
                    start, stop, step, count));
  }
  const int64_t n = static_cast<int64_t>(count);
  checked_bytes({n}, dtype, "arange", "size");
  // start + i * step in int64 kernels, which wrap: every value lies between start and stop, so the
  // wrapped result is exact even where i * step alone overflows.
  Array values = add(multiply(arange(n, DType::kInt64), Array::scalar<int64_t>(step)),
                     Array::scalar<int64_t>(start));
  return values.astype(dtype);
}

namespace {

Array filled(const char* api, const Shape& shape, double value, DType dtype) {
  checked_bytes(shape, dtype, api);
  Array out = empty_array(dtype, shape);
  kernels().fill(mut_view(out), value);
  return out;
}

}  // namespace

Array full(Shape shape, double value, DType dtype) { return filled("full", shape, value, dtype); }
Array zeros(Shape shape, DType dtype) { return filled("zeros", shape, 0, dtype); }
Array ones(Shape shape, DType dtype) { return filled("ones", shape, 1, dtype); }
Array zeros_like(const Array& x) { return zeros(x.shape(), x.dtype()); }
Array ones_like(const Array& x) { return ones(x.shape(), x.dtype()); }
Array full_like(const Array& x, double value) { return full(x.shape(), value, x.dtype()); }

// ---- elementwise ----

Array operator-(const Array& x) {
  if (x.dtype() == DType::kBool) {
    throw TypeError("negation is not supported for bool arrays; use operator! (logical not)");
  }
  return unary(internal::UnaryOp::kNeg, x, x.dtype());
}
Array operator!(const Array& x) { return unary(internal::UnaryOp::kLogicalNot, x, DType::kBool); }
Array exp(const Array& x) { return float_unary(internal::UnaryOp::kExp, x); }
Array log(const Array& x) { return float_unary(internal::UnaryOp::kLog, x); }
Array sqrt(const Array& x) { return float_unary(internal::UnaryOp::kSqrt, x); }
Array tanh(const Array& x) { return float_unary(internal::UnaryOp::kTanh, x); }
Array erf_inv(const Array& x) { return real_float_unary(internal::UnaryOp::kErfInv, x, "erf_inv"); }
Array sin(const Array& x) { return float_unary(internal::UnaryOp::kSin, x); }
Array cos(const Array& x) { return float_unary(internal::UnaryOp::kCos, x); }
Array tan(const Array& x) { return float_unary(internal::UnaryOp::kTan, x); }
Array arcsin(const Array& x) { return float_unary(internal::UnaryOp::kArcsin, x); }
Array arccos(const Array& x) { return float_unary(internal::UnaryOp::kArccos, x); }
Array arctan(const Array& x) { return float_unary(internal::UnaryOp::kArctan, x); }
Array sinh(const Array& x) { return float_unary(internal::UnaryOp::kSinh, x); }
Array cosh(const Array& x) { return float_unary(internal::UnaryOp::kCosh, x); }
Array arcsinh(const Array& x) { return float_unary(internal::UnaryOp::kArcsinh, x); }
Array arccosh(const Array& x) { return float_unary(internal::UnaryOp::kArccosh, x); }
Array arctanh(const Array& x) { return float_unary(internal::UnaryOp::kArctanh, x); }
Array log1p(const Array& x) { return float_unary(internal::UnaryOp::kLog1p, x); }
Array expm1(const Array& x) { return float_unary(internal::UnaryOp::kExpm1, x); }
Array log2(const Array& x) { return float_unary(internal::UnaryOp::kLog2, x); }
Array log10(const Array& x) { return float_unary(internal::UnaryOp::kLog10, x); }
Array exp2(const Array& x) { return float_unary(internal::UnaryOp::kExp2, x); }
Array erf(const Array& x) { return real_float_unary(internal::UnaryOp::kErf, x, "erf"); }
Array cbrt(const Array& x) { return real_float_unary(internal::UnaryOp::kCbrt, x, "cbrt"); }
Array reciprocal(const Array& x) { return 1 / x.astype(inexact(x.dtype())); }
Array sigmoid(const Array& x) {
  if (!is_floating(x.dtype()) && !is_complex(x.dtype())) {
    throw TypeError(
        fmt::format("logistic does not accept dtype {}. Accepted dtypes are subtypes of floating, "
                    "complexfloating.",
                    x.dtype()));
  }
  return 1 / (exp(-x) + 1);
}
// A complex is NaN or infinite when either part is, finite when both are.
Array isnan(const Array& x) {
  if (is_complex(x.dtype())) return logical_or(isnan(real(x)), isnan(imag(x)));
  return is_floating(x.dtype()) ? not_equal(x, x) : full(x.shape(), false, DType::kBool);
}
Array isinf(const Array& x) {
  if (is_complex(x.dtype())) return logical_or(isinf(real(x)), isinf(imag(x)));
  if (!is_floating(x.dtype())) return full(x.shape(), false, DType::kBool);
  return abs(x) == std::numeric_limits<double>::infinity();
}
Array isfinite(const Array& x) {
  if (is_complex(x.dtype())) return logical_and(isfinite(real(x)), isfinite(imag(x)));
  if (!is_floating(x.dtype())) return full(x.shape(), true, DType::kBool);
  return abs(x) < std::numeric_limits<double>::infinity();
}
Array floor(const Array& x) {
  check_not_complex(x, "floor");
  return is_floating(x.dtype()) ? unary(internal::UnaryOp::kFloor, x, x.dtype()) : x;
}
Array ceil(const Array& x) {
  check_not_complex(x, "ceil");
  return is_floating(x.dtype()) ? unary(internal::UnaryOp::kCeil, x, x.dtype()) : x;
}
Array round(const Array& x) {
  const bool inexact_type = is_floating(x.dtype()) || is_complex(x.dtype());
  return inexact_type ? unary(internal::UnaryOp::kRound, x, x.dtype()) : x;
}
Array abs(const Array& x) {
  if (is_complex(x.dtype())) return complex_part(internal::UnaryOp::kAbs, x);
  return unary(internal::UnaryOp::kAbs, x, x.dtype());
}
Array real(const Array& x) {
  return is_complex(x.dtype()) ? complex_part(internal::UnaryOp::kReal, x) : x;
}
Array imag(const Array& x) {
  return is_complex(x.dtype()) ? complex_part(internal::UnaryOp::kImag, x) : zeros_like(x);
}
Array conj(const Array& x) {
  return is_complex(x.dtype()) ? unary(internal::UnaryOp::kConj, x, x.dtype()) : x;
}
Array angle(const Array& x) {
  if (is_complex(x.dtype())) return complex_part(internal::UnaryOp::kAngle, x);
  Array xf = x.astype(inexact(x.dtype()));
  return arctan2(zeros_like(xf), xf);
}
Array sign(const Array& x) {
  if (x.dtype() == DType::kBool) {
    throw TypeError(
        "sign does not accept dtype bool. Accepted dtypes are subtypes of integer, floating.");
  }
  return unary(internal::UnaryOp::kSign, x, x.dtype());
}
Array square(const Array& x) {  // jnp.square of bool gives int32
  DType dt = x.dtype() == DType::kBool ? DType::kInt32 : x.dtype();
  return unary(internal::UnaryOp::kSquare, x, dt);
}

Array add(const Array& a, const Array& b) { return arithmetic(internal::BinaryOp::kAdd, a, b); }
Array subtract(const Array& a, const Array& b) {
  return arithmetic(internal::BinaryOp::kSub, a, b);
}
Array multiply(const Array& a, const Array& b) {
  return arithmetic(internal::BinaryOp::kMul, a, b);
}
Array divide(const Array& a, const Array& b) {
  DType dt = inexact(promote_types(a.dtype(), b.dtype()));
  return binary(internal::BinaryOp::kDiv, a, b, dt, dt);
}
Array floor_divide(const Array& a, const Array& b) {
  if (is_complex(a.dtype()) || is_complex(b.dtype())) {
    throw TypeError("floor_divide does not support complex-valued inputs");
  }
  return arithmetic(internal::BinaryOp::kFloorDiv, a, b);
}
Array remainder(const Array& a, const Array& b) {
  check_real_operands(a, b, "rem", "integer, floating");
  return arithmetic(internal::BinaryOp::kRem, a, b);
}
Array power(const Array& a, const Array& b) { return arithmetic(internal::BinaryOp::kPow, a, b); }
Array maximum(const Array& a, const Array& b) { return arithmetic(internal::BinaryOp::kMax, a, b); }
Array minimum(const Array& a, const Array& b) { return arithmetic(internal::BinaryOp::kMin, a, b); }
Array logical_and(const Array& a, const Array& b) {
  return logical(internal::BinaryOp::kAnd, a, b);
}
Array logical_or(const Array& a, const Array& b) { return logical(internal::BinaryOp::kOr, a, b); }
Array logical_xor(const Array& a, const Array& b) {
  return logical(internal::BinaryOp::kXor, a, b);
}
Array logical_not(const Array& x) { return !x.astype(DType::kBool); }

namespace {
// `name` is lax's ("and"), as in JAX's message.
Array bitwise(internal::BinaryOp op, const Array& a, const Array& b, const char* name) {
  for (int position = 0; position < 2; ++position) {
    DType dt = (position == 0 ? a : b).dtype();
    if (is_floating(dt) || is_complex(dt)) {
      throw TypeError(
          fmt::format("{} does not accept dtype {} at position {}. Accepted dtypes at position {} "
                      "are subtypes of integer, bool.",
                      name, dt, position, position));
    }
  }
  DType dt = promote_types(a.dtype(), b.dtype());
  return binary(op, a, b, dt, dt);
}
}  // namespace

Array bitwise_and(const Array& a, const Array& b) {
  return bitwise(internal::BinaryOp::kAnd, a, b, "and");
}
Array bitwise_or(const Array& a, const Array& b) {
  return bitwise(internal::BinaryOp::kOr, a, b, "or");
}
Array bitwise_xor(const Array& a, const Array& b) {
  return bitwise(internal::BinaryOp::kXor, a, b, "xor");
}
Array bitwise_not(const Array& x) {
  if (x.dtype() == DType::kBool) return !x;
  if (is_floating(x.dtype()) || is_complex(x.dtype())) {
    throw TypeError(fmt::format(
        "not does not accept dtype {}. Accepted dtypes are subtypes of integer, bool.", x.dtype()));
  }
  // All ones in x's type: -1 wraps into unsigned types.
  return bitwise(internal::BinaryOp::kXor, x, full({}, -1, DType::kInt64).astype(x.dtype()), "not");
}

Array arctan2(const Array& y, const Array& x) {
  check_real_operands(y, x, "atan2", "integer, floating");
  DType dt = inexact(promote_types(y.dtype(), x.dtype()));
  return binary(internal::BinaryOp::kAtan2, y, x, dt, dt);
}
Array hypot(const Array& a, const Array& b) {
  if (is_complex(a.dtype()) || is_complex(b.dtype())) {
    throw ValueError(
        "jnp.hypot is not well defined for complex-valued inputs. Please convert to real values "
        "first, such as by using abs(x)");
  }
  DType dt = inexact(promote_types(a.dtype(), b.dtype()));
  Array x = abs(a.astype(dt));
  Array y = abs(b.astype(dt));
  Array inf = logical_or(isinf(x), isinf(y));
  Array big = maximum(x, y);
  Array small = minimum(x, y);
  Array zero = big == 0;
  Array ratio = small / where(zero, ones_like(big), big);
  Array out = where(zero, big, big * sqrt(square(ratio) + 1));
  return where(inf, full({}, std::numeric_limits<double>::infinity(), dt), out);
}
Array logaddexp(const Array& a, const Array& b) {
  check_real_operands(a, b, "logaddexp", "integer, floating");
  DType dt = inexact(promote_types(a.dtype(), b.dtype()));
  Array x = a.astype(dt);
  Array y = b.astype(dt);
  Array delta = x - y;
  // Equal infinities give NaN in delta: then x + y is the answer (inf, or NaN for inf - inf).
  return where(isnan(delta), x + y, maximum(x, y) + log1p(exp(-abs(delta))));
}
Array equal(const Array& a, const Array& b) { return comparison(internal::BinaryOp::kEq, a, b); }
Array not_equal(const Array& a, const Array& b) {
  return comparison(internal::BinaryOp::kNe, a, b);
}
Array less(const Array& a, const Array& b) { return comparison(internal::BinaryOp::kLt, a, b); }
Array less_equal(const Array& a, const Array& b) {
  return comparison(internal::BinaryOp::kLe, a, b);
}
Array greater(const Array& a, const Array& b) { return comparison(internal::BinaryOp::kGt, a, b); }
Array greater_equal(const Array& a, const Array& b) {
  return comparison(internal::BinaryOp::kGe, a, b);
}

Array where(const Array& cond, const Array& a, const Array& b) {
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape()), b.shape());
  DType dt = promote_types(a.dtype(), b.dtype());
  Array lc = local(cond.dtype() == DType::kBool ? cond : astype(cond, DType::kBool));
  Array la = local(a.dtype() == dt ? a : astype(a, dt));
  Array lb = local(b.dtype() == dt ? b : astype(b, dt));
  Array out = empty_array(dt, shape);
  const int64_t n = element_count(shape), nc = element_count(lc.shape());
  const int64_t na = element_count(la.shape()), nb = element_count(lb.shape());
  const bool flat = all_flat(n, {nc, na, nb});
  kernels().select(operand_view(lc, nc, shape, n, flat), operand_view(la, na, shape, n, flat),
                   operand_view(lb, nb, shape, n, flat), result_view(out, n, flat));
  return with_vma(out, vma_of(cond) | vma_of(a) | vma_of(b));
}

namespace {
void check_clip_real(const Array& x, const Array& min, const Array& max) {
  if (is_complex(x.dtype()) || is_complex(min.dtype()) || is_complex(max.dtype())) {
    throw ValueError(
        "Clip received a complex value either through the input or the min/max keywords. Complex "
        "values have no ordering and cannot be clipped. Please convert to a real value or array "
        "by taking the real or imaginary components via spmd::real/imag respectively.");
  }
}
}  // namespace

namespace {

// The dtype a weak scalar takes next to `like`, and the value to fill it with.
std::pair<DType, internal::Scalar> weak_value(WeakScalar s, const Array& like) {
  if (s.is_bool) return {like.dtype(), s.value};
  DType dt = promote_with_scalar(like.dtype(), s.is_float);
  if (!s.is_float && dt == DType::kInt32 &&
      (s.value < static_cast<double>(INT32_MIN) || s.value > static_cast<double>(INT32_MAX))) {
    throw ValueError(
        fmt::format("Python int {:.0f} too large to convert to int32 (the dtype of "
                    "the array it is combined with); convert the array first",
                    s.value));
  }
  // An integer literal wraps into the array's integer type as in JAX (uint32 array + -1 adds
  // 0xffffffff): filled as an int64, which the kernels wrap, where the double would saturate.
  if (!s.is_float && is_integer(dt)) {
    constexpr double kTwoTo63 = 9223372036854775808.0;
    const int64_t wide = s.value >= kTwoTo63   ? INT64_MAX
                         : s.value < -kTwoTo63 ? INT64_MIN
                                               : static_cast<int64_t>(s.value);
    return {dt, wide};
  }
  return {dt, s.value};
}

}  // namespace

Array weak_scalar(WeakScalar s, const Array& like) {
  const auto [dt, value] = weak_value(s, like);
  Array out = empty_array(dt, {});
  kernels().fill(mut_view(out), value);
  return out;
}

namespace internal {

// Each thread keeps one rank-0 array per CPU device and kind of weak scalar next to a dtype,
// refilled in place while nothing else holds it (the ops never return an operand as their result,
// and one that did would only make the next call allocate), and found again by the literal's
// bits: `x * 2` in a loop then neither allocates nor works out the scalar's dtype again (-0.0 is
// not 0.0; a NaN is itself). Only CPU devices: their arrays are plain host memory, while other
// backends count their buffers (the test backend's leak checks) or fill on a stream anyway.
Array scalar_operand(WeakScalar s, const Array& like) {
  const Device device = current_device();
  if (device.platform != Platform::kCpu) return weak_scalar(s, like);
  struct Slot {
    Device device;
    DType like;  // the dtype and the literal's kind decide the array's dtype (weak_value)
    bool is_float, is_bool;
    uint64_t bits;  // the literal `array` holds (arrays are immutable: only this function writes)
    Array array;
  };
  thread_local std::vector<Slot> slots;
  const DType like_dtype = like.dtype();
  const auto bits = std::bit_cast<uint64_t>(s.value);
  auto slot = std::find_if(slots.begin(), slots.end(), [&](const Slot& x) {
    return x.device == device && x.like == like_dtype && x.is_float == s.is_float &&
           x.is_bool == s.is_bool;
  });
  if (slot != slots.end() && slot->bits == bits) return slot->array;
  const std::pair<DType, Scalar> weak = weak_value(s, like);  // (may throw: nothing changed yet)
  if (slot == slots.end()) {
    slots.push_back(
        {device, like_dtype, s.is_float, s.is_bool, bits, empty_array(weak.first, {}, device)});
    slot = slots.end() - 1;
  } else if (ArrayAccess::ptr(slot->array).use_count() != 1) {
    slot->array = empty_array(weak.first, {}, device);
  }
  kernels(device).fill(mut_view(slot->array), weak.second);
  slot->bits = bits;
  return slot->array;
}

}  // namespace internal

Array where(const Array& cond, const Array& a, WeakScalar b) {
  return where(cond, a, internal::scalar_operand(b, a));
}
Array where(const Array& cond, WeakScalar a, const Array& b) {
  return where(cond, internal::scalar_operand(a, b), b);
}
Array maximum(const Array& a, WeakScalar b) { return maximum(a, internal::scalar_operand(b, a)); }
Array minimum(const Array& a, WeakScalar b) { return minimum(a, internal::scalar_operand(b, a)); }
Array power(const Array& a, WeakScalar b) { return power(a, internal::scalar_operand(b, a)); }
Array clip(const Array& x, std::optional<WeakScalar> min, std::optional<WeakScalar> max) {
  check_clip_real(x, x, x);
  Array out = min ? maximum(x, *min) : x;
  return max ? minimum(out, *max) : out;
}
Array clip(const Array& x, const Array& min, const Array& max) {
  check_clip_real(x, min, max);
  return minimum(maximum(x, min), max);
}

// ---- reductions ----

Array sum(const Array& x, Axes axes, bool keepdims) {
  DType dt = summed(x.dtype());
  return reduce(internal::ReduceOp::kSum, x.dtype() == dt ? x : astype(x, dt),
                normalize_axes(axes, x.ndim()), keepdims, dt);
}

Array prod(const Array& x, Axes axes, bool keepdims) {
  DType dt = summed(x.dtype());
  return reduce(internal::ReduceOp::kProd, x.dtype() == dt ? x : astype(x, dt),
                normalize_axes(axes, x.ndim()), keepdims, dt);
}

Array mean(const Array& x, Axes axes, bool keepdims) {
  std::vector<int> ax = normalize_axes(axes, x.ndim());
  Shape reduced;
  for (int d : ax) reduced.push_back(x.shape()[d]);
  const int64_t count = checked_size(reduced, "mean", "reduced shape");
  // Like jnp.mean, half floats are summed in float32 and rounded once at the end.
  DType result = inexact(x.dtype());
  DType acc = (result == DType::kFloat16 || result == DType::kBFloat16) ? DType::kFloat32 : result;
  Array total = reduce(internal::ReduceOp::kSum, astype(x, acc), ax, keepdims, acc);
  return astype(divide(total, full({}, static_cast<double>(count), acc)), result);
}

Array max(const Array& x, Axes axes, bool keepdims) {
  std::vector<int> ax = normalize_axes(axes, x.ndim());
  check_nonempty(x, ax, "max");
  return reduce(internal::ReduceOp::kMax, x, ax, keepdims, x.dtype());
}

Array min(const Array& x, Axes axes, bool keepdims) {
  std::vector<int> ax = normalize_axes(axes, x.ndim());
  check_nonempty(x, ax, "min");
  return reduce(internal::ReduceOp::kMin, x, ax, keepdims, x.dtype());
}

Array any(const Array& x, Axes axes, bool keepdims) {
  return reduce(internal::ReduceOp::kAny, astype(x, DType::kBool), normalize_axes(axes, x.ndim()),
                keepdims, DType::kBool);
}

Array all(const Array& x, Axes axes, bool keepdims) {
  return reduce(internal::ReduceOp::kAll, astype(x, DType::kBool), normalize_axes(axes, x.ndim()),
                keepdims, DType::kBool);
}

static Array arg_reduce(internal::ReduceOp op, const char* name, const Array& x,
                        std::optional<int> axis, bool keepdims) {
  if (!axis) {
    Array flat = reshape(x, {x.size()});
    if (flat.size() == 0) {
      throw ValueError(fmt::format("attempt to get {} of an empty sequence", name));
    }
    Array out = reduce(op, flat, {0}, false, DType::kInt32);
    return keepdims ? reshape(out, Shape(x.ndim(), 1)) : out;
  }
  std::vector<int> ax{checked_axis(*axis, x.ndim())};
  if (x.shape()[ax[0]] == 0) {
    throw ValueError(fmt::format("attempt to get {} of an empty sequence", name));
  }
  return reduce(op, x, ax, keepdims, DType::kInt32);
}

Array argmax(const Array& x, std::optional<int> axis, bool keepdims) {
  check_real_operands(x, x, "gt", "integer, floating, bool");
  return arg_reduce(internal::ReduceOp::kArgMax, "argmax", x, axis, keepdims);
}
Array argmin(const Array& x, std::optional<int> axis, bool keepdims) {
  check_real_operands(x, x, "lt", "integer, floating, bool");
  return arg_reduce(internal::ReduceOp::kArgMin, "argmin", x, axis, keepdims);
}

// ---- linear algebra ----

namespace {

// A matrix view as the matmul kernel's batch of one: [1, rows, cols].
template <class View>
View batch_of_one(View v) {
  v.shape = internal::Dims{1, v.shape[0], v.shape[1]};
  v.strides = internal::Strides{0, v.strides[0], v.strides[1]};
  return v;
}

// matmul of two matrices in `dt`: no batch shape to broadcast, collapse or restore (a training
// step's matmuls, where those shapes' allocations cost as much as a small product).
Array matrix_product(const Array& a, const Array& b, DType dt) {
  const Array la = local(a.dtype() == dt ? a : astype(a, dt));
  const Array lb = local(b.dtype() == dt ? b : astype(b, dt));
  Array out = empty_array(dt, {a.shape()[0], b.shape()[1]});
  kernels().matmul(batch_of_one(const_view(la)), batch_of_one(const_view(lb)),
                   batch_of_one(mut_view(out)));
  return with_vma(out, vma_of(a) | vma_of(b));
}

}  // namespace

Array matmul(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw ValueError(fmt::format("matmul operands must have at least one dimension, got {} and {}",
                                 type_string(a.dtype(), a.shape()),
                                 type_string(b.dtype(), b.shape())));
  }
  DType dt = promote_types(a.dtype(), b.dtype());
  Array a2 = a.ndim() == 1 ? expand_dims(a, 0) : a;
  Array b2 = b.ndim() == 1 ? expand_dims(b, 1) : b;
  int64_t m = a2.shape()[a2.ndim() - 2], k = a2.shape()[a2.ndim() - 1];
  int64_t k2 = b2.shape()[b2.ndim() - 2], n = b2.shape()[b2.ndim() - 1];
  if (k != k2) {
    throw ValueError(fmt::format(
        "dot_general requires contracting dimensions to have the same shape, got ({},) and ({},) "
        "(matmul of {} and {})",
        k, k2, type_string(a.dtype(), a.shape()), type_string(b.dtype(), b.shape())));
  }
  if (a.ndim() == 2 && b.ndim() == 2) return matrix_product(a, b, dt);
  Shape batch = broadcast_shapes(Shape(a2.shape().begin(), a2.shape().end() - 2),
                                 Shape(b2.shape().begin(), b2.shape().end() - 2));
  int64_t nb = shape_size(batch);
  // Collapse the batch dimensions: broadcast copies only when there are several of them.
  auto batched = [&](const Array& x, int64_t rows, int64_t cols) {
    Shape full_shape = batch;
    full_shape.push_back(rows);
    full_shape.push_back(cols);
    Array lx = local(x.dtype() == dt ? x : astype(x, dt));
    if (batch.size() > 1) lx = local(reshape(broadcast_to(lx, full_shape), {nb, rows, cols}));
    internal::ConstView v =
        broadcast_view(lx, batch.size() > 1 ? Shape{nb, rows, cols} : full_shape);
    if (batch.empty()) v = batch_of_one(std::move(v));
    return std::make_pair(lx, v);
  };
  auto [la, va] = batched(a2, m, k);
  auto [lb, vb] = batched(b2, k, n);
  Array out = empty_array(dt, {nb, m, n});
  kernels().matmul(va, vb, mut_view(out));
  Shape out_shape = batch;
  if (a.ndim() > 1) out_shape.push_back(m);
  if (b.ndim() > 1) out_shape.push_back(n);
  return with_vma(reshape(out, out_shape), vma_of(a) | vma_of(b));
}

Array dot(const Array& a, const Array& b) {
  if (a.ndim() > 2 || b.ndim() > 2) {
    throw NotImplementedError(fmt::format(
        "spmd::dot supports operands of rank <= 2, got {} and {}; use spmd::matmul for batches",
        type_string(a.dtype(), a.shape()), type_string(b.dtype(), b.shape())));
  }
  return matmul(a, b);
}

// ---- shape manipulation ----

Array reshape(const Array& x, Shape shape) {
  const auto unknown = std::find(shape.begin(), shape.end(), -1);
  // The shape as the caller gave it, for messages (no copy on the way that does not throw).
  auto given = [&shape, at = unknown - shape.begin()] {
    Shape g = shape;
    if (at < std::ssize(g)) g[at] = -1;
    return shape_tuple_string(g);
  };
  auto cannot = [&] {
    return ValueError(fmt::format("cannot reshape array of shape {} (size {}) into shape {}",
                                  shape_tuple_string(x.shape()), x.size(), given()));
  };
  if (unknown != shape.end()) {
    if (std::find(unknown + 1, shape.end(), -1) != shape.end()) {
      throw ValueError(
          fmt::format("can only specify one unknown dimension (-1), got shape {}", given()));
    }
    *unknown = 1;
    const int64_t known = checked_size(shape, "reshape", "new shape");
    if (known == 0 || x.size() % known != 0) throw cannot();
    *unknown = x.size() / known;
  }
  if (checked_size(shape, "reshape", "new shape") != x.size()) throw cannot();
  Array in = local(x);
  const internal::ShardData& s = internal::single_shard(in);
  return with_vma(internal::array_from_buffer(x.dtype(), std::move(shape), s.buffer, s.offset),
                  vma_of(x));
}

Array transpose(const Array& x, std::vector<int> perm) {
  int n = x.ndim();
  if (perm.empty()) {
    for (int d = n - 1; d >= 0; --d) perm.push_back(d);
  }
  const Shape given(perm.begin(), perm.end());  // for the message, before normalisation
  for (int& p : perm) {
    if (p < 0 && p >= -n) p += n;  // negative entries count from the end
  }
  if (!internal::is_permutation(perm, n)) {
    throw ValueError(
        fmt::format("transpose permutation isn't a permutation of operand dimensions, "
                    "got permutation {} for operand shape {}",
                    shape_tuple_string(given), shape_tuple_string(x.shape())));
  }
  Array in = local(x);
  internal::ConstView v = const_view(in);
  internal::ConstView t = v;
  Shape shape(n);
  for (int d = 0; d < n; ++d) {
    shape[d] = v.shape[perm[d]];
    t.shape[d] = v.shape[perm[d]];
    t.strides[d] = v.strides[perm[d]];
  }
  Array out = empty_array(x.dtype(), shape);
  kernels().copy(t, mut_view(out));
  return with_vma(out, vma_of(x));
}

Array swapaxes(const Array& x, int a, int b) {
  std::vector<int> perm(x.ndim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[checked_axis(a, x.ndim())], perm[checked_axis(b, x.ndim())]);
  return transpose(x, perm);
}

Array moveaxis(const Array& x, int source, int destination) {
  int s = checked_axis(source, x.ndim()), d = checked_axis(destination, x.ndim());
  std::vector<int> perm;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i != s) perm.push_back(i);
  }
  perm.insert(perm.begin() + d, s);
  return transpose(x, perm);
}

Array astype(const Array& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Array in = local(x);
  Array out = empty_array(dtype, x.shape());
  const int64_t n = element_count(x.shape());
  kernels().copy(flat_view(in, n, false), flat_mut_view(out, n));
  return with_vma(out, vma_of(x));
}

Array broadcast_to(const Array& x, Shape shape) {
  checked_bytes(shape, x.dtype(), "broadcast_to");
  if (broadcast_shapes(x.shape(), shape) != shape) {
    throw ValueError(fmt::format("Incompatible shapes for broadcasting: {} and requested shape {}",
                                 shape_tuple_string(x.shape()), shape_tuple_string(shape)));
  }
  Array in = local(x);
  Array out = empty_array(x.dtype(), shape);
  kernels().copy(broadcast_view(in, shape), mut_view(out));
  return with_vma(out, vma_of(x));
}

Array concatenate(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) throw ValueError("Need at least one array to concatenate.");
  int n = xs[0].ndim();
  if (n == 0) throw ValueError("Zero-dimensional arrays cannot be concatenated.");
  int ax = checked_axis(axis, n);
  Shape shape = xs[0].shape();
  shape[ax] = 0;
  DType dt = xs[0].dtype();
  uint64_t vma = 0;
  for (const Array& x : xs) {
    Shape s = x.shape();
    bool ok = x.ndim() == n;
    for (int d = 0; ok && d < n; ++d) ok = d == ax || s[d] == xs[0].shape()[d];
    if (!ok) {
      throw ValueError(fmt::format(
          "Cannot concatenate arrays with shapes that differ in dimensions other than the one "
          "being concatenated: concatenating along dimension {} for shapes {} and {}.",
          ax, shape_tuple_string(xs[0].shape()), shape_tuple_string(s)));
    }
    if (__builtin_add_overflow(shape[ax], s[ax], &shape[ax])) {
      throw ValueError(fmt::format(
          "array is too big: concatenating along dimension {} gives more than 2^63 - 1 entries",
          ax));
    }
    dt = promote_types(dt, x.dtype());
    vma |= vma_of(x);
  }
  Array out = empty_array(dt, shape);
  internal::MutView dst = mut_view(out);
  int64_t offset = 0;
  for (const Array& x : xs) {
    internal::MutView part = dst;
    part.data = static_cast<char*>(dst.data) + offset * dst.strides[ax] * itemsize(dt);
    part.shape[ax] = x.shape()[ax];
    Array lx = local(x);
    kernels().copy(const_view(lx), part);
    offset += x.shape()[ax];
  }
  return with_vma(out, vma);
}

Array stack(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) throw ValueError("Need at least one array to stack.");
  for (const Array& x : xs) {
    if (x.shape() != xs[0].shape()) {
      throw ValueError(fmt::format("All input arrays must have the same shape, got {} and {}",
                                   shape_tuple_string(xs[0].shape()),
                                   shape_tuple_string(x.shape())));
    }
  }
  int ax = checked_axis(axis, xs[0].ndim() + 1);
  std::vector<Array> expanded;
  for (const Array& x : xs) expanded.push_back(expand_dims(x, ax));
  return concatenate(expanded, ax);
}

Array squeeze(const Array& x, std::optional<std::vector<int>> axes) {
  std::vector<int> ax;
  if (axes) {
    for (int a : *axes) ax.push_back(checked_axis(a, x.ndim()));
    for (int a : ax) {
      if (x.shape()[a] != 1) {
        Shape dims(ax.begin(), ax.end());  // printed like lax.squeeze: a sorted Python tuple
        std::sort(dims.begin(), dims.end());
        throw ValueError(fmt::format(
            "cannot select an axis to squeeze out which has size not equal to one, got shape={} "
            "and dimensions={}",
            shape_tuple_string(x.shape()), shape_tuple_string(dims)));
      }
    }
  } else {
    for (int d = 0; d < x.ndim(); ++d) {
      if (x.shape()[d] == 1) ax.push_back(d);
    }
  }
  Shape shape;
  for (int d = 0; d < x.ndim(); ++d) {
    if (std::find(ax.begin(), ax.end(), d) == ax.end()) shape.push_back(x.shape()[d]);
  }
  return reshape(x, shape);
}

Array squeeze(const Array& x, int axis) { return squeeze(x, std::vector<int>{axis}); }

Array expand_dims(const Array& x, int axis) {
  int ax = checked_axis(axis, x.ndim() + 1);
  Shape shape = x.shape();
  shape.insert(shape.begin() + ax, 1);
  return reshape(x, shape);
}

Array slice(const Array& x, const std::vector<int64_t>& start, const std::vector<int64_t>& stop,
            const std::vector<int64_t>& step) {
  int n = x.ndim();
  if (static_cast<int>(start.size()) > n || stop.size() != start.size() ||
      (!step.empty() && step.size() != start.size())) {
    throw ValueError(fmt::format(
        "slice needs start, stop (and step) of equal length at most the rank {}, got {}, {}, {}", n,
        start.size(), stop.size(), step.size()));
  }
  Shape shape = x.shape();
  std::vector<int64_t> begin(n, 0), steps(n, 1);
  for (size_t d = 0; d < start.size(); ++d) {
    int64_t size = x.shape()[d];
    int64_t st = step.empty() ? 1 : step[d];
    if (st == 0) throw ValueError("slice step cannot be zero");
    // Python's slice.indices().
    auto clamp = [&](int64_t v) {
      if (v < 0) v += size;
      if (st > 0) return std::clamp<int64_t>(v, 0, size);
      return std::clamp<int64_t>(v, -1, size - 1);
    };
    int64_t b = clamp(start[d]), e = clamp(stop[d]);
    // ceil(|e - b| / |st|) without overflow: b and e lie in [-1, size], st may be any int64.
    const int64_t span = st > 0 ? e - b : b - e;
    const uint64_t stride = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
    const int64_t len = span <= 0 ? 0 : static_cast<int64_t>((span - 1) / stride + 1);
    begin[d] = b;
    steps[d] = len > 1 ? st : 1;  // a step past the end never multiplies a stride
    shape[d] = len;
  }
  return strided_copy(x, shape, begin, steps);
}

Array take(const Array& x, int64_t index, int axis) {
  int ax = checked_axis(axis, x.ndim());
  int64_t size = x.shape()[ax];
  if (index < -size || index >= size) {
    throw IndexError(
        fmt::format("index {} is out of bounds for axis {} with size {}", index, ax, size));
  }
  if (index < 0) index += size;
  Shape shape = x.shape();
  shape.erase(shape.begin() + ax);
  if (ax == 0) {  // one contiguous run of a shard (the legacy pmap's per-device row): share it
    Index row = internal::full_index(x.shape());
    row[0] = {index, index + 1};
    Array shared = internal::shared_region(x, row, shape, internal::current_device());
    if (shared.valid()) return with_vma(shared, vma_of(x));
  }
  std::vector<int64_t> start(x.ndim(), 0), stop(x.shape().begin(), x.shape().end());
  start[ax] = index;
  stop[ax] = index + 1;
  return reshape(slice(x, start, stop), shape);
}

Array copy(const Array& x) {
  Array in = local(x);
  Array out = empty_array(x.dtype(), x.shape());
  kernels().copy(const_view(in), mut_view(out));
  return with_vma(out, vma_of(x));
}

bool array_equal(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  // Compared on the host: device memory need not be host-readable (CUDA).
  const auto bytes = static_cast<size_t>(a.size() * itemsize(a.dtype()));
  if (bytes == 0) return true;
  std::vector<char> ha(bytes), hb(bytes);
  internal::read_host(a, a.dtype(), ha.data());
  internal::read_host(b, b.dtype(), hb.data());
  return std::memcmp(ha.data(), hb.data(), bytes) == 0;
}

}  // namespace spmd
