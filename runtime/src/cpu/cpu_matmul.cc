// SPDX-License-Identifier: Apache-2.0
// The CPU backend's matrix products (CpuKernels::matmul, cpu_kernels.h).
#include <cblas.h>

#include <algorithm>
#include <complex>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/element_ops.h"
#include "cpu/cpu_kernels.h"

namespace spmd::internal {
namespace {

// Floats go to BLIS's gemm (float16/bfloat16 widened to float32 and rounded
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

}  // namespace

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

}  // namespace spmd::internal
