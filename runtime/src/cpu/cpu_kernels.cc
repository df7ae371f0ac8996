// SPDX-License-Identifier: Apache-2.0
// The CPU backend's kernels over host memory (cpu_kernels.h): the data movement ones here (copy,
// fill, iota, select); elementwise math in cpu_unary.cc and cpu_binary.cc, reductions in
// cpu_reduce.cc, matrix products in cpu_matmul.cc. One file was 97 s of compiling at -O3; split,
// the build runs the parts side by side (the longest is under half of that).
//
// Each kernel dispatches once on dtype to a template over the element type, elementwise work
// through cpu_loop.h's Loop. Views of complex types go to cpu_complex_kernels.cc, except matmul
// and the bit moves, which treat every type alike.
#include "cpu/cpu_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <variant>

#include "backend/element_ops.h"
#include "cpu/cpu_complex_kernels.h"
#include "cpu/cpu_loop.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace spmd::internal {
namespace {

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

void CpuKernels::select(const ConstView& cond, const ConstView& a, const ConstView& b,
                        const MutView& y) const {
  dispatch_bits(y.dtype, [&]<class U>(std::type_identity<U>) {
    map<U, bool, U, U>([](uint8_t c, U p, U q) { return c ? p : q; }, y, cond, a, b);
  });
}

const Kernels& cpu_kernels() {
  static const CpuKernels kernels;
  return kernels;
}

}  // namespace spmd::internal
