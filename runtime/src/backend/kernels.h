// SPDX-License-Identifier: Apache-2.0
// Internal: the op-kernel half of the backend seam.
//
// The ops layer (runtime/src/ops*.cc) does all shape work (broadcasting, promotion, axis
// normalisation, transposes as stride permutations) and hands each backend a small set of
// primitive kernels over strided views. A backend implements them for its memory (host memory for
// the CPU backend, device memory for CUDA). Views are never owning.
//
// Conventions shared by every kernel:
//   - Strides are in elements, not bytes, and may be 0 (broadcast) or negative.
//   - Output views are always dense row-major (the ops layer allocates them) unless a kernel says
//     otherwise; input views may have any strides.
//   - Integer arithmetic wraps (two's complement), as XLA does; float->int conversion saturates
//     and maps NaN to 0, as XLA does.
//   - float16/bfloat16 are computed in float32 and rounded once per result (exact for + - * /
//   sqrt).
//   - Every reduction runs in a fixed order, so results never depend on threads or timing.
//   - Float matmul is the exception to a spelled-out order. The CPU backend calls BLIS's gemm (a
//     serial build: it runs on the calling device's thread and starts none of its own), whose
//     summation order (k blocking, vector lanes, FMA) is BLIS's, fixed per library build and per
//     the kernels that build selects for the CPU at run time (Debian's BLIS is built for the
//     whole x86_64 family and picks a sub-configuration, e.g. zen3 or haswell, by CPU), and which
//     may depend on the problem's shape and operand strides (its small-matrix path, its packing).
//     So on one machine and library a product's bits are a function of its operands, shapes and
//     layouts: they repeat across runs, threads and timing, but may differ on another CPU type or
//     BLIS version, and from the increasing-k loop that spmd used before. Sums that are exact in
//     the accumulation type (small integers, say) are the same everywhere.
#pragma once

#include <cstdint>
#include <variant>

#include "backend/dims.h"
#include "spmd/dtype.h"

namespace spmd::internal {

using Strides = Dims;

struct ConstView {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  Dims shape;
  Strides strides;  // elements; same length as shape
};

struct MutView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  Dims shape;
  Strides strides;  // elements; same length as shape
};

// Writes the row-major strides of a dense array of `shape` into `strides` (same length). Inline
// and in place: every op's views ask, and a returned SmallVector costs a move.
inline void set_dense_strides(const Dims& shape, Strides& strides) {
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
}

// Row-major strides of a dense array of `shape`.
inline Strides dense_strides(const Dims& shape) {
  Strides strides(shape.size());
  set_dense_strides(shape, strides);
  return strides;
}

// A host scalar used to fill arrays. Integers keep full 64-bit precision.
using Scalar = std::variant<bool, int64_t, double>;

enum class UnaryOp {
  kNeg,         // -x (wraps for ints; for bool: identity is not defined, ops layer rejects)
  kExp,         // floats only
  kLog,         // floats only
  kSqrt,        // floats only
  kTanh,        // floats only
  kAbs,         // any numeric (a complex x gives its real type, see kReal)
  kLogicalNot,  // bool only
  kSign,        // any numeric: -1, 0, 1 (NaN stays NaN)
  kFloor,       // floats only
  kCeil,        // floats only
  kRound,       // floats only, half to even (jnp.round)
  kErfInv,      // floats only, inverse error function
  kSquare,      // x*x
  // Floats only: the math library's function (backend/element_ops.h, library_math).
  kSin,
  kCos,
  kTan,
  kArcsin,
  kArccos,
  kArctan,
  kSinh,
  kCosh,
  kArcsinh,
  kArccosh,
  kArctanh,
  kLog1p,
  kExpm1,
  kLog2,
  kLog10,
  kExp2,
  kErf,
  kCbrt,
  // Complex ops: conj maps complex to complex (the ops layer passes real inputs through);
  // real, imag and angle take a complex x and write its real type (float32 for complex64), as
  // abs does for a complex x.
  kConj,
  kReal,
  kImag,
  kAngle,
};

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,       // floats: IEEE; ints: C++ truncation, x/0 == 0 (ops layer maps jnp.divide to floats)
  kFloorDiv,  // floor(a / b); ints: floor division, x//0 == 0
  kRem,       // Python-style remainder (sign of the divisor); ints: x%0 == 0
  kPow,       // floats: std::pow; ints: repeated squaring, negative exponent -> 0 (1 for base 1)
  kMax,       // NaN-propagating for floats (jnp.maximum); lexicographic for complex
  kMin,       // NaN-propagating for floats (jnp.minimum); lexicographic for complex
  kAnd,       // bool: logical; ints: bitwise
  kOr,        // bool: logical; ints: bitwise
  kXor,       // bool: logical; ints: bitwise
  kAtan2,     // floats only: atan2(a, b)
  kEq,        // comparisons write a bool output
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
};

enum class ReduceOp {
  kSum,  // bool input must be converted by the ops layer; ints wrap; floats accumulate in the
         // dtype's accumulation type (f32 for f16/bf16/f32, f64 for f64), summed pairwise
  kProd,
  kMax,     // NaN-propagating
  kMin,     // NaN-propagating
  kArgMax,  // int32 index of the first maximum (NaN counts as maximum, like numpy)
  kArgMin,
  kAny,  // bool
  kAll,  // bool
};

class Kernels {
 public:
  virtual ~Kernels() = default;

  // dst[i] = convert(src[i]). src has dst's shape (the ops layer broadcasts with 0 strides) and
  // any dtype; conversion rules: to bool is `!= 0`; float->int saturates, NaN -> 0; to f16/bf16
  // rounds to nearest even. dst may be strided here (used for concatenate and slicing writes).
  virtual void copy(const ConstView& src, const MutView& dst) const = 0;

  // dst[i] = value converted to dst.dtype. dst may be strided.
  virtual void fill(const MutView& dst, Scalar value) const = 0;

  // dst (dense, 1-D) = 0, 1, 2, ... in dst.dtype.
  virtual void iota(const MutView& dst) const = 0;

  // y = op(x). x and y have the same shape and dtype (kLogicalNot: both bool; kAbs, kReal, kImag,
  // kAngle of a complex x: y has x's real type).
  virtual void unary(UnaryOp op, const ConstView& x, const MutView& y) const = 0;

  // y = op(a, b). a, b and y have the same shape (a and b pre-broadcast with 0 strides); a and b
  // have the same dtype; y has that dtype, or bool for comparisons.
  virtual void binary(BinaryOp op, const ConstView& a, const ConstView& b,
                      const MutView& y) const = 0;

  // y = cond ? a : b. cond is bool; a, b, y share a dtype; all pre-broadcast to y's shape.
  virtual void select(const ConstView& cond, const ConstView& a, const ConstView& b,
                      const MutView& y) const = 0;

  // Reduces the trailing `num_reduced` dimensions of x. y has shape x.shape[:-num_reduced] and is
  // dense. y.dtype is x.dtype except kArgMax/kArgMin (int32). For kArgMax/kArgMin the trailing
  // dimensions are treated as one flattened dimension (row-major). An empty reduction gives the
  // identity (0 for sum, 1 for prod, -inf/lowest for max, +inf/highest for min); argmax of an
  // empty range is the ops layer's error.
  virtual void reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) const = 0;

  // Batched matrix product: a is [B, M, K], b is [B, K, N] (any strides, batch stride may be 0),
  // c is dense [B, M, N]. All three share a dtype. Integers wrap, exactly, whatever the order;
  // bool: logical or of ands. Floats accumulate in float32 (float16/bfloat16 too, rounded once
  // per result) or float64 in the BLAS's order (above); K == 0 gives +0.
  virtual void matmul(const ConstView& a, const ConstView& b, const MutView& c) const = 0;
};

}  // namespace spmd::internal
