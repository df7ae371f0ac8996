// SPDX-License-Identifier: Apache-2.0
// The CPU backend's kernels over host memory.
//
// Each kernel dispatches once on dtype to a template over the element type, elementwise work
// through cpu_loop.h's Loop. Views of complex types go to cpu_complex_kernels.cc, except matmul
// and the bit moves, which treat every type alike.
#include "cpu/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "backend/element_ops.h"
#include "cpu/cpu_complex_kernels.h"
#include "cpu/cpu_loop.h"
#include "spmd/errors.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace spmd::internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Matrix products. Floats go to BLIS's gemm (float16/bfloat16 widened to float32 and rounded
// once per result); integers and bool keep the exact loop, which wraps like every integer kernel.
// The BLAS is a serial build: each device is a thread already, so gemm runs on the caller's.

// The exact kernel, loop order i, k, j: b is unpacked once per batch (once in all when broadcast)
// into dense compute values, so the inner loop is unit-stride whatever b's layout; each output row
// accumulates in `row` over k in increasing order.
template <class T>
void loop_matmul(const ConstView& a, const ConstView& b, const MutView& c) {
  using C = ComputeOf<T>;
  const int64_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2];
  const auto* const pa = static_cast<const StorageOf<T>*>(a.data);
  const auto* const pb = static_cast<const StorageOf<T>*>(b.data);
  auto* const pc = static_cast<StorageOf<T>*>(c.data);
  std::vector<C> packed(static_cast<size_t>(k * n));
  std::vector<C> row(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    if (bi == 0 || b.strides[0] != 0) {
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int64_t j = 0; j < n; ++j) {
          packed[kk * n + j] =
              load<T>(pb + (bi * b.strides[0] + kk * b.strides[1] + j * b.strides[2]));
        }
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), C{0});
      for (int64_t kk = 0; kk < k; ++kk) {
        const C aik = load<T>(pa + (bi * a.strides[0] + i * a.strides[1] + kk * a.strides[2]));
        const C* const bk = packed.data() + kk * n;
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (std::is_same_v<T, bool>) {
            row[j] |= aik & bk[j];
          } else {
            row[j] = wrap_add(row[j], wrap_mul(aik, bk[j]));
          }
        }
      }
      for (int64_t j = 0; j < n; ++j) store<T>(pc + (bi * m + i) * n + j, row[j]);
    }
  }
}

// BLAS counts dimensions and leading dimensions in f77_int (int32_t in Debian's BLIS); a product
// with a larger dimension takes the loop instead.
using BlasInt = f77_int;

bool fits_blas(int64_t v) { return v <= std::numeric_limits<BlasInt>::max(); }

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, BlasInt m, BlasInt n, BlasInt k, const float* a,
          BlasInt lda, const float* b, BlasInt ldb, float* c) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, BlasInt m, BlasInt n, BlasInt k, const double* a,
          BlasInt lda, const double* b, BlasInt ldb, double* c) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
}
// Complex: CblasTrans transposes without conjugating, as a strided view means.
template <class Z>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, BlasInt m, BlasInt n, BlasInt k, const Z* a,
          BlasInt lda, const Z* b, BlasInt ldb, Z* c) {
  const Z one(1), zero(0);
  if constexpr (std::is_same_v<Z, std::complex<float>>) {
    cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  } else {
    cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  }
}

// A matrix as gemm reads it: row-major (CblasNoTrans) or column-major (CblasTrans), rows (or
// columns) `ld` elements apart.
template <class C>
struct GemmMatrix {
  const C* data;
  CBLAS_TRANSPOSE trans;
  BlasInt ld;
};

// How gemm can read a [rows, cols] matrix of the given strides in place: row-major when columns
// are adjacent and rows at least `cols` apart, column-major the other way round; a dimension of
// size 1 takes any stride. nullopt for the rest (broadcast, negative or interleaved strides).
std::optional<std::pair<CBLAS_TRANSPOSE, BlasInt>> gemm_layout(int64_t rows, int64_t cols,
                                                               int64_t row_stride,
                                                               int64_t col_stride) {
  const auto dense_rows = [](int64_t outer, int64_t inner, int64_t outer_stride,
                             int64_t inner_stride) -> std::optional<BlasInt> {
    const int64_t min_ld = std::max<int64_t>(inner, 1);
    const int64_t ld = outer > 1 ? outer_stride : min_ld;
    if ((inner > 1 && inner_stride != 1) || ld < min_ld || !fits_blas(ld)) return std::nullopt;
    return static_cast<BlasInt>(ld);
  };
  if (const auto ld = dense_rows(rows, cols, row_stride, col_stride)) {
    return std::pair{CblasNoTrans, *ld};
  }
  if (const auto ld = dense_rows(cols, rows, col_stride, row_stride)) {
    return std::pair{CblasTrans, *ld};
  }
  return std::nullopt;
}

// One operand's [rows, cols] matrices, batch item by batch item, as gemm reads them: float32 and
// float64 in place when the strides allow, anything else packed (float16/bfloat16 widened) into a
// dense row-major buffer, once per distinct matrix (a broadcast batch is packed once).
template <class T>
class GemmInput {
 public:
  using C = ComputeOf<T>;

  explicit GemmInput(const ConstView& x)
      : x_(x), rows_(x.shape[1]), cols_(x.shape[2]), in_place_(in_place_layout(x)) {}

  GemmMatrix<C> item(int64_t bi) {
    const auto* const base = static_cast<const StorageOf<T>*>(x_.data) + bi * x_.strides[0];
    if constexpr (std::is_same_v<StorageOf<T>, C>) {
      if (in_place_) return {base, in_place_->first, in_place_->second};
    }
    if (base != packed_from_) pack(base);
    return {packed_.data(), CblasNoTrans, static_cast<BlasInt>(std::max<int64_t>(cols_, 1))};
  }

 private:
  static std::optional<std::pair<CBLAS_TRANSPOSE, BlasInt>> in_place_layout(const ConstView& x) {
    if constexpr (kIsHalf<T>) {
      return std::nullopt;
    } else {
      return gemm_layout(x.shape[1], x.shape[2], x.strides[1], x.strides[2]);
    }
  }

  void pack(const StorageOf<T>* base) {
    packed_.resize(static_cast<size_t>(rows_ * cols_));
    for (int64_t i = 0; i < rows_; ++i) {
      for (int64_t j = 0; j < cols_; ++j) {
        packed_[i * cols_ + j] = load<T>(base + i * x_.strides[1] + j * x_.strides[2]);
      }
    }
    packed_from_ = base;
  }

  const ConstView& x_;
  const int64_t rows_, cols_;
  const std::optional<std::pair<CBLAS_TRANSPOSE, BlasInt>> in_place_;
  std::vector<C> packed_;
  const StorageOf<T>* packed_from_ = nullptr;
};

// c = a @ b per batch item through gemm. A shared b (batch stride 0) with a's batches stacked row
// after row is one product of batch * m rows.
template <class T>
void blas_matmul(ConstView a, const ConstView& b, const MutView& c) {
  using C = ComputeOf<T>;
  int64_t batch = c.shape[0], m = c.shape[1];
  const int64_t n = c.shape[2], k = a.shape[2];
  auto* const pc = static_cast<StorageOf<T>*>(c.data);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(pc, batch * m * n, StorageOf<T>{0});  // +0 in every float format
    return;
  }
  const int64_t row_stride = m == 1 ? a.strides[0] : a.strides[1];
  if (batch > 1 && b.strides[0] == 0 && a.strides[0] == m * row_stride && fits_blas(batch * m)) {
    a.shape = {1, batch * m, k};
    a.strides[1] = row_stride;
    m *= batch;
    batch = 1;
  }
  GemmInput<T> lhs(a), rhs(b);
  std::vector<C> widened(kIsHalf<T> ? static_cast<size_t>(m * n) : 0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const GemmMatrix<C> x = lhs.item(bi), y = rhs.item(bi);
    StorageOf<T>* const out = pc + bi * m * n;
    if constexpr (kIsHalf<T>) {
      gemm(x.trans, y.trans, static_cast<BlasInt>(m), static_cast<BlasInt>(n),
           static_cast<BlasInt>(k), x.data, x.ld, y.data, y.ld, widened.data());
      for (int64_t i = 0; i < m * n; ++i) store<T>(out + i, widened[i]);
    } else {
      gemm(x.trans, y.trans, static_cast<BlasInt>(m), static_cast<BlasInt>(n),
           static_cast<BlasInt>(k), x.data, x.ld, y.data, y.ld, out);
    }
  }
}

// A transpose tile: dst[i * dst_row + j] = block[j][i] for i < ni, j < nj.
template <class U, int64_t kTile>
void transpose_block(const U (&block)[kTile][kTile], int64_t ni, int64_t nj, U* dst,
                     int64_t dst_row) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(U) == 4) {
    // 4 x 4 at a time in registers (shuffles move bits: NaN payloads survive).
    for (; i + 4 <= ni; i += 4) {
      int64_t j = 0;
      for (; j + 4 <= nj; j += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(&block[j][i]));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(&block[j + 1][i]));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(&block[j + 2][i]));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(&block[j + 3][i]));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(dst + i * dst_row + j), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(dst + (i + 1) * dst_row + j), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(dst + (i + 2) * dst_row + j), r2);
        _mm_storeu_ps(reinterpret_cast<float*>(dst + (i + 3) * dst_row + j), r3);
      }
      for (int64_t q = i; q < i + 4; ++q) {
        for (int64_t jj = j; jj < nj; ++jj) dst[q * dst_row + jj] = block[jj][q];
      }
    }
  }
#endif
  for (; i < ni; ++i) {
    for (int64_t j = 0; j < nj; ++j) dst[i * dst_row + j] = block[j][i];
  }
}

// dst[i * dst_row + j] = src[j * src_row + i] for i < rows, j < cols, tile by tile: a tile's src
// rows are copied to a block on the stack, which is transposed into dst's rows. Walking a tile's
// columns in memory instead touches kTile lines a row apart, which with a power-of-two row
// length all fall in one cache set and evict each other (a 1024 x 1024 f32 transpose cost 38
// dense copies; 5 this way, docs/benchmarks.md).
template <class U>
void transpose_plane(U* dst, const U* src, int64_t rows, int64_t cols, int64_t dst_row,
                     int64_t src_row) {
  constexpr int64_t kTile = 32;
  alignas(64) U block[kTile][kTile];
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t ni = std::min(kTile, rows - i0);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t nj = std::min(kTile, cols - j0);
      for (int64_t j = 0; j < nj; ++j) {
        const U* const row = src + (j0 + j) * src_row + i0;
        if (ni == kTile) {  // a constant length: an inline vector copy, not a call
          for (int64_t i = 0; i < kTile; ++i) block[j][i] = row[i];
        } else {
          for (int64_t i = 0; i < ni; ++i) block[j][i] = row[i];
        }
      }
      transpose_block(block, ni, nj, dst + i0 * dst_row + j0, dst_row);
    }
  }
}

}  // namespace

void CpuKernels::copy(const ConstView& src, const MutView& dst) const {
  if (src.dtype == dst.dtype) {
    // Moves bits, so NaN payloads and float16 patterns survive unchanged.
    return dispatch_bits(dst.dtype, [&]<class U>(std::type_identity<U>) {
      auto* const pd = static_cast<U*>(dst.data);
      const auto* const ps = static_cast<const U*>(src.data);
      Loop<2>(dst.shape, {&dst.strides, &src.strides})
          .run_planes([&](int64_t rows, int64_t n, const Offsets<2>& o, const Offsets<2>& r,
                          const Offsets<2>& s) {
            if (s[0] == 1 && s[1] == 1) {
              // memmove: an in-place copy of a view onto itself must not be an overlapping
              // memcpy.
              for (int64_t i = 0; i < rows; ++i) {
                std::memmove(pd + o[0] + i * r[0], ps + o[1] + i * r[1],
                             static_cast<size_t>(n) * sizeof(U));
              }
              return;
            }
            if (s[0] == 1 && r[1] == 1) {
              // dst rows are src columns: a transpose.
              return transpose_plane(pd + o[0], ps + o[1], rows, n, r[0], s[1]);
            }
            // Other strides (reversed, broadcast, strided outputs): square tiles, so that each
            // side reads or writes whole cache lines.
            constexpr int64_t kTile = 32;
            for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
              for (int64_t j0 = 0; j0 < n; j0 += kTile) {
                for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i) {
                  U* const drow = pd + o[0] + i * r[0];
                  const U* const srow = ps + o[1] + i * r[1];
                  for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j) {
                    drow[j * s[0]] = srow[j * s[1]];
                  }
                }
              }
            }
          });
    });
  }
  if (is_complex(src.dtype) || is_complex(dst.dtype)) return complex_copy(src, dst);
  dispatch(src.dtype, [&]<class S>(std::type_identity<S>) {
    dispatch(dst.dtype, [&]<class D>(std::type_identity<D>) {
      map<D, S>([](ComputeOf<S> v) { return convert<D>(v); }, dst, src);
    });
  });
}

void CpuKernels::fill(const MutView& dst, Scalar value) const {
  if (is_complex(dst.dtype)) return complex_fill(dst, value);
  dispatch(dst.dtype, [&]<class T>(std::type_identity<T>) {
    StorageOf<T> bits{};
    // Unary + turns a bool scalar into an int, which every conversion accepts.
    store<T>(&bits, std::visit([](auto v) { return convert<T>(+v); }, value));
    auto* const p = static_cast<StorageOf<T>*>(dst.data);
    Loop<1>(dst.shape, {&dst.strides})
        .run([&](int64_t n, const Offsets<1>& o, const Offsets<1>& s) {
          for (int64_t i = 0; i < n; ++i) p[o[0] + i * s[0]] = bits;
        });
  });
}

void CpuKernels::iota(const MutView& dst) const {
  if (is_complex(dst.dtype)) return complex_iota(dst);
  dispatch(dst.dtype, [&]<class T>(std::type_identity<T>) {
    auto* const p = static_cast<StorageOf<T>*>(dst.data);
    const int64_t n = shape_size(dst.shape);
    for (int64_t i = 0; i < n; ++i) store<T>(p + i, convert<T>(i));
  });
}

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

void CpuKernels::select(const ConstView& cond, const ConstView& a, const ConstView& b,
                        const MutView& y) const {
  dispatch_bits(y.dtype, [&]<class U>(std::type_identity<U>) {
    map<U, bool, U, U>([](uint8_t c, U p, U q) { return c ? p : q; }, y, cond, a, b);
  });
}

namespace {

// The number of outputs of reducing x's trailing `num_reduced` dimensions when those outputs lie
// in x as one unit-stride run (a column sum: sum(x, 0) of a row-major matrix) and y is dense;
// else 0.
int64_t column_outputs(const ConstView& x, int num_reduced, const MutView& y) {
  const size_t split = x.shape.size() - static_cast<size_t>(num_reduced);
  if (split == 0 || num_reduced == 0 || y.shape.size() != split) return 0;
  int64_t n = 1;
  for (size_t d = split; d-- > 0;) {
    if (x.strides[d] != n || y.strides[d] != n) return 0;
    n *= x.shape[d];
  }
  return n;
}

// The most column-sum state a thread keeps between calls (sum_columns).
constexpr size_t kKeptColumnStateBytes = 256 * 1024;

// y[j] = sum over the reduced positions of x[position][j], for outputs that are a unit-stride run
// (column_outputs): row by row, with every output's running state in arrays, so the inner loop
// runs along a row and vectorises instead of walking down each column. Floats repeat
// PairwiseSum's additions in its order (16-element blocks, partial sums combined by level), so
// each output gets the same bits as the per-output fold; integers wrap as theirs do.
template <class T>
void sum_columns(const ConstView& x, int num_reduced, int64_t n, const MutView& y) {
  using C = ComputeOf<T>;
  constexpr int kBlock = PairwiseSum<float>::kBlock;
  const size_t split = x.shape.size() - static_cast<size_t>(num_reduced);
  const Dims rows_shape(x.shape.begin() + split, x.shape.end());
  const Strides rows_strides(x.strides.begin() + split, x.strides.end());
  int64_t rows = 1;
  for (int64_t extent : rows_shape) rows *= extent;
  // block (n), then one array of n partial sums per level a row count this long can reach.
  const int levels = kIsFloat<C> ? std::bit_width(static_cast<uint64_t>(rows / kBlock)) : 0;
  thread_local std::vector<C> state;
  state.assign(static_cast<size_t>(n) * (1 + levels), C{0});
  C* const block = state.data();
  const auto partial = [&](int level) { return block + (level + 1) * n; };
  const auto* const px = static_cast<const StorageOf<T>*>(x.data);
  int block_size = 0;
  uint64_t blocks = 0;
  Loop<1>(rows_shape, {&rows_strides})
      .run([&](int64_t m, const Offsets<1>& o, const Offsets<1>& s) {
        for (int64_t r = 0; r < m; ++r) {
          const StorageOf<T>* row = px + o[0] + r * s[0];
          if constexpr (!kIsFloat<C>) {
            for (int64_t j = 0; j < n; ++j) block[j] = wrap_add(block[j], load<T>(row + j));
            continue;
          } else {
            for (int64_t j = 0; j < n; ++j) block[j] += load<T>(row + j);
            if (++block_size < kBlock) continue;
            int level = 0;
            for (uint64_t b = blocks; b & 1; b >>= 1, ++level) {
              const C* p = partial(level);
              for (int64_t j = 0; j < n; ++j) block[j] = p[j] + block[j];
            }
            std::copy_n(block, n, partial(level));
            std::fill_n(block, n, C{0});
            ++blocks;
            block_size = 0;
          }
        }
      });
  int level = 0;
  for (uint64_t b = blocks; b != 0; b >>= 1, ++level) {
    if (!(b & 1)) continue;
    const C* p = partial(level);
    for (int64_t j = 0; j < n; ++j) block[j] = p[j] + block[j];
  }
  auto* const py = static_cast<StorageOf<T>*>(y.data);
  for (int64_t j = 0; j < n; ++j) store<T>(py + j, block[j]);
  // Kept between calls so that small column sums allocate nothing; a big one's state is freed.
  if (state.capacity() * sizeof(C) > kKeptColumnStateBytes) std::vector<C>().swap(state);
}

}  // namespace

void CpuKernels::reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) const {
  if (is_complex(x.dtype)) return complex_reduce(op, x, num_reduced, y);
  dispatch(x.dtype, [&]<class T>(std::type_identity<T>) {
    using C = ComputeOf<T>;
    const auto fold = [&]<class U>(std::type_identity<U>, auto init, auto step, auto finish) {
      fold_trailing<T, U>(x, num_reduced, y, init, step, finish);
    };
    constexpr std::type_identity<T> kSame{};
    const auto value = [](C s) { return s; };
    const auto index = [](const auto& s) { return static_cast<int32_t>(s.index); };
    switch (op) {
      case ReduceOp::kSum:
        if (const int64_t n = column_outputs(x, num_reduced, y); n > 1) {
          return sum_columns<T>(x, num_reduced, n, y);
        }
        if constexpr (kIsFloat<C>) {
          return fold(
              kSame, [] { return PairwiseSum<C>(); }, [](auto& s, C v) { s.add(v); },
              [](const auto& s) { return s.result(); });
        } else {
          return fold(
              kSame, [] { return C{0}; }, [](C& s, C v) { s = wrap_add(s, v); }, value);
        }
      case ReduceOp::kProd:
        return fold(
            kSame, [] { return C{1}; }, [](C& s, C v) { s = wrap_mul(s, v); }, value);
      case ReduceOp::kMax:
        return fold(
            kSame, [] { return lowest<C>(); }, [](C& s, C v) { s = max_nan(s, v); }, value);
      case ReduceOp::kMin:
        return fold(
            kSame, [] { return highest<C>(); }, [](C& s, C v) { s = min_nan(s, v); }, value);
      case ReduceOp::kArgMax:
        return fold(
            std::type_identity<int32_t>{}, [] { return ArgBest<C, true>(); },
            [](auto& s, C v) { s.add(v); }, index);
      case ReduceOp::kArgMin:
        return fold(
            std::type_identity<int32_t>{}, [] { return ArgBest<C, false>(); },
            [](auto& s, C v) { s.add(v); }, index);
      case ReduceOp::kAny:
        return fold(
            kSame, [] { return C{0}; }, [](C& s, C v) { s = s != 0 || v != 0; }, value);
      case ReduceOp::kAll:
        return fold(
            kSame, [] { return C{1}; }, [](C& s, C v) { s = s != 0 && v != 0; }, value);
    }
    unsupported("reduce", static_cast<int>(op), x.dtype);
  });
}

void CpuKernels::matmul(const ConstView& a, const ConstView& b, const MutView& c) const {
  const auto product = [&]<class T>(std::type_identity<T>) {
    if constexpr (kIsFloat<ComputeOf<T>> || kIsComplex<T>) {
      const bool fits = fits_blas(c.shape[1]) && fits_blas(c.shape[2]) && fits_blas(a.shape[2]);
      if (fits) return blas_matmul<T>(a, b, c);
    }
    loop_matmul<T>(a, b, c);
  };
  is_complex(a.dtype) ? dispatch_complex(a.dtype, product) : dispatch(a.dtype, product);
}

const Kernels& cpu_kernels() {
  static const CpuKernels kernels;
  return kernels;
}

}  // namespace spmd::internal
