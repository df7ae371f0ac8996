// SPDX-License-Identifier: Apache-2.0
// The CPU backend's reductions (CpuKernels::reduce, cpu_kernels.h).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/element_ops.h"
#include "cpu/cpu_complex_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_loop.h"

namespace spmd::internal {
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

}  // namespace spmd::internal
